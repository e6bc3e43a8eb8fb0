//! WebSocket (RFC 6455) from a handler: [`upgrade`] checks the opening handshake and answers
//! `101`, then the connection's fiber owns a [`WebSocket`] with blocking `read`/`send` of
//! messages.
//!
//! The framing is `tungstenite`'s (over the upgraded connection, [`crate::Upgraded`]):
//! fragmentation, control frames between fragments, automatic pongs, the close handshake with
//! codes, UTF-8 validation of text (also across fragments), masking rules and the maximum
//! frame and message sizes (close code 1009 beyond them).
//!
//! ```no_run
//! use fibra_http::{ws, Request, Response, Server};
//!
//! Server::bind("127.0.0.1:8080").run(|req: Request| {
//!     ws::upgrade(&req, ws::WebSocketConfig::default(), |mut socket| {
//!         // Echo text and binary messages until the client closes.
//!         loop {
//!             match socket.read() {
//!                 Ok(msg) if msg.is_text() || msg.is_binary() => {
//!                     if socket.send(msg).is_err() {
//!                         break;
//!                     }
//!                 }
//!                 Ok(_) => {}
//!                 Err(e) => break ws::fail(&mut socket, &e), // 1002, 1007, 1009 on bad input
//!             }
//!         }
//!     })
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Other fibers send through a [`Sender`] ([`split`]): frames they encode go into the
//! connection's [`Outbox`], bounded in bytes, and the connection's fiber ([`Connection::run`])
//! writes them between its reads. A broadcast gives up on a client whose queue stays full
//! ([`Sender::abort`]) instead of letting its memory grow.
//!
//! Not yet here: subprotocol selection, `permessage-deflate`, an idle ping, `1001` at
//! graceful shutdown.

use http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Version};

use crate::{Request, Response, ResponseBody, Upgraded};

pub use tungstenite::protocol::{CloseFrame, WebSocketConfig};
pub use tungstenite::{Error, Message};

use std::io;
use std::time::Duration;

use tungstenite::protocol::frame::coding::{Data, OpCode};
use tungstenite::protocol::frame::Frame;

use crate::outbox::{Outbox, OutboxSender};

/// Sends messages on a WebSocket from any fiber or thread; clones share the connection. The
/// frames are encoded by the caller and queued in the connection's [`Outbox`]; its fiber
/// ([`Connection::run`]) writes them.
#[derive(Clone, Debug)]
pub struct Sender {
    outbox: OutboxSender,
    timeout: Option<Duration>,
}

impl Sender {
    /// Queues `msg` (text, binary, ping, pong). Waits while the connection's queue is full, up
    /// to the send timeout given to [`split`] (then `TimedOut`; a zero timeout never waits);
    /// `BrokenPipe` once the connection has ended.
    pub fn send(&self, msg: Message) -> io::Result<()> {
        let frame = match msg {
            Message::Text(t) => Frame::message(t, OpCode::Data(Data::Text), true),
            Message::Binary(b) => Frame::message(b, OpCode::Data(Data::Binary), true),
            Message::Ping(p) => Frame::ping(p),
            Message::Pong(p) => Frame::pong(p),
            Message::Close(_) | Message::Frame(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a Sender sends data and ping/pong messages; the connection closes itself",
                ))
            }
        };
        let mut bytes = Vec::with_capacity(frame.len());
        frame.format(&mut bytes).map_err(io::Error::other)?;
        self.outbox.send(bytes, self.timeout)
    }

    /// Gives the client up (too slow to keep): what is queued is dropped and the connection
    /// ends at once.
    pub fn abort(&self) {
        self.outbox.abort();
    }

    /// Whether the connection has ended (or was aborted).
    pub fn is_closed(&self) -> bool {
        self.outbox.is_closed()
    }
}

/// The connection's side of a [`split`] WebSocket: [`Connection::run`] in the connection's
/// fiber.
pub struct Connection {
    socket: WebSocket,
    outbox: Outbox,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("outbox", &self.outbox)
            .finish_non_exhaustive()
    }
}

