//! Access-log entries for requests the server answered itself before (or instead of) the
//! application: 400, 408, 413, 414, 431 and the like. nginx logs these too; an operator
//! looking for a misbehaving client needs them more than the ordinary ones.
//!
//! When the head could not be parsed, the request line is taken from the bytes received, if
//! they begin with something shaped like one (three printable, space-separated words); else
//! every field is `-`.

use std::net::SocketAddr;
use std::time::SystemTime;

use crate::access_log::LogEntry;
use crate::error::ProtocolError;
use crate::parse::RequestHead;
use crate::settings::Settings;

/// Longest request line taken from the received bytes (the default head limit).
const MAX_LINE: usize = 16 * 1024;

/// Logs the rejection `e` of the request whose bytes begin `pending` (possibly incomplete),
/// answered with a body of `bytes` bytes.
#[cold]
#[inline(never)]
pub(super) fn log_rejected(
    settings: &Settings,
    peer: Option<SocketAddr>,
    pending: &[u8],
    e: &ProtocolError,
    is_head: bool,
) {
    if !settings.logs_access() {
        return;
    }
    let (method, target, version) = request_line(pending).unwrap_or(("-", "-", "-"));
    let entry = LogEntry {
        peer,
        method,
        target,
        version,
        status: e.status().as_u16(),
        bytes: if is_head { 0 } else { error_body_len(e) },
        referer: None,
        user_agent: None,
        time: SystemTime::now(),
    };
    settings.log_access(&entry);
}

/// Logs the rejection `e` of the parsed request `req` (its body was refused: 413, a bad
/// chunk, a body timeout), answered with the error body.
#[cold]
#[inline(never)]
pub(super) fn log_rejected_request(
    settings: &Settings,
    peer: Option<SocketAddr>,
    req: &RequestHead,
    e: &ProtocolError,
    is_head: bool,
) {
    let header = |name| {
        req.headers
            .get(name)
            .map(|v: &http::HeaderValue| v.as_bytes())
    };
    let entry = LogEntry {
        peer,
        method: req.method.as_str(),
        target: req
            .uri
            .path_and_query()
            .map_or(req.uri.path(), |pq| pq.as_str()),
        version: if req.version == http::Version::HTTP_10 {
            "HTTP/1.0"
        } else {
            "HTTP/1.1"
        },
        status: e.status().as_u16(),
        bytes: if is_head { 0 } else { error_body_len(e) },
        referer: header(http::header::REFERER),
        user_agent: header(http::header::USER_AGENT),
        time: SystemTime::now(),
    };
    settings.log_access(&entry);
}

/// The length of the body `put_error` writes for `e`.
fn error_body_len(e: &ProtocolError) -> u64 {
    e.reason().len() as u64 + 1
}

/// The method, target and version of the request line at the start of `bytes`, if there is
/// a plausible one (printable ASCII, three words, within [`MAX_LINE`] bytes; the line need
/// not be complete when the version is there).
fn request_line(bytes: &[u8]) -> Option<(&str, &str, &str)> {
    let bytes = &bytes[..bytes.len().min(MAX_LINE)];
    let end = bytes
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(bytes.len());
    let line = std::str::from_utf8(&bytes[..end]).ok()?;
    // Printable, and nothing a log line quotes or escapes with.
    if !line
        .bytes()
        .all(|b| ((0x21..0x7f).contains(&b) && b != b'"' && b != b'\\') || b == b' ')
    {
        return None;
    }
    let mut words = line.split(' ');
    let (m, t, v) = (words.next()?, words.next()?, words.next()?);
    if words.next().is_some() || m.is_empty() || t.is_empty() || !v.starts_with("HTTP/") {
        return None;
    }
    Some((m, t, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_from_received_bytes() {
        assert_eq!(
            request_line(b"GET /a?b HTTP/1.1\r\nHost: x\r\n"),
            Some(("GET", "/a?b", "HTTP/1.1"))
        );
        assert_eq!(
            request_line(b"GET /x HTTP/1.1"),
            Some(("GET", "/x", "HTTP/1.1"))
        );
        assert_eq!(request_line(b"GET /x\r\n"), None);
        assert_eq!(request_line(b"\x16\x03\x01\x02\x00"), None);
        assert_eq!(request_line(b"GET /a\"b HTTP/1.1\r\n"), None);
        assert_eq!(request_line(b"GET /a HTTP/1.1 x\r\n"), None);
        assert_eq!(request_line(b"GET /\xff HTTP/1.1\r\n"), None);
        assert_eq!(request_line(b""), None);
    }
}
