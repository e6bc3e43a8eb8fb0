//! Every knob of the HTTP server in one record, each with its default (Warp's `Settings.hs`).
//!
//! The defaults follow nginx and hyper: generous enough for browsers and API clients, tight
//! enough that a slow or hostile client cannot hold a connection or memory for long. Also here:
//! the `on_error` hook (Warp's `settingsOnException`) and the [`ServerError`] it is handed.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::access_log::AccessLogSink;
use crate::error::ProtocolError;

/// Server settings. Build with [`Settings::default()`] and change the fields you need, or use
/// the setters on [`crate::Server`].
#[derive(Debug, Clone)]
pub struct Settings {
    /// Total deadline for receiving a complete request head, counted from the first byte of the
    /// request (or from accept, for the first request of a connection). Defends against
    /// slowloris. A partial head still incomplete at the deadline gets `408` and the connection
    /// is closed. Default: 10 s.
    pub header_timeout: Duration,
    /// Longest wait for the next bytes of a request body; on expiry the body read fails with
    /// `TimedOut` and the connection answers `408` and closes. Default: 30 s.
    pub body_read_timeout: Duration,
    /// How long a keep-alive connection may sit idle between requests before it is closed
    /// (silently). Default: 60 s.
    pub idle_timeout: Duration,
    /// Longest time a single write to the client may block; on expiry the connection is
    /// closed. Default: 30 s.
    pub write_timeout: Duration,
    /// Largest request head (request line + headers + blank line) accepted. Bigger: `431`
    /// (or `414` if the request line alone does not fit). Also the largest chunked-body trailer
    /// section. Default: 16 KiB.
    pub max_head_bytes: usize,
    /// Longest request target (the URI in the request line). Longer: `414`. Default: 8 KiB.
    pub max_target_bytes: usize,
    /// Most header fields in one request. More: `431`. Default: 100.
    pub max_headers: usize,
    /// Largest request body. A bigger `Content-Length` gets `413` before the handler runs; a
    /// chunked body that grows past it fails the body read and the connection answers `413`.
    /// Default: 8 MiB.
    pub max_body_bytes: u64,
    /// How many bytes of a body the handler did not read are read and thrown away so the
    /// connection can be kept alive; a bigger unread rest closes the connection instead.
    /// Default: 256 KiB (Go's `net/http` figure).
    pub max_drain_bytes: u64,
    /// Most connections served at once (over all workers). Beyond it, new connections wait in
    /// the kernel's listen backlog. Default: 10,000.
    pub max_connections: usize,
    /// Whether connections are kept alive between requests. When false every response carries
    /// `Connection: close`. Default: true.
    pub keep_alive: bool,
    /// Value of the `Server` response header, or `None` to send none. Default: `None`.
    pub server_header: Option<String>,
    /// An `Alt-Svc` value (RFC 7838) added, as `Server` is, to every HTTP/1.1 and HTTP/2
    /// answer of the server's own handler that has none of its own: how a server with
    /// HTTP/3 beside it tells clients where it is (`h3=":443"; ma=86400`). Written by the
    /// connection, it leaves a prepared response (a cached file's) as it is. HTTP/3's own
    /// answers never carry it. Default: `None`.
    pub alt_svc: Option<http::HeaderValue>,
    /// Size of the buffer requests are read into. Connections read into one their worker
    /// lends and keep a buffer of their own only for bytes left over between reads (a
    /// partial head or body) or while their handler blocks. It grows up to `max_head_bytes`
    /// only for a head that does not fit. Default: 4 KiB.
    pub read_buffer_bytes: usize,
    /// Log one line per request through the `log` facade (target `fibra_http::access`, level
    /// info; see [`LogFacade`](crate::access_log::LogFacade)). Default: false.
    pub access_log: bool,
    /// Where the connection loop sends one entry per answered request, with the body bytes
    /// it actually sent (see [`crate::access_log`]); e.g. the combined-format
    /// [`AccessLog`](crate::access_log::AccessLog). Independent of `access_log`. `None` costs the
    /// loop nothing. Default: `None`.
    pub access_log_sink: Option<Arc<dyn AccessLogSink>>,
    /// Called for every handler panic, rejected request and failed `accept` (see
    /// [`ServerError`]), in the fiber where it happened. `None` logs them through the `log`
    /// facade instead: panics at level error, rejected requests at debug, accept failures at
    /// warn (at most once a second). Default: `None`.
    pub on_error: Option<ErrorHook>,
    /// Whether a connection that opens with the HTTP/2 preface (cleartext with prior
    /// knowledge, or TLS after ALPN chose `h2`) is served as HTTP/2 (see [`crate::http2`]).
    /// Applies to [`crate::Server`]'s connections. Default: true.
    pub http2: bool,
    /// Which of the server's acceptors its connections come through: 0 for the main one,
    /// `k` for the `k`-th added with [`crate::Server::also_acceptor`] (or `also_bind`,
    /// `also_tls`). Set by [`crate::Server`] for each acceptor (a value given here is
    /// replaced); what [`crate::Request::listener`] reports, so one service can answer each
    /// listening address differently (virtual hosts per address). Default 0.
    pub listener: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            header_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            max_head_bytes: 16 * 1024,
            max_target_bytes: 8 * 1024,
            max_headers: 100,
            max_body_bytes: 8 * 1024 * 1024,
            max_drain_bytes: 256 * 1024,
            max_connections: 10_000,
            keep_alive: true,
            server_header: None,
            alt_svc: None,
            read_buffer_bytes: 4 * 1024,
            access_log: false,
            access_log_sink: None,
            on_error: None,
            http2: true,
            listener: 0,
        }
    }
}

