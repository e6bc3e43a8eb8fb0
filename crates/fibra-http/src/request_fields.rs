//! A request's field section as HTTP/2 and HTTP/3 hand it over (HPACK- or QPACK-decoded
//! fields), checked against RFC 9113 §8.2–8.3 and RFC 9114 §4.2–4.3 (pseudo-header fields
//! first, once each, the request ones only; no connection-specific fields; `te` only
//! `trailers`; lower-case names) and made into [`http::request::Parts`] as an HTTP/1.1
//! request would be: the target in origin form (`:path`), the host in `Host` (`:authority`;
//! a `Host` that differs from it makes the request malformed). Trailer sections likewise
//! ([`TrailerFields`]).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri, Version};

use crate::field::{Name, Pseudo, Value};
use crate::target_bytes::target_bytes;

/// What a decoded request section turned out to be.
pub(crate) enum Decoded {
    /// A well-formed request head and its declared body length.
    Request(Box<http::request::Parts>, Option<u64>),
    /// Malformed (RFC 9113 §8.1.1, RFC 9114 §4.1.2): the stream is reset (HTTP/2's
    /// PROTOCOL_ERROR, HTTP/3's H3_MESSAGE_ERROR).
    Malformed,
    /// The field list is larger than the limit: answered 431.
    TooLarge,
}

/// The overhead RFC 7541 §4.1 counts per field, which HTTP/2's
/// `SETTINGS_MAX_HEADER_LIST_SIZE` and HTTP/3's `SETTINGS_MAX_FIELD_SECTION_SIZE` use.
pub(crate) const FIELD_OVERHEAD: usize = 32;

/// The connection's last `:path` and the target made of it: a connection asking for the
/// same path again (a client polling, a benchmark) gets the target by a reference count
/// instead of parsing it again.
#[derive(Default)]
pub(crate) struct LastTarget {
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

/// The fields of a trailer section as they are decoded: feed each with
/// [`field`](Self::field), then [`finish`](Self::finish).
#[derive(Default)]
pub(crate) struct TrailerFields {
    map: HeaderMap,
    bad: bool,
    size: usize,
}

impl TrailerFields {
    /// Takes the next decoded field; a pseudo-header field, a connection-specific one, a bad
    /// value, or more than `max_list` in all (as RFC 7541 §4.1 counts) spoils the section.
    pub(crate) fn field(&mut self, name: &Name, value: Value<'_>, max_list: usize) {
        let bytes = value.as_bytes();
        match name {
            Name::Header(n) => {
                self.size += n.as_str().len() + bytes.len() + FIELD_OVERHEAD;
                if self.size > max_list || is_connection_specific(n, bytes) {
                    self.bad = true;
                } else if let Some(v) = header_value(value) {
                    self.map.append(n.clone(), v);
                } else {
                    self.bad = true;
                }
            }
            _ => self.bad = true,
        }
    }

    /// The trailer fields, or `None` if the section was malformed or too large.
    pub(crate) fn finish(self) -> Option<HeaderMap> {
        (!self.bad).then_some(self.map)
    }
}

/// The fields of a request as they are decoded: feed each with [`field`](Self::field), then
/// [`finish`](Self::finish).
#[derive(Default)]
pub(crate) struct RequestFields {
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

impl RequestFields {
    /// Takes the next decoded field: checked, counted against `max_list` (as RFC 7541 §4.1
    /// counts), and kept; the first problem marks the request malformed or too large, and
    /// later fields are then only counted.
    pub(crate) fn field(
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

    /// What the fields make: the request, with `version` as its version, or why not.
    pub(crate) fn finish(self, version: Version) -> Decoded {
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
            // RFC 9113 §8.5, RFC 9114 §4.4: only `:authority`, which is the target.
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
        *req.version_mut() = version;
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
        self.is_none_or(|have| have == v)
    }
}

/// The value as a `HeaderValue` (a shared one cloned, a literal checked and copied);
/// `None` if it has bytes a field value must not (RFC 9113 §8.2.1, RFC 9114 §4.2).
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

/// Fields HTTP/2 and HTTP/3 forbid (RFC 9113 §8.2.2, RFC 9114 §4.2): the HTTP/1.1
/// connection's own, and `te` other than `trailers`.
pub(crate) fn is_connection_specific(name: &HeaderName, value: &[u8]) -> bool {
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
}
