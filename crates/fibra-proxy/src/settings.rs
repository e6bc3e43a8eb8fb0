//! The proxy's settings (timeouts, the idle pool's size, forwarding fields, the error hook,
//! upstream TLS) as forwarding reads them, and [`UpstreamError`], what the hook is given.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::route;
use crate::upstream::Timeouts;

/// An upstream failure the proxy answered with 502, 503 or 504 (see
/// [`Proxy::on_error`](crate::Proxy::on_error)).
#[derive(Debug, Clone)]
pub struct UpstreamError {
    /// The upstream, `HOST:PORT` as in its URL; when no upstream of a route's group was up,
    /// all of them, separated by `, `.
    pub upstream: String,
    /// The status answered: 502 or 504; 503 when active health checks found every
    /// upstream of the route down.
    pub status: StatusCode,
    /// What failed, e.g. `connecting: Connection refused (os error 111)`, or `no upstream
    /// is up`.
    pub message: String,
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "upstream {}: {} ({})",
            self.upstream,
            self.message,
            self.status.as_u16()
        )
    }
}

pub(crate) type ErrorHook = Arc<dyn Fn(&UpstreamError) + Send + Sync>;

/// What [`crate::Proxy`]'s builder methods set, apart from the routes.
pub(crate) struct Settings {
    pub(crate) timeouts: Timeouts,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_idle: usize,
    pub(crate) proto: String,
    pub(crate) trust_forwarded: bool,
    pub(crate) on_error: Option<ErrorHook>,
    /// The first and the longest wait before a down upstream is dialled again.
    pub(crate) redial: (Duration, Duration),
    /// For `https://` upstreams (set by the first such route, if not before).
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
}

impl Default for Settings {
    /// Connect timeout 10 s, read and write timeouts 60 s, 64 idle connections per upstream
    /// and worker kept for 60 s, `http`, forwarding fields replaced (see `Proxy::new`).
    fn default() -> Settings {
        Settings {
            timeouts: Timeouts {
                connect: Duration::from_secs(10),
                read: Duration::from_secs(60),
                write: Duration::from_secs(60),
            },
            idle_timeout: Duration::from_secs(60),
            max_idle: 64,
            proto: "http".into(),
            trust_forwarded: false,
            on_error: None,
            redial: (route::REDIAL_FIRST, route::REDIAL_MAX),
            tls: None,
        }
    }
}
