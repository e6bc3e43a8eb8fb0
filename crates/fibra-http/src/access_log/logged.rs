//! [`LoggedRequest`]: what the access log needs of a request, kept while the handler owns
//! the request (HTTP/2's and HTTP/3's stream fibers).

use std::net::SocketAddr;

use http::header::HeaderValue;
use http::{Method, StatusCode};

use super::{HeadFields, LogEntry};

/// A request's method, target and the fields the log shows, copied out of its head.
pub(crate) struct LoggedRequest {
    method: Method,
    target: String,
    host: Option<HeaderValue>,
    referer: Option<HeaderValue>,
    user_agent: Option<HeaderValue>,
}

impl LoggedRequest {
    /// What the log will need of the request `parts`.
    pub(crate) fn of(parts: &http::request::Parts) -> LoggedRequest {
        let uri = &parts.uri;
        let fields = HeadFields::of(&parts.headers, uri);
        let value = |v: Option<&[u8]>| v.and_then(|v| HeaderValue::from_bytes(v).ok());
        LoggedRequest {
            method: parts.method.clone(),
            target: uri
                .path_and_query()
                .map_or(uri.path(), |pq| pq.as_str())
                .to_owned(),
            host: value(fields.host),
            referer: value(fields.referer),
            user_agent: value(fields.user_agent),
        }
    }

    /// The entry of the answered request, handed to `log` (the server's
    /// `Settings::log_access`); `protocol` is the request line's (`"HTTP/2.0"`, `"HTTP/3.0"`).
    pub(crate) fn log(
        &self,
        peer: Option<SocketAddr>,
        protocol: &'static str,
        status: StatusCode,
        bytes: u64,
        log: impl FnOnce(&LogEntry<'_>),
    ) {
        let line = (self.method.as_str(), self.target.as_str(), protocol);
        let fields = HeadFields {
            host: self.host.as_ref().map(HeaderValue::as_bytes),
            referer: self.referer.as_ref().map(HeaderValue::as_bytes),
            user_agent: self.user_agent.as_ref().map(HeaderValue::as_bytes),
        };
        let entry = LogEntry::of(peer, line, fields, status.as_u16(), bytes);
        log(&entry);
    }
}
