//! WebSocket (RFC 6455) from a handler: [`upgrade`] checks the opening handshake and answers
//! `101`, then the connection's fiber owns a [`WebSocket`] with blocking `read`/`send` of
//! messages.
//!
//! The framing is `tungstenite`'s (over the upgraded connection, [`crate::Upgraded`]):
//! fragmentation, control frames between fragments, automatic pongs, the close handshake with
//! codes, UTF-8 validation of text (also across fragments), masking rules and the maximum
//! frame and message sizes (close code 1009 beyond them). This module adds what a server
//! needs around it ([`Config`]):
//!
//! - **subprotocols**: the handler picks one of the client's [`protocols`], or none;
//! - **idle timeout with ping**: after [`Config::idle_timeout`] without a message from the
//!   peer, [`WebSocket::read`] sends a ping; a peer that sends nothing within
//!   [`Config::ping_timeout`] is closed (`1001`, and the read fails with `TimedOut`);
//! - **graceful shutdown**: when the [`crate::Server`] shuts down, a `read` waiting for input
//!   sends a close with `1001` and reads on for the peer's answer (the end of the server's
//!   grace period force-closes what is left).
//!
//! ```no_run
//! use fibra_http::{ws, Request, Response, Server};
//!
//! Server::bind("127.0.0.1:8080").run(|req: Request| {
//!     // Speak "chat.v2" if the client offers it.
//!     let protocol = ws::protocols(&req).find(|p| *p == "chat.v2");
//!     let config = ws::Config::default().protocol(protocol);
//!     ws::upgrade(&req, config, |mut socket| {
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
//! connection's [`crate::Outbox`], bounded in bytes, and the connection's fiber
//! ([`Connection::run`]) writes them between its reads. A broadcast gives up on a client whose
//! queue stays full ([`Sender::abort`]) instead of letting its memory grow.
//!
//! Not here: `permessage-deflate`.

// The methods return tungstenite's `Error` (136 bytes) as tungstenite's own do: callers match
// on its variants, and a read or send costs far more than moving it.
#![allow(clippy::result_large_err)]

mod handshake;
mod split;

pub use handshake::{has_token, protocols, upgrade};
pub use split::{split, Connection, Sender};
pub use tungstenite::protocol::{CloseFrame, WebSocketConfig};
pub use tungstenite::{Error, Message};

use std::io;
use std::time::Duration;

use tungstenite::protocol::frame::coding::CloseCode;

use crate::upgraded::Upgraded;

/// How [`upgrade`] sets up a WebSocket: the framing's limits, the idle timeout and ping, and
/// the subprotocol. A [`WebSocketConfig`] converts into one with the defaults for the rest.
#[derive(Debug, Clone)]
pub struct Config {
    frames: WebSocketConfig,
    idle_timeout: Option<Duration>,
    ping_timeout: Duration,
    protocol: Option<String>,
}

/// The framing's configuration [`Config`] starts from: tungstenite's defaults (16 MiB
/// frames, 64 MiB messages, no write buffer limit) but reads of at most 8 KiB
/// ([`READ_BUFFER_SIZE`]) instead of 128 KiB.
pub fn default_frames() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER_SIZE)
}

/// The read buffer of [`default_frames`]. tungstenite allocates it per connection and
/// zero-fills that much before every read: at its default of 128 KiB the fill was 23% of
/// the server's CPU time for 64-byte echoes (and 128 KiB a connection).
pub const READ_BUFFER_SIZE: usize = 8 << 10;

impl Default for Config {
    /// [`default_frames`], a ping after 60 s without a message and 30 s for the answer, no
    /// subprotocol.
    fn default() -> Config {
        Config {
            frames: default_frames(),
            idle_timeout: Some(Duration::from_secs(60)),
            ping_timeout: Duration::from_secs(30),
            protocol: None,
        }
    }
}

impl From<WebSocketConfig> for Config {
    fn from(frames: WebSocketConfig) -> Config {
        Config::default().frames(frames)
    }
}

impl Config {
    /// The framing's configuration: maximum frame and message sizes, buffer sizes (start
    /// from [`default_frames`] rather than `WebSocketConfig::default()`, see
    /// [`READ_BUFFER_SIZE`]).
    pub fn frames(mut self, frames: WebSocketConfig) -> Config {
        self.frames = frames;
        self
    }

    /// After this long without a message from the peer, send a ping (`None`: never). The
    /// wait counts from the last message (pongs and pings included) the socket read.
    pub fn idle_timeout(mut self, idle: Option<Duration>) -> Config {
        self.idle_timeout = idle;
        self
    }

    /// How long a peer that was pinged has to send something (a pong, or any message) before
    /// the connection is closed with `1001`.
    pub fn ping_timeout(mut self, timeout: Duration) -> Config {
        self.ping_timeout = timeout;
        self
    }

    /// The subprotocol to speak, one of those the client offered ([`protocols`]), sent back
    /// in `Sec-WebSocket-Protocol`; `None` (the default): none. A protocol the client did not
    /// offer makes [`upgrade`] answer `500` (the handler's mistake).
    pub fn protocol(mut self, protocol: Option<&str>) -> Config {
        self.protocol = protocol.map(str::to_owned);
        self
    }
}

/// A server-side WebSocket over the upgraded connection: [`read`](WebSocket::read) and
/// [`send`](WebSocket::send) messages, from the connection's fiber. See the module docs for
/// what `read` does besides reading.
pub struct WebSocket {
    inner: tungstenite::WebSocket<Upgraded>,
    keepalive: KeepAlive,
    protocol: Option<String>,
    /// A close of ours (1001: the server's shutdown, or a peer silent after a ping) went
    /// out: no more frames may follow it (a split connection drops what senders queue).
    said_goodbye: bool,
}

