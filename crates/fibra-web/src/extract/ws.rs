//! WebSocket: the [`WebSocketUpgrade`] extractor checks the opening handshake, and its
//! [`on_upgrade`](WebSocketUpgrade::on_upgrade) answers `101` and hands the connection,
//! as fibra-http's [`WebSocket`] (blocking `read` and `send` of [`Message`]s), to a closure
//! that runs on the connection's fiber.
//!
//! ```
//! use fibra_web::extract::ws::{Message, WebSocket, WebSocketUpgrade};
//! use fibra_web::response::Response;
//! use fibra_web::routing::get;
//! use fibra_web::Router;
//!
//! fn chat(ws: WebSocketUpgrade) -> Response {
//!     ws.protocols(["chat.v2", "chat.v1"]).on_upgrade(echo)
//! }
//!
//! fn echo(mut socket: WebSocket) {
//!     // Until the client closes (or goes away, or the server shuts down: 1001).
//!     while let Ok(msg) = socket.read() {
//!         if (msg.is_text() || msg.is_binary()) && socket.send(msg).is_err() {
//!             break;
//!         }
//!     }
//! }
//!
//! let app: Router = Router::new().route("/chat", get(chat));
//! ```
//!
//! The socket is fibra-http's (`fibra_http::ws`): pings when idle, the close handshake,
//! `1001` on the server's graceful shutdown, [`split`](fibra_http::ws::split) for sending
//! from other fibers. Its settings (message and frame limits, idle timeout) are a
//! [`Config`], given with [`WebSocketUpgrade::config`].
//!
//! Rejections ([`WebSocketUpgradeRejection`], axum 0.8's statuses and texts): a method
//! other than `GET` (405), no `Connection: upgrade`, no `Upgrade: websocket`, no
//! `Sec-WebSocket-Key`, a `Sec-WebSocket-Version` other than 13 (400), HTTP/1.0 (426).
//! WebSocket over HTTP/2 (RFC 8441's extended `CONNECT`) is not supported: a request over
//! HTTP/2 gets `501 Not Implemented`, and a browser falls back to HTTP/1.1.

use std::borrow::Cow;
use std::fmt;

use fibra_http::http::header::{
    CONNECTION, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use fibra_http::http::{HeaderMap, Method, StatusCode, Version};
use fibra_http::ws::has_token;
use fibra_http::{ws, Body, Request, Response};

pub use fibra_http::ws::{CloseFrame, Config, Error, Message, WebSocket, WebSocketConfig};

use super::{FromRequestParts, Parts};
use crate::response::IntoResponse;

/// The extractor of a WebSocket opening handshake: see the module docs.
#[must_use]
pub struct WebSocketUpgrade {
    /// The handshake's fields, in a request of their own for `fibra_http::ws::upgrade`.
    handshake: Request,
    /// The subprotocol chosen ([`WebSocketUpgrade::protocols`]).
    protocol: Option<String>,
    config: Config,
}

impl WebSocketUpgrade {
    /// Picks the subprotocol: the first of `protocols` (the server's order of preference)
    /// that the client offered, sent back in `Sec-WebSocket-Protocol`; none if the client
    /// offered none of them (the client then decides whether to go on).
    pub fn protocols<I>(mut self, protocols: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Cow<'static, str>>,
    {
        let offered: Vec<&str> = ws::protocols(&self.handshake).collect();
        self.protocol = protocols
            .into_iter()
            .map(Into::into)
            .find(|p| offered.contains(&p.as_ref()))
            .map(Cow::into_owned);
        self
    }

    /// The subprotocols the client offered, in its order.
    pub fn requested_protocols(&self) -> impl Iterator<Item = &str> {
        ws::protocols(&self.handshake)
    }

    /// The subprotocol [`protocols`](Self::protocols) chose.
    pub fn selected_protocol(&self) -> Option<&str> {
        self.protocol.as_deref()
    }

    /// The socket's settings (default: `Config::default()`: tungstenite's limits with 8 KiB
    /// reads, a ping after 60 s without a message). A subprotocol chosen with
    /// [`protocols`](Self::protocols) overrides the config's.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Answers `101 Switching Protocols`; once it is sent, `callback` runs on the
    /// connection's fiber with the socket, for as long as it likes (it may block).
    #[must_use = "the upgrade happens only if this response is returned"]
    pub fn on_upgrade<F>(self, callback: F) -> Response
    where
        F: FnOnce(WebSocket) + 'static,
    {
        let mut config = self.config;
        if let Some(p) = &self.protocol {
            config = config.protocol(Some(p));
        }
        ws::upgrade(&self.handshake, config, callback)
    }
}

impl fmt::Debug for WebSocketUpgrade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketUpgrade")
            .field("protocol", &self.protocol)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<S> FromRequestParts<S> for WebSocketUpgrade {
    type Rejection = WebSocketUpgradeRejection;

    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        let reject = WebSocketUpgradeRejection::new;
        if parts.version() > Version::HTTP_11 {
            return Err(reject(
                StatusCode::NOT_IMPLEMENTED,
                "WebSocket over HTTP/2 is not supported: connect over HTTP/1.1",
            ));
        }
        let headers = parts.headers();
        if parts.method() != Method::GET {
            return Err(reject(
                StatusCode::METHOD_NOT_ALLOWED,
                "Request method must be `GET`",
            ));
        }
        if !has_token(headers, CONNECTION, "upgrade") {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "Connection header did not include 'upgrade'",
            ));
        }
        if !has_token(headers, UPGRADE, "websocket") {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "`Upgrade` header did not include 'websocket'",
            ));
        }
        if !headers.contains_key(SEC_WEBSOCKET_KEY) {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "`Sec-WebSocket-Key` header missing",
            ));
        }
        if headers.get(SEC_WEBSOCKET_VERSION).map(|v| v.as_bytes()) != Some(b"13") {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "`Sec-WebSocket-Version` header did not include '13'",
            ));
        }
        if parts.version() < Version::HTTP_11 {
            return Err(reject(
                StatusCode::UPGRADE_REQUIRED,
                "WebSocket request couldn't be upgraded since no upgrade state was present",
            ));
        }
        Ok(WebSocketUpgrade {
            handshake: handshake_of(headers),
            protocol: None,
            config: Config::default(),
        })
    }
}

/// A `GET` over HTTP/1.1 with the handshake's fields of `headers`.
fn handshake_of(headers: &HeaderMap) -> Request {
    let mut req = Request::new(Body::empty());
    let fields = req.headers_mut();
    for name in [
        UPGRADE,
        CONNECTION,
        SEC_WEBSOCKET_KEY,
        SEC_WEBSOCKET_VERSION,
        SEC_WEBSOCKET_PROTOCOL,
    ] {
        for value in headers.get_all(&name) {
            fields.append(name.clone(), value.clone());
        }
    }
    req
}

/// Why [`WebSocketUpgrade`] refused a request: see the module docs for the statuses.
#[derive(Debug, Clone)]
pub struct WebSocketUpgradeRejection {
    status: StatusCode,
    message: &'static str,
}

impl WebSocketUpgradeRejection {
    fn new(status: StatusCode, message: &'static str) -> Self {
        WebSocketUpgradeRejection { status, message }
    }
    /// The status the rejection answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }
    /// The text of the answer's body.
    pub fn body_text(&self) -> &str {
        self.message
    }
}

impl fmt::Display for WebSocketUpgradeRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message)
    }
}

impl std::error::Error for WebSocketUpgradeRejection {}

impl IntoResponse for WebSocketUpgradeRejection {
    fn into_response(self) -> Response {
        (self.status, self.message).into_response()
    }
}
