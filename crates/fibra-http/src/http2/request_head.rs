//! A request's header block as the handler sees it: HPACK-decoded fields checked against
//! RFC 9113 §8.2–8.3 (pseudo-header fields first, once each, the request ones only; no
//! connection-specific fields; `te` only `trailers`; lower-case names) and made into
//! [`http::request::Parts`] as an HTTP/1.1 request would be: the target in origin form
//! (`:path`), the host in `Host` (`:authority`, RFC 9113 §8.3.1; a `Host` that differs
//! from it makes the request malformed).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri, Version};

use super::hpack::{Decoder, HpackError, Name, Pseudo, Value};
use crate::target_bytes::target_bytes;

/// What a decoded request block turned out to be.
pub(super) enum Decoded {
    /// A well-formed request head and its declared body length.
    Request(Box<http::request::Parts>, Option<u64>),
    /// Malformed (RFC 9113 §8.1.1): the stream is reset with PROTOCOL_ERROR.
    Malformed,
    /// The field list is larger than the limit: answered 431.
    TooLarge,
}

/// The overhead RFC 7541 §4.1 counts per field, which `SETTINGS_MAX_HEADER_LIST_SIZE` uses.
const FIELD_OVERHEAD: usize = 32;

/// Decodes a request's header block; an HPACK error is the connection's (COMPRESSION_ERROR).
pub(super) fn decode_request(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
    last_target: &mut LastTarget,
) -> Result<Decoded, HpackError> {
    let mut head = Head::default();
    decoder.decode(block, |name, value| {
        head.field(name, value, max_list, last_target)
    })?;
    Ok(head.finish())
}

/// Decodes a request's header block as [`decode_request`] does, or takes the request from
/// `last` when the block is byte for byte the one before it and the dynamic table has not
/// changed since (then the block decodes to the same fields: it cannot have changed the
/// table, or the table would differ). As HTTP/1.1's head cache, a block is kept the first
/// time, its request the second, and served from there on: a client repeating a request
/// (polling, a benchmark) skips the decoding and the checks.
pub(super) fn decode_request_cached(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
    last_target: &mut LastTarget,
    last: &mut LastHead,
) -> Result<Decoded, HpackError> {
    let before = decoder.table_changes();
    let same = last.changes == before && last.block == block;
    if same {
        if let Some((head, content_length)) = &last.request {
            return Ok(Decoded::Request(Box::new(head.copy()), *content_length));
        }
    }
    let decoded = decode_request(decoder, block, max_list, last_target)?;
    if decoder.table_changes() == before {
        match &decoded {
            Decoded::Request(parts, content_length) if same => {
                last.request = Some((KeptHead::of(parts), *content_length));
            }
            _ => {
                last.block.clear();
                last.block.extend_from_slice(block);
                last.changes = before;
                last.request = None;
            }
        }
    } else {
        last.block.clear();
        last.request = None;
    }
    Ok(decoded)
}

/// The connection's last request block, and its request once it came twice.
#[derive(Default)]
pub(super) struct LastHead {
    block: Vec<u8>,
    changes: u64,
    request: Option<(KeptHead, Option<u64>)>,
}

/// What a kept request is made again from.
struct KeptHead {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
}

impl KeptHead {
    fn of(parts: &http::request::Parts) -> KeptHead {
        KeptHead {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
        }
    }

    /// The request's parts, anew.
    fn copy(&self) -> http::request::Parts {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = Version::HTTP_2;
        *req.headers_mut() = self.headers.clone();
        req.into_parts().0
    }
}

/// The connection's last `:path` and the target made of it: a connection asking for the
/// same path again (a client polling, a benchmark) gets the target by a reference count
/// instead of parsing it again.
#[derive(Default)]
pub(super) struct LastTarget {
    path: Vec<u8>,
    uri: Option<Uri>,
}

impl LastTarget {
    /// The target for `path`, parsed or the last one's.
    fn get(&mut self, path: &[u8]) -> Option<Uri> {
        if let Some(uri) = self.uri.as_ref().filter(|_| self.path == path) {
            return Some(uri.clone());
        }
        let uri = target(path)?;
        self.path.clear();
        self.path.extend_from_slice(path);
        self.uri = Some(uri.clone());
        Some(uri)
    }
}

/// Decodes a trailer block; `None` if it is malformed (a pseudo-header field, a bad name
/// or value) or too large.
pub(super) fn decode_trailers(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
) -> Result<Option<HeaderMap>, HpackError> {
    let mut map = HeaderMap::new();
    let mut bad = false;
    let mut size = 0;
    decoder.decode(block, |name, value| {
        let bytes = value.as_bytes();
        match name {
            Name::Header(n) => {
                size += n.as_str().len() + bytes.len() + FIELD_OVERHEAD;
                if size > max_list || is_connection_specific(n, bytes) {
                    bad = true;
                } else if let Some(v) = header_value(value) {
                    map.append(n.clone(), v);
                } else {
                    bad = true;
                }
            }
            _ => bad = true,
        }
    })?;
    Ok((!bad).then_some(map))
}

