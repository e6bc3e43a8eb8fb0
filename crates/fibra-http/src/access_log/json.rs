//! The JSON-lines form of an access-log entry ([`super::AccessLog::open_json`]):
//!
//! ```text
//! {"time":"2026-11-29T01:02:03Z","remote":"127.0.0.1","host":"a.test","method":"GET","target":"/x","version":"HTTP/1.1","status":200,"bytes":151,"referer":null,"user_agent":"curl/8"}
//! ```
//!
//! Untrusted fields are JSON strings: `"`, `\` and control bytes escaped, and bytes that are
//! not UTF-8 written as `\u00HH` (one per byte), so every line is valid JSON and a request
//! cannot forge one.

use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use super::LogEntry;

/// Appends the line of `e` (answered at Unix time `secs`) to `out`.
pub(super) fn line(e: &LogEntry<'_>, secs: u64, out: &mut Vec<u8>) {
    let [year, month, day, hour, minute, second] =
        crate::date::utc_parts(UNIX_EPOCH + Duration::from_secs(secs));
    let _ = write!(
        out,
        "{{\"time\":\"{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z\",\"remote\":"
    );
    match e.peer {
        Some(p) => {
            let _ = write!(out, "\"{}\"", p.ip());
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"host\":");
    string_or_null(e.host, out);
    out.extend_from_slice(b",\"method\":");
    string(e.method.as_bytes(), out);
    out.extend_from_slice(b",\"target\":");
    string(e.target.as_bytes(), out);
    out.extend_from_slice(b",\"version\":");
    string(e.version.as_bytes(), out);
    let _ = write!(out, ",\"status\":{},\"bytes\":{}", e.status, e.bytes);
    out.extend_from_slice(b",\"referer\":");
    string_or_null(e.referer, out);
    out.extend_from_slice(b",\"user_agent\":");
    string_or_null(e.user_agent, out);
    out.extend_from_slice(b"}\n");
}

fn string_or_null(v: Option<&[u8]>, out: &mut Vec<u8>) {
    match v {
        Some(v) => string(v, out),
        None => out.extend_from_slice(b"null"),
    }
}

/// `b` as the JSON escape `\u00HH`.
fn escaped(b: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u00");
    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// `v` as a JSON string.
fn string(v: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for chunk in v.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => escaped(c as u8, out),
                c => {
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        for &b in chunk.invalid() {
            escaped(b, out);
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_whatever_the_request_sent() {
        let e = LogEntry {
            peer: Some("127.0.0.1:50312".parse().unwrap()),
            method: "GET",
            target: "/a\"b\\",
            version: "HTTP/1.1",
            status: 200,
            bytes: 151,
            referer: None,
            user_agent: Some(b"curl/8\n\xff\"x\""),
            host: Some(b"example.test"),
            time: UNIX_EPOCH + Duration::from_secs(971_185_336),
            listener: 0,
        };
        let mut out = Vec::new();
        line(&e, 971_185_336, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\"time\":\"2000-10-10T13:42:16Z\",\"remote\":\"127.0.0.1\",\"host\":\"example.test\",\"method\":\"GET\",\"target\":\"/a\\\"b\\\\\",\"version\":\"HTTP/1.1\",\"status\":200,\"bytes\":151,\"referer\":null,\"user_agent\":\"curl/8\\u000a\\u00ff\\\"x\\\"\"}\n"
        );
    }
}