/// Splits `socket` into its [`Connection`] (run it in the connection's fiber) and a
/// [`Sender`] for other fibers. At most `queue_bytes` of frames wait to be written (one frame
/// is always taken); a sender waits up to `send_timeout` for room.
pub fn split(
    socket: WebSocket,
    queue_bytes: usize,
    send_timeout: Option<Duration>,
) -> (Connection, Sender) {
    let (outbox, tx) = Outbox::new(queue_bytes);
    (
        Connection { socket, outbox },
        Sender {
            outbox: tx,
            timeout: send_timeout,
        },
    )
}

impl Connection {
    /// Another sender.
    pub fn sender(&self, send_timeout: Option<Duration>) -> Sender {
        Sender {
            outbox: self.outbox.sender(),
            timeout: send_timeout,
        }
    }

    /// Runs the connection until it ends: hands every text and binary message to
    /// `on_message`, writes what the senders queue (between whole frames), answers pings,
    /// completes the close handshake, and closes with the right code on bad input
    /// ([`fail`]). Returns when the client has closed, the connection failed, or a sender
    /// aborted it; senders then get `BrokenPipe`.
    pub fn run(mut self, mut on_message: impl FnMut(Message)) {
        self.socket.get_mut().set_nonblocking(true);
        loop {
            if self.outbox.is_closed() || self.outbox.flush_to(self.socket.get_mut()).is_err() {
                return;
            }
            match self.socket.read() {
                Ok(msg) if msg.is_text() || msg.is_binary() => on_message(msg),
                // The client closed: send the framing's close reply and end. Nothing may
                // follow our close frame, so what senders still queue is dropped.
                Ok(Message::Close(_)) => {
                    self.outbox.close();
                    let _ = self.socket.flush();
                    return;
                }
                Ok(_) => {}
                Err(Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Pongs and a close reply the framing queued go out before the wait.
                    match self.socket.flush() {
                        Ok(()) => {}
                        Err(Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => return,
                    }
                    let socket = &self.socket;
                    if self
                        .outbox
                        .wait_with(|notify| socket.get_ref().wait_readable_or(notify))
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) => return fail(&mut self.socket, &e),
            }
        }
    }
}

/// A server-side WebSocket over the upgraded connection.
pub type WebSocket = tungstenite::WebSocket<Upgraded>;

/// Ends a connection whose `read` failed on bad input with the close code RFC 6455 gives
/// it (1002 protocol error, 1007 invalid UTF-8 in text, 1009 a frame or message over the
/// limit), best effort; other errors (the peer went away, a closed connection) send nothing.
pub fn fail(socket: &mut WebSocket, err: &Error) {
    use tungstenite::error::{CapacityError, ProtocolError};
    use tungstenite::protocol::frame::coding::CloseCode;
    let (code, reason) = match err {
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake)
        | Error::ConnectionClosed
        | Error::AlreadyClosed
        | Error::Io(_) => return,
        Error::Protocol(_) => (CloseCode::Protocol, "protocol error"),
        Error::Utf8(_) => (CloseCode::Invalid, "invalid UTF-8 in a text message"),
        Error::Capacity(CapacityError::MessageTooLong { .. }) | Error::Capacity(_) => {
            (CloseCode::Size, "message too big")
        }
        _ => (CloseCode::Error, "server error"),
    };
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    if socket.close(Some(frame)).is_ok() {
        let _ = socket.flush();
    }
}

/// Answers a WebSocket opening handshake: `101 Switching Protocols` with the
/// `Sec-WebSocket-Accept` the key calls for, after which `f` runs in the connection's fiber
/// with the [`WebSocket`] (limits from `config`). A request that is not a valid handshake gets
/// `426 Upgrade Required` (no `Upgrade: websocket`, or a version other than 13, with
/// `Sec-WebSocket-Version: 13`) or `400` (not a GET over HTTP/1.1, no `Connection: upgrade`,
/// a key that is not 16 bytes in base64).
pub fn upgrade(
    req: &Request,
    config: WebSocketConfig,
    f: impl FnOnce(WebSocket) + 'static,
) -> Response {
    let key = match check_handshake(req.method(), req.version(), req.headers()) {
        Ok(key) => key,
        Err(resp) => return resp,
    };
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut resp = Response::new(ResponseBody::upgrade(move |io| {
        f(tungstenite::WebSocket::from_raw_socket(
            io,
            tungstenite::protocol::Role::Server,
            Some(config),
        ))
    }));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(
        SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a valid header value"),
    );
    resp
}

