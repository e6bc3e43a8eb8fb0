//! The access-log entries the HTTP/1.1 loop makes (through `LogEntry::of`, the one builder
//! every protocol uses): for each answered request with the body bytes that left
//! (`log_access`), and for requests the server answered itself before (or instead of) the
//! application: 400, 408, 413, 414, 431 and the like. nginx logs these too; an operator
//! looking for a misbehaving client needs them more than the ordinary ones.
//!
//! When the head could not be parsed, the request line is taken from the bytes received, if
//! they begin with something shaped like one (three printable, space-separated words); else
//! every field is `-`. The host is then the `Host` field among the complete lines received
//! after such a request line, if one is there.

use std::net::SocketAddr;

use super::dispatch::Conn;
use crate::access_log::{version_text, HeadFields, LogEntry};
use crate::error::ProtocolError;
use crate::parse::RequestHead;
use crate::response::{is_bodiless, Response};
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::Transport;

impl<T, H> Conn<'_, T, H>
where
    T: Transport,
    H: Service + ?Sized,
{
    /// Makes the access-log entry of a request whose response was just written (or
    /// buffered), with the body bytes sent, and hands it to the sinks
    /// (`Settings::access_log_sink`, `Settings::access_log`).
    // Cold and out of line: logging is off by default; the request path stays compact.
    #[cold]
    #[inline(never)]
    pub(super) fn log_access(
        &self,
        req: &RequestHead,
        resp: &Response,
        is_head: bool,
        failed: bool,
    ) {
        let status = resp.status();
        let (peer, body_sent) = {
            let mut sh = self.shared.borrow_mut();
            (sh.peer, sh.body_sent.take())
        };
        let bodiless = is_head || is_bodiless(status);
        // After a failed write, only what is known to have left counts.
        let bytes = match body_sent {
            _ if bodiless => 0,
            Some(n) => n,
            None if failed => 0,
            None => resp.body().len().unwrap_or(0),
        };
        let uri = &req.uri;
        let absolute;
        let target = if uri.scheme().is_some() || uri.authority().is_some() {
            absolute = uri.to_string();
            absolute.as_str()
        } else {
            uri.path_and_query().map_or(uri.path(), |pq| pq.as_str())
        };
        let line = (req.method.as_str(), target, version_text(req.version));
        let fields = HeadFields::of(&req.headers, &req.uri);
        let entry = LogEntry::of(peer, line, fields, status.as_u16(), bytes);
        self.settings.log_access(&entry);
    }
}

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
    let line = request_line(pending);
    let fields = HeadFields {
        host: line.and(host_field(pending)),
        ..HeadFields::default()
    };
    let line = line.unwrap_or(("-", "-", "-"));
    let bytes = if is_head { 0 } else { error_body_len(e) };
    let entry = LogEntry::of(peer, line, fields, e.status().as_u16(), bytes);
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
    let target = req
        .uri
        .path_and_query()
        .map_or(req.uri.path(), |pq| pq.as_str());
    let line = (req.method.as_str(), target, version_text(req.version));
    let fields = HeadFields::of(&req.headers, &req.uri);
    let bytes = if is_head { 0 } else { error_body_len(e) };
    let entry = LogEntry::of(peer, line, fields, e.status().as_u16(), bytes);
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

/// The value of the first `Host` field among the complete field lines of `bytes` (a head as
/// received, possibly cut short), within the first [`MAX_LINE`] bytes, if it is printable.
fn host_field(bytes: &[u8]) -> Option<&[u8]> {
    let bytes = &bytes[..bytes.len().min(MAX_LINE)];
    let mut lines = bytes.split(|&b| b == b'\n').skip(1);
    // The last piece has no LF: not a complete line.
    let complete = bytes
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        .saturating_sub(1);
    for line in lines.by_ref().take(complete) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return None;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if line[..colon].eq_ignore_ascii_case(b"host") {
            let value = line[colon + 1..].trim_ascii();
            let printable = value
                .iter()
                .all(|&b| (0x21..0x7f).contains(&b) && b != b'"' && b != b'\\');
            return (printable && !value.is_empty()).then_some(value);
        }
    }
    None
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

    #[test]
    fn host_fields_from_received_bytes() {
        let head = b"POST /a HTTP/1.1\r\nX: 1\r\nhOsT:  a.test:81 \r\nContent-Length: 9\r\n\r\n";
        assert_eq!(host_field(head), Some(&b"a.test:81"[..]));
        // Only complete lines, before the end of the head, printable.
        assert_eq!(host_field(b"GET / HTTP/1.1\r\nHost: a.te"), None);
        assert_eq!(host_field(b"GET / HTTP/1.1\r\n\r\nHost: a\r\n"), None);
        assert_eq!(host_field(b"GET / HTTP/1.1\r\nHost: a\"b\r\n"), None);
        assert_eq!(host_field(b"GET / HTTP/1.1\nHost: b\n\n"), Some(&b"b"[..]));
        assert_eq!(host_field(b"Host: c\r\n"), None);
    }
}