/// The fields of a request as they are decoded.
#[derive(Default)]
struct Head {
    method: Option<Method>,
    scheme: bool,
    authority: Option<HeaderValue>,
    path: Option<Uri>,
    headers: HeaderMap,
    content_length: Option<u64>,
    /// A regular field has been seen (pseudo-header fields must come first).
    regular: bool,
    malformed: bool,
    size: usize,
    too_large: bool,
}

impl Head {
    fn field(
        &mut self,
        name: &Name,
        value: Value<'_>,
        max_list: usize,
        last_target: &mut LastTarget,
    ) {
        let bytes = value.as_bytes();
        self.size += name_len(name) + bytes.len() + FIELD_OVERHEAD;
        if self.size > max_list {
            self.too_large = true;
        }
        if self.too_large || self.malformed {
            return;
        }
        match name {
            Name::Pseudo(p) => {
                if self.regular {
                    self.malformed = true;
                    return;
                }
                let fresh = match p {
                    Pseudo::Method => {
                        self.method.is_none() && {
                            self.method = method(bytes);
                            self.method.is_some()
                        }
                    }
                    // The scheme is not kept: the request is handed on in origin form.
                    Pseudo::Scheme => {
                        !std::mem::replace(&mut self.scheme, true) && !bytes.is_empty()
                    }
                    Pseudo::Authority => {
                        self.authority.is_none()
                            && header_value(value).is_some_and(|v| {
                                self.authority = Some(v);
                                true
                            })
                    }
                    Pseudo::Path => {
                        self.path.is_none()
                            && last_target.get(bytes).is_some_and(|uri| {
                                self.path = Some(uri);
                                true
                            })
                    }
                    // `:status` is a response's; `:protocol` needs extended CONNECT, which
                    // is not offered.
                    Pseudo::Status | Pseudo::Protocol | Pseudo::Unknown => false,
                };
                self.malformed |= !fresh;
            }
            Name::Header(n) => {
                self.regular = true;
                if is_connection_specific(n, bytes) {
                    self.malformed = true;
                    return;
                }
                if n == header::CONTENT_LENGTH {
                    match parse_length(bytes) {
                        Some(len) if self.content_length.is_none_or_eq(len) => {
                            self.content_length = Some(len)
                        }
                        _ => {
                            self.malformed = true;
                            return;
                        }
                    }
                }
                match header_value(value) {
                    Some(v) => {
                        self.headers.append(n.clone(), v);
                    }
                    None => self.malformed = true,
                }
            }
            Name::Invalid => self.malformed = true,
        }
    }

    fn finish(self) -> Decoded {
        if self.too_large {
            return Decoded::TooLarge;
        }
        if self.malformed {
            return Decoded::Malformed;
        }
        let Some(method) = self.method else {
            return Decoded::Malformed;
        };
        let mut headers = self.headers;
        if let Some(authority) = &self.authority {
            match headers.get(header::HOST) {
                None => {
                    headers.insert(header::HOST, authority.clone());
                }
                Some(host) if host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) => {}
                Some(_) => return Decoded::Malformed,
            }
        }
        let uri = if method == Method::CONNECT {
            // RFC 9113 §8.5: only `:authority`, which is the target.
            if self.scheme || self.path.is_some() {
                return Decoded::Malformed;
            }
            match self.authority.as_ref().map(|a| Uri::try_from(a.as_bytes())) {
                Some(Ok(uri)) if uri.path_and_query().is_none() => uri,
                _ => return Decoded::Malformed,
            }
        } else {
            match (self.scheme, self.path) {
                (true, Some(path)) if path != "*" || method == Method::OPTIONS => path,
                _ => return Decoded::Malformed,
            }
        };
        let mut req = http::Request::new(());
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.version_mut() = Version::HTTP_2;
        *req.headers_mut() = headers;
        let (parts, ()) = req.into_parts();
        Decoded::Request(Box::new(parts), self.content_length)
    }
}

/// `Option::is_none_or` with equality (a repeated `content-length` must agree).
trait NoneOrEq {
    fn is_none_or_eq(&self, v: u64) -> bool;
}

impl NoneOrEq for Option<u64> {
    fn is_none_or_eq(&self, v: u64) -> bool {
        self.map_or(true, |have| have == v)
    }
}