/// The `Sec-WebSocket-Key` of a valid opening handshake (RFC 6455 §4.2.1), or the error
/// response.
fn check_handshake(
    method: &Method,
    version: Version,
    headers: &HeaderMap,
) -> Result<String, Response> {
    if !has_token(headers, UPGRADE, "websocket") {
        let mut resp = refusal(StatusCode::UPGRADE_REQUIRED, "WebSocket upgrade required");
        resp.headers_mut()
            .insert(UPGRADE, HeaderValue::from_static("websocket"));
        resp.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("Upgrade"));
        return Err(resp);
    }
    if method != Method::GET || version != Version::HTTP_11 {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "a WebSocket handshake is a GET over HTTP/1.1",
        ));
    }
    if !has_token(headers, CONNECTION, "upgrade") {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "a WebSocket handshake needs Connection: Upgrade",
        ));
    }
    if headers.get(SEC_WEBSOCKET_VERSION).map(|v| v.as_bytes()) != Some(b"13") {
        let mut resp = refusal(
            StatusCode::UPGRADE_REQUIRED,
            "unsupported Sec-WebSocket-Version (13 is)",
        );
        resp.headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return Err(resp);
    }
    let mut keys = headers.get_all(SEC_WEBSOCKET_KEY).iter();
    match (keys.next(), keys.next()) {
        (Some(key), None) if is_key(key.as_bytes()) => {
            Ok(String::from_utf8_lossy(key.as_bytes()).into_owned())
        }
        _ => Err(refusal(
            StatusCode::BAD_REQUEST,
            "Sec-WebSocket-Key must be 16 bytes in base64",
        )),
    }
}

/// Whether a comma-separated header (any of its fields) has `token`, case-insensitively.
fn has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// 16 bytes in base64: 22 characters of the alphabet and `==`.
fn is_key(key: &[u8]) -> bool {
    key.len() == 24
        && key[22..] == *b"=="
        && key[..22]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn refusal(status: StatusCode, why: &'static str) -> Response {
    let mut resp = Response::new(why.into());
    *resp.status_mut() = status;
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    const GOOD: &[(&str, &str)] = &[
        ("upgrade", "websocket"),
        ("connection", "keep-alive, Upgrade"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];

    fn status(method: Method, version: Version, h: &[(&str, &str)]) -> Option<u16> {
        check_handshake(&method, version, &headers(h))
            .err()
            .map(|r| r.status().as_u16())
    }

    #[test]
    fn the_rfc_example_key_is_accepted() {
        let key = check_handshake(&Method::GET, Version::HTTP_11, &headers(GOOD)).unwrap();
        assert_eq!(
            tungstenite::handshake::derive_accept_key(key.as_bytes()),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn bad_handshakes_get_426_or_400() {
        let without = |name: &str| -> Vec<(&str, &str)> {
            GOOD.iter().copied().filter(|(k, _)| *k != name).collect()
        };
        let with = |name: &'static str, value: &'static str| -> Vec<(&'static str, &'static str)> {
            GOOD.iter()
                .copied()
                .map(|(k, v)| if k == name { (k, value) } else { (k, v) })
                .collect()
        };
        let (get, v11) = (Method::GET, Version::HTTP_11);
        assert_eq!(status(get.clone(), v11, &without("upgrade")), Some(426));
        assert_eq!(status(get.clone(), v11, &with("upgrade", "h2c")), Some(426));
        assert_eq!(
            status(get.clone(), v11, &with("sec-websocket-version", "8")),
            Some(426)
        );
        assert_eq!(
            status(get.clone(), v11, &without("sec-websocket-version")),
            Some(426)
        );
        assert_eq!(status(Method::POST, v11, GOOD), Some(400));
        assert_eq!(status(get.clone(), Version::HTTP_10, GOOD), Some(400));
        assert_eq!(status(get.clone(), v11, &without("connection")), Some(400));
        assert_eq!(
            status(get.clone(), v11, &without("sec-websocket-key")),
            Some(400)
        );
        assert_eq!(
            status(get.clone(), v11, &with("sec-websocket-key", "short")),
            Some(400)
        );
        assert_eq!(
            status(
                get.clone(),
                v11,
                &with("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ")
            ),
            Some(400)
        );
        let mut two = GOOD.to_vec();
        two.push(("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="));
        assert_eq!(status(get, v11, &two), Some(400));
    }
}