impl std::fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocket")
            .field("protocol", &self.protocol)
            .field("pinged", &self.keepalive.pinged)
            .finish_non_exhaustive()
    }
}

/// The idle timeout's state.
#[derive(Debug, Clone, Copy)]
struct KeepAlive {
    idle: Option<Duration>,
    answer: Duration,
    /// A ping went out and nothing has come since.
    pinged: bool,
}

impl KeepAlive {
    /// How long the next wait for input may last (`None`: no bound).
    fn wait(&self) -> Option<Duration> {
        self.idle
            .map(|idle| if self.pinged { self.answer } else { idle })
    }
}

impl WebSocket {
    fn new(io: Upgraded, config: Config) -> WebSocket {
        let keepalive = KeepAlive {
            idle: config.idle_timeout,
            answer: config.ping_timeout,
            pinged: false,
        };
        let _ = io.set_read_timeout(keepalive.wait());
        WebSocket {
            inner: tungstenite::WebSocket::from_raw_socket(
                io,
                tungstenite::protocol::Role::Server,
                Some(config.frames),
            ),
            keepalive,
            protocol: config.protocol,
            said_goodbye: false,
        }
    }

    /// Reads the next message (text, binary, ping, pong or the peer's close; pings are
    /// answered by themselves). After the close handshake it fails with
    /// [`Error::ConnectionClosed`]; on bad input with the error [`fail`] turns into a close
    /// code. Meanwhile it keeps the connection alive (a ping when idle; `TimedOut` when the
    /// peer does not answer) and answers the server's shutdown with `1001`.
    pub fn read(&mut self) -> Result<Message, Error> {
        loop {
            match self.inner.read() {
                Ok(msg) => {
                    self.heard();
                    return Ok(msg);
                }
                Err(Error::Io(e)) => self.after_io_error(e)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// The peer sent a message: it is alive.
    fn heard(&mut self) {
        if self.keepalive.pinged {
            self.keepalive.pinged = false;
            let _ = self.inner.get_ref().set_read_timeout(self.keepalive.wait());
        }
    }

    /// What a read that failed with `e` leads to: `Ok` to read on (a close sent for the
    /// server's shutdown, a ping sent to an idle peer), else the error to return.
    fn after_io_error(&mut self, e: io::Error) -> Result<(), Error> {
        if self.going_away_now() {
            return self.goodbye(CloseCode::Away, "server shutting down");
        }
        if e.kind() != io::ErrorKind::TimedOut || self.keepalive.idle.is_none() {
            return Err(Error::Io(e));
        }
        self.on_idle()
    }

    /// True once, when the server has begun shutting down: say goodbye (1001).
    fn going_away_now(&mut self) -> bool {
        if self.said_goodbye || !self.inner.get_ref().is_going_away() {
            return false;
        }
        self.said_goodbye = true;
        true
    }

    /// The wait for input ran out: ping the peer (`Ok`: wait for its answer), or, when it
    /// was pinged already, close and fail with `TimedOut`.
    fn on_idle(&mut self) -> Result<(), Error> {
        if !self.keepalive.pinged {
            self.keepalive.pinged = true;
            let _ = self.inner.get_ref().set_read_timeout(self.keepalive.wait());
            return self.inner.send(Message::Ping(Default::default()));
        }
        // Best effort: a peer that sends nothing may read nothing either.
        self.said_goodbye = true;
        let _ = self.goodbye(CloseCode::Away, "no answer to ping");
        Err(Error::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "WebSocket peer silent for {:?} after a ping",
                self.keepalive.answer
            ),
        )))
    }

    /// Sends a close frame with `code` (reading on completes the handshake).
    fn goodbye(&mut self, code: CloseCode, reason: &'static str) -> Result<(), Error> {
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        self.inner.close(Some(frame))
    }

    /// Sends `msg` and flushes it.
    pub fn send(&mut self, msg: Message) -> Result<(), Error> {
        self.inner.send(msg)
    }

    /// Queues `msg` in the write buffer (written once it fills, or by
    /// [`flush`](WebSocket::flush)).
    pub fn write(&mut self, msg: Message) -> Result<(), Error> {
        self.inner.write(msg)
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.inner.flush()
    }

    /// Starts the close handshake (`None`: a close frame without a code); read on until
    /// [`Error::ConnectionClosed`] to complete it.
    pub fn close(&mut self, frame: Option<CloseFrame>) -> Result<(), Error> {
        self.inner.close(frame)
    }

    /// The subprotocol agreed in the handshake ([`Config::protocol`]).
    pub fn protocol(&self) -> Option<&str> {
        self.protocol.as_deref()
    }

    /// The upgraded connection.
    pub fn get_ref(&self) -> &Upgraded {
        self.inner.get_ref()
    }

    /// The upgraded connection (writing to it directly breaks the framing).
    pub fn get_mut(&mut self) -> &mut Upgraded {
        self.inner.get_mut()
    }
}

/// Ends a connection whose `read` failed on bad input with the close code RFC 6455 gives
/// it (1002 protocol error, 1007 invalid UTF-8 in text, 1009 a frame or message over the
/// limit), best effort; other errors (the peer went away, a closed connection) send nothing.
pub fn fail(socket: &mut WebSocket, err: &Error) {
    use tungstenite::error::ProtocolError;
    let (code, reason) = match err {
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake)
        | Error::ConnectionClosed
        | Error::AlreadyClosed
        | Error::Io(_) => return,
        Error::Protocol(_) => (CloseCode::Protocol, "protocol error"),
        Error::Utf8(_) => (CloseCode::Invalid, "invalid UTF-8 in a text message"),
        Error::Capacity(_) => (CloseCode::Size, "message too big"),
        _ => (CloseCode::Error, "server error"),
    };
    let _ = socket.goodbye(code, reason);
}