/// The value as a `HeaderValue` (a shared one cloned, a literal checked and copied);
/// `None` if it has bytes a field value must not (RFC 9113 §8.2.1).
fn header_value(value: Value<'_>) -> Option<HeaderValue> {
    match value {
        Value::Shared(v) => Some(v.clone()),
        Value::Raw(b) => HeaderValue::from_bytes(b).ok(),
    }
}

/// `:path` as the request's target: origin form (or `*`), built over the thread's target
/// buffer as HTTP/1.1's targets are.
fn target(path: &[u8]) -> Option<Uri> {
    match path.first() {
        Some(b'/') if path.is_ascii() => Uri::from_maybe_shared(target_bytes(path))
            .ok()
            .filter(|u| u.authority().is_none()),
        Some(b'*') if path.len() == 1 => Some(Uri::from_static("*")),
        _ => None,
    }
}

/// The length RFC 7541 counts for a name.
fn name_len(name: &Name) -> usize {
    match name {
        Name::Pseudo(p) => match p {
            Pseudo::Method | Pseudo::Scheme | Pseudo::Status => 7,
            Pseudo::Path => 5,
            Pseudo::Authority => 10,
            Pseudo::Protocol => 9,
            Pseudo::Unknown => 1,
        },
        Name::Header(n) => n.as_str().len(),
        Name::Invalid => 0,
    }
}

/// A method, the common ones without parsing.
fn method(b: &[u8]) -> Option<Method> {
    match b {
        b"GET" => Some(Method::GET),
        b"POST" => Some(Method::POST),
        b"HEAD" => Some(Method::HEAD),
        _ => Method::from_bytes(b).ok(),
    }
}

/// Fields HTTP/2 forbids (RFC 9113 §8.2.2): the HTTP/1.1 connection's own, and `te` other
/// than `trailers`.
fn is_connection_specific(name: &HeaderName, value: &[u8]) -> bool {
    match name.as_str() {
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade" => true,
        "te" => value != b"trailers",
        _ => false,
    }
}

/// A `content-length` value: digits only.
fn parse_length(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_target_is_reused_only_for_the_same_path() {
        let mut last = LastTarget::default();
        for path in ["/a?x=1", "/b", "/b", "/a?x=1", "/a?x=2", "*"] {
            let uri = last.get(path.as_bytes()).expect("a target");
            assert_eq!(uri, path, "{path}");
        }
        assert!(last.get(b"relative").is_none());
        assert_eq!(
            last.get(b"*").unwrap(),
            "*",
            "a refused path leaves the last one"
        );
    }

    /// A GET of `path` for localhost: static-table fields and `:authority` as a literal,
    /// with incremental indexing if `index`.
    fn block(path: &[u8], index: bool) -> Vec<u8> {
        let mut b = vec![0x82, 0x86, 0x04, path.len() as u8];
        b.extend_from_slice(path);
        b.extend_from_slice(&[if index { 0x41 } else { 0x01 }, 9]);
        b.extend_from_slice(b"localhost");
        b
    }

    fn target_of(d: &Decoded) -> String {
        match d {
            Decoded::Request(parts, _) => format!("{} {:?}", parts.uri, parts.headers["host"]),
            _ => "not a request".into(),
        }
    }

    #[test]
    fn a_repeated_block_is_served_from_its_third_time_while_the_table_stays() {
        let mut decoder = Decoder::new();
        let (mut target, mut last) = (LastTarget::default(), LastHead::default());
        let mut decode = |b: &[u8], decoder: &mut Decoder, last: &mut LastHead| {
            decode_request_cached(decoder, b, 16_384, &mut target, last).unwrap()
        };
        let a = block(b"/a", false);
        for round in 0..4 {
            assert_eq!(
                target_of(&decode(&a, &mut decoder, &mut last)),
                "/a \"localhost\"",
                "{round}"
            );
        }
        assert!(last.request.is_some(), "kept");
        // Another block in between: the kept one is dropped, the next /a decoded again.
        assert_eq!(
            target_of(&decode(&block(b"/b", false), &mut decoder, &mut last)),
            "/b \"localhost\""
        );
        assert!(last.request.is_none());
        // A block that inserts into the table is never kept (it changes the table each
        // time), and a table change makes the same bytes decode anew.
        let c = block(b"/c", true);
        for _ in 0..3 {
            assert_eq!(
                target_of(&decode(&c, &mut decoder, &mut last)),
                "/c \"localhost\""
            );
            assert!(last.request.is_none() && last.block.is_empty());
        }
        for _ in 0..3 {
            assert_eq!(
                target_of(&decode(&a, &mut decoder, &mut last)),
                "/a \"localhost\""
            );
        }
        assert!(last.request.is_some());
    }
}