impl Settings {
    /// Hands `err` to [`on_error`](Self::on_error), or logs it when there is no hook.
    pub(crate) fn report(&self, err: ServerError) {
        match &self.on_error {
            Some(hook) => (hook.0)(&err),
            None => match err.kind {
                ServerErrorKind::Panic(_) => log::error!("{err}"),
                ServerErrorKind::Protocol(_) => log::debug!("{err}"),
                ServerErrorKind::Accept(_) => log::warn!("{err}"),
            },
        }
    }

    /// Reports a request rejected with `e`.
    /// Whether answered requests are logged (a sink, or the `log` facade).
    #[inline]
    pub(crate) fn logs_access(&self) -> bool {
        self.access_log_sink.is_some() || self.access_log
    }

    /// Hands `entry` to the access-log sink and the `log` facade, as configured.
    pub(crate) fn log_access(&self, entry: &crate::access_log::LogEntry<'_>) {
        let entry = &crate::access_log::LogEntry {
            listener: self.listener,
            ..*entry
        };
        if let Some(sink) = &self.access_log_sink {
            sink.log(entry);
        }
        if self.access_log {
            crate::access_log::AccessLogSink::log(&crate::access_log::LogFacade, entry);
        }
    }

    pub(crate) fn report_rejected(&self, peer: Option<SocketAddr>, e: ProtocolError) {
        self.report(ServerError::new(peer, ServerErrorKind::Protocol(e)));
    }

    /// Reports a panic caught from a handler, an upgrade or a streaming body (`on_error`).
    ///
    /// A fiber being cancelled (its runtime dropped) unwinds with `fibra::Cancelled`: that must
    /// not be mistaken for a handler panic, so it is re-raised instead.
    pub(crate) fn report_caught(&self, peer: Option<SocketAddr>, p: Box<dyn std::any::Any + Send>) {
        if p.is::<fibra::Cancelled>() {
            std::panic::resume_unwind(p);
        }
        let message = p
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| p.downcast_ref::<String>().map(|s| s.as_str()))
            .unwrap_or("(non-string panic)");
        self.report_panic(peer, message);
    }

    /// Reports a panic of the handler, its streaming body or its upgrade callback.
    pub(crate) fn report_panic(&self, peer: Option<SocketAddr>, message: &str) {
        self.report(ServerError::new(
            peer,
            ServerErrorKind::Panic(message.to_owned()),
        ));
    }
}

/// The callback in [`Settings::on_error`]. It runs on the server's fibers, so it should be
/// quick and must not panic; to do slow work (I/O to a remote collector), hand the error to a
/// channel.
#[derive(Clone)]
pub struct ErrorHook(Arc<dyn Fn(&ServerError) + Send + Sync>);

impl ErrorHook {
    /// Wraps a callback.
    pub fn new(f: impl Fn(&ServerError) + Send + Sync + 'static) -> Self {
        ErrorHook(Arc::new(f))
    }
}

impl fmt::Debug for ErrorHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErrorHook(..)")
    }
}

/// Something that went wrong while serving, as handed to [`Settings::on_error`]. None of
/// these stop the server: a panic or a rejected request closes only its connection, and the
/// accept loop backs off and retries.
#[derive(Debug)]
pub struct ServerError {
    peer: Option<SocketAddr>,
    kind: ServerErrorKind,
}

/// What kind of [`ServerError`] happened.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerErrorKind {
    /// The handler (or the writer closure of its streaming body, or its upgrade callback)
    /// panicked, with the panic message (`"(non-string panic)"` for other payloads). The
    /// client got a `500` if nothing had been sent yet; the connection is closed.
    Panic(String),
    /// A request was rejected before or while its body was read (malformed, too large, too
    /// slow): the client got the error's status and the connection was closed.
    Protocol(ProtocolError),
    /// `accept` failed with something other than a benign race (e.g. `EMFILE`: out of file
    /// descriptors). The accept loop waits a little and tries again; established connections
    /// are unaffected. The error has no peer.
    Accept(io::Error),
}

impl ServerError {
    /// An error on the connection with `peer` (`None` when not known).
    pub fn new(peer: Option<SocketAddr>, kind: ServerErrorKind) -> Self {
        ServerError { peer, kind }
    }
    /// The client's address, if the error concerns a connection.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }
    /// What went wrong.
    pub fn kind(&self) -> &ServerErrorKind {
        &self.kind
    }
    /// The panic message, if this is a handler panic.
    pub fn panic_message(&self) -> Option<&str> {
        match &self.kind {
            ServerErrorKind::Panic(m) => Some(m),
            _ => None,
        }
    }
    /// The status the request was rejected with, if this is a protocol error.
    pub fn status(&self) -> Option<http::StatusCode> {
        match &self.kind {
            ServerErrorKind::Protocol(e) => Some(e.status()),
            _ => None,
        }
    }
    /// The I/O error, if this is an accept failure.
    pub fn io_error(&self) -> Option<&io::Error> {
        match &self.kind {
            ServerErrorKind::Accept(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.peer {
            write!(f, "{p}: ")?;
        }
        match &self.kind {
            ServerErrorKind::Panic(m) => write!(f, "handler panicked: {m}"),
            ServerErrorKind::Protocol(e) => write!(f, "request rejected: {e}"),
            ServerErrorKind::Accept(e) => write!(f, "accept failed: {e}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ServerErrorKind::Protocol(e) => Some(e),
            ServerErrorKind::Accept(e) => Some(e),
            ServerErrorKind::Panic(_) => None,
        }
    }
}
