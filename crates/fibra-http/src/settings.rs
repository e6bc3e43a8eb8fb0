//! Every knob of the HTTP server in one record, each with its default (Warp's `Settings.hs`).
//!
//! The defaults follow nginx and hyper: generous enough for browsers and API clients, tight
//! enough that a slow or hostile client cannot hold a connection or memory for long.

use std::time::Duration;

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
    /// Initial size of each connection's read buffer; it grows up to `max_head_bytes` only for
    /// a head that does not fit. Default: 4 KiB.
    pub read_buffer_bytes: usize,
    /// Log one line per request through the `log` facade (target `fibra_http::access`, level
    /// info). Default: false.
    pub access_log: bool,
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
            read_buffer_bytes: 4 * 1024,
            access_log: false,
        }
    }
}
