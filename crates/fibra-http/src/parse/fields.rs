//! The RFC 9112 rules for a request's header fields (§3.2, §5, §6): which fields frame the
//! body and how (`Content-Length`, `Transfer-Encoding`), `Host`'s syntax, and the token and
//! whitespace rules they are written in. `validate_headers` applies them to a parsed head.

use super::*;

/// Applies the framing and field rules and builds the header map.
/// The fields the server itself interprets.
enum Field {
    ContentLength,
    TransferEncoding,
    Host,
    Connection,
    Expect,
    Upgrade,
    Other,
}

/// Which of the server's fields `name` is: one case-insensitive comparison, picked by length.
fn field_kind(name: &[u8]) -> Field {
    let (want, field): (&[u8], _) = match name.len() {
        4 => (b"host", Field::Host),
        6 => (b"expect", Field::Expect),
        7 => (b"upgrade", Field::Upgrade),
        10 => (b"connection", Field::Connection),
        14 => (b"content-length", Field::ContentLength),
        17 => (b"transfer-encoding", Field::TransferEncoding),
        _ => return Field::Other,
    };
    if name.eq_ignore_ascii_case(want) {
        field
    } else {
        Field::Other
    }
}

// Inlined into its one caller: returned through memory, a `Head` costs a copy more.
#[inline(always)]
pub(super) fn validate_headers(
    raw: &[httparse::Header<'_>],
    method: Method,
    uri: Uri,
    version: Version,
    settings: &Settings,
    cache: &mut HeadCache,
) -> Result<Head, ProtocolError> {
    let http11 = version == Version::HTTP_11;
    let mut content_length: Option<u64> = None;
    let mut te_seen = false;
    let mut chunked_last = false;
    let mut hosts = 0usize;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut conn_upgrade = false;
    let mut has_upgrade = false;
    let mut expect_continue = false;
    // The head is filled in place: a recycled one (its map emptied, keeping its arrays) or a
    // new one.
    let mut request = spare_head().unwrap_or_default();
    let made = Rc::make_mut(&mut request);
    let headers = &mut made.headers;
    headers.clear();
    headers.reserve(raw.len());
    for (i, h) in raw.iter().enumerate() {
        let name = h.name.as_bytes();
        if name.is_empty() {
            return Err(ProtocolError::bad("empty header name"));
        }
        // A field identical to the previous request's passed these checks already.
        let cached = cache.fields.get(i).filter(|(n, v)| {
            v.as_bytes() == h.value && n.as_str().as_bytes().eq_ignore_ascii_case(name)
        });
        if cached.is_none() && h.value.iter().any(|&b| b < 0x20 && b != b'\t' || b == 0x7f) {
            return Err(ProtocolError::bad("control byte in header value"));
        }
        match field_kind(name) {
            Field::ContentLength => {
                let n = parse_content_length(h.value)?;
                if content_length.is_some_and(|prev| prev != n) {
                    return Err(ProtocolError::bad("conflicting Content-Length"));
                }
                content_length = Some(n);
            }
            Field::TransferEncoding => {
                if !http11 {
                    return Err(ProtocolError::bad("Transfer-Encoding on HTTP/1.0"));
                }
                for coding in list_items(h.value) {
                    if chunked_last {
                        // anything after `chunked` (including a second `chunked`)
                        return Err(ProtocolError::bad("chunked is not the final coding"));
                    }
                    if coding.eq_ignore_ascii_case(b"chunked") {
                        chunked_last = true;
                    } else if !coding.iter().all(|&b| is_token(b)) {
                        return Err(ProtocolError::bad("invalid transfer coding"));
                    } else {
                        return Err(ProtocolError::new(
                            StatusCode::NOT_IMPLEMENTED,
                            "unsupported transfer coding",
                        ));
                    }
                }
                te_seen = true;
            }
            Field::Host => {
                hosts += 1;
                if cached.is_none() && !valid_host(h.value) {
                    return Err(ProtocolError::bad("invalid Host"));
                }
            }
            Field::Connection => {
                for t in list_items(h.value) {
                    if t.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep_alive = true;
                    } else if t.eq_ignore_ascii_case(b"upgrade") {
                        conn_upgrade = true;
                    }
                }
            }
            Field::Expect => {
                expect_continue = http11 && h.value.eq_ignore_ascii_case(b"100-continue");
            }
            Field::Upgrade => has_upgrade = true,
            Field::Other => {}
        }
        let (name, value) = match cached {
            Some((n, v)) => (n.clone(), v.clone()),
            None => {
                let n = HeaderName::from_bytes(name)
                    .map_err(|_| ProtocolError::bad("invalid header name"))?;
                let v = HeaderValue::from_bytes(h.value)
                    .map_err(|_| ProtocolError::bad("invalid header value"))?;
                if i < cache.fields.len() {
                    cache.fields[i] = (n.clone(), v.clone());
                } else if i == cache.fields.len() && i < STACK_HEADERS {
                    cache.fields.push((n.clone(), v.clone()));
                }
                (n, v)
            }
        };
        headers.append(name, value);
    }
    if http11 && hosts == 0 {
        return Err(ProtocolError::bad("missing Host"));
    }
    if hosts > 1 {
        return Err(ProtocolError::bad("duplicate Host"));
    }
    let body = match (te_seen, content_length) {
        (true, Some(_)) => {
            return Err(ProtocolError::bad(
                "both Transfer-Encoding and Content-Length",
            ))
        }
        (true, None) if chunked_last => BodyKind::Chunked,
        (true, None) => return Err(ProtocolError::bad("empty Transfer-Encoding")),
        (false, Some(0)) | (false, None) => BodyKind::Empty,
        (false, Some(n)) if n > settings.max_body_bytes => {
            return Err(ProtocolError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body too large",
            ))
        }
        (false, Some(n)) => BodyKind::Length(n),
    };
    let keep_alive = if http11 {
        !conn_close
    } else {
        conn_keep_alive && !conn_close
    };
    let made = Rc::make_mut(&mut request);
    made.method = method;
    made.uri = uri;
    made.version = version;
    Ok(Head {
        request,
        body,
        keep_alive,
        expect_continue: expect_continue && body != BodyKind::Empty,
        upgrade: conn_upgrade && has_upgrade,
    })
}

