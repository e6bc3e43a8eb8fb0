//! Access logging, done by the connection loop — the one place that knows what was actually
//! sent. After each response it hands a [`LogEntry`] to the [`AccessLogSink`] in
//! [`Settings::access_log_sink`](crate::Settings::access_log_sink) (e.g. the buffered
//! combined-format [`AccessLog`]), and, with
//! [`Settings::access_log`](crate::Settings::access_log), writes a short line through the `log`
//! facade ([`LogFacade`]). With neither, the loop does no logging work at all.
//!
//! The entry's `bytes` are the body bytes the loop actually sent: none for `HEAD` and for
//! bodiless statuses (1xx, 204, 304), the bytes written for a streamed body, what a file
//! really held when it was shorter than its range, what had left (to within 1 MiB of a file
//! body) when writing failed. Requests the server refused itself (400, 408, 413, 414, 431)
//! get an entry too, with the request line when one had arrived (else `-`).

use std::fmt;
use std::net::SocketAddr;
use std::time::SystemTime;

mod combined;
mod json;
mod logged;

pub use combined::AccessLog;
pub(crate) use logged::LoggedRequest;

/// One request's worth of log fields.
#[derive(Debug, Clone, Copy)]
pub struct LogEntry<'a> {
    /// Client address (`None` when unknown, e.g. a Unix socket).
    pub peer: Option<SocketAddr>,
    /// Request method.
    pub method: &'a str,
    /// Request target as received.
    pub target: &'a str,
    /// `HTTP/1.1`, `HTTP/1.0`, `HTTP/2.0`, `HTTP/3.0`.
    pub version: &'a str,
    /// Response status code.
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// `Referer` header.
    pub referer: Option<&'a [u8]>,
    /// `User-Agent` header.
    pub user_agent: Option<&'a [u8]>,
    /// The host the client asked for, as it wrote it: the authority of an absolute-form
    /// target or HTTP/2's `:authority`, else the `Host` field (the order of RFC 9112 §3.2.2
    /// and of nginx's `$host`); `None` when the request named none (or was refused before its
    /// fields were read).
    pub host: Option<&'a [u8]>,
    /// When the request was answered.
    pub time: SystemTime,
    /// The server's acceptor the connection came through ([`crate::Settings::listener`]),
    /// which with [`host`](Self::host) tells a sink the site of a server with several.
    pub listener: usize,
}

/// The fields of a request an entry takes from its head: where each protocol keeps them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HeadFields<'a> {
    pub(crate) host: Option<&'a [u8]>,
    pub(crate) referer: Option<&'a [u8]>,
    pub(crate) user_agent: Option<&'a [u8]>,
}

impl<'a> HeadFields<'a> {
    /// From parsed `headers` and the target `uri` (whose authority, when it has one, names
    /// the host rather than the `Host` field).
    pub(crate) fn of(headers: &'a http::HeaderMap, uri: &'a http::Uri) -> HeadFields<'a> {
        let get = |name| headers.get(name).map(http::HeaderValue::as_bytes);
        let authority = uri.authority().map(|a| a.as_str().as_bytes());
        HeadFields {
            host: authority.or_else(|| get(http::header::HOST)),
            referer: get(http::header::REFERER),
            user_agent: get(http::header::USER_AGENT),
        }
    }
}

impl<'a> LogEntry<'a> {
    /// The entry of one answered (or refused) request: what every protocol's loop logs, made
    /// in this one place. `version` is the request line's text (`HTTP/1.1`, …; see
    /// [`version_text`]); the time is now.
    pub(crate) fn of(
        peer: Option<SocketAddr>,
        (method, target, version): (&'a str, &'a str, &'a str),
        fields: HeadFields<'a>,
        status: u16,
        bytes: u64,
    ) -> LogEntry<'a> {
        LogEntry {
            peer,
            method,
            target,
            version,
            status,
            bytes,
            referer: fields.referer,
            user_agent: fields.user_agent,
            host: fields.host,
            time: SystemTime::now(),
            listener: 0,
        }
    }
}

/// How a request's version is written in a log line.
pub(crate) fn version_text(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// Where the connection loop sends one [`LogEntry`] per answered request. It runs on the
/// connection's fiber right after the response was written (or buffered), so it should be
/// quick: buffer, and write out elsewhere ([`AccessLog`] does).
pub trait AccessLogSink: Send + Sync + 'static {
    /// Records one request.
    fn log(&self, entry: &LogEntry<'_>);
}

impl fmt::Debug for dyn AccessLogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessLogSink")
    }
}

/// The sink behind [`Settings::access_log`](crate::Settings::access_log): one line per request
/// through the `log` facade, target `fibra_http::access`, level info:
/// `127.0.0.1:50312 "GET /a?q=1 HTTP/1.1" 200`.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogFacade;

impl AccessLogSink for LogFacade {
    fn log(&self, e: &LogEntry<'_>) {
        log::info!(
            target: "fibra_http::access",
            "{} \"{} {} {}\" {}",
            e.peer.map(|p| p.to_string()).unwrap_or_default(),
            e.method,
            e.target,
            e.version,
            e.status
        );
    }
}