/// `Content-Length = 1*DIGIT`; a list of identical values (`5, 5`) is accepted as RFC 9110
/// §8.6 allows, anything else (signs, blanks, `_`, differing values, overflow) is 400.
fn parse_content_length(value: &[u8]) -> Result<u64, ProtocolError> {
    let bad = || ProtocolError::bad("invalid Content-Length");
    let mut result: Option<u64> = None;
    let mut any = false;
    for item in value.split(|&b| b == b',') {
        let item = trim_ows(item);
        if item.is_empty() || item.len() > 19 || !item.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        let n = item
            .iter()
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        if result.is_some_and(|p| p != n) {
            return Err(ProtocolError::bad("conflicting Content-Length"));
        }
        result = Some(n);
        any = true;
    }
    if !any {
        return Err(bad());
    }
    result.ok_or_else(bad)
}

/// Non-empty elements of a comma-separated list, trimmed of optional whitespace.
fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|s| !s.is_empty())
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// RFC 9110 `tchar`.
pub(crate) fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `Host = uri-host [ ":" port ]`; empty is allowed (RFC 9110 §7.2), userinfo is not.
pub(super) fn valid_host(value: &[u8]) -> bool {
    if value.is_empty() {
        return true;
    }
    // Checked byte by byte (RFC 3986 §3.2.2): parsing it into an `Authority` cost more than
    // the rest of the head together.
    let (host_ok, port) = if value[0] == b'[' {
        let Some(end) = memchr::memchr(b']', value) else {
            return false;
        };
        let literal = &value[1..end];
        let ok = !literal.is_empty()
            && literal
                .iter()
                .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        match &value[end + 1..] {
            [] => (ok, &[][..]),
            [b':', port @ ..] => (ok, port),
            _ => return false,
        }
    } else {
        let (host, port) = match memchr::memrchr(b':', value) {
            Some(i) => (&value[..i], &value[i + 1..]),
            None => (value, &[][..]),
        };
        (!host.is_empty() && valid_reg_name(host), port)
    };
    host_ok && port.iter().all(u8::is_ascii_digit)
}

/// `reg-name = *( unreserved / pct-encoded / sub-delims )` (an IPv4 address is one too).
fn valid_reg_name(host: &[u8]) -> bool {
    let mut i = 0;
    while i < host.len() {
        match host[i] {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {}
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {}
            b'%' => {
                if !host
                    .get(i + 1..i + 3)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                {
                    return false;
                }
                i += 2;
            }
            _ => return false,
        }
        i += 1;
    }
    true
}
