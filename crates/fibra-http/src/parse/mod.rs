//! Request-head parsing: `httparse` for the syntax, then the strict RFC 9112 framing rules
//! (§2, §3, §6, §7) that decide how long the body is and whether the stream can be trusted.
//!
//! Pure functions over a byte slice: no I/O, no runtime. Every rejection is a
//! [`ProtocolError`] carrying the status to answer with; after any of them the connection is
//! closed, so a request smuggled behind a malformed one is never read, let alone answered.

use std::cell::Cell;
use std::ops::Deref;
use std::rc::Rc;

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, StatusCode, Uri, Version};

use crate::backoff::Backoff;
use std::mem::MaybeUninit;

use crate::error::ProtocolError;
use crate::settings::Settings;
use crate::target_bytes::target_bytes;

mod fields;

pub(crate) use fields::is_token;
use fields::{valid_host, validate_headers};

/// How the request body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body (neither `Content-Length` nor `Transfer-Encoding`).
    Empty,
    /// Exactly this many bytes (`Content-Length`).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// The part of a request head a handler sees: method, target, version and header fields.
///
/// Shared by reference count between the parser's cache of a repeated head and each
/// [`crate::Request`] made from it, so a byte-identical head costs no copy of its fields.
#[derive(Debug, Clone, Default)]
pub struct RequestHead {
    /// Request method.
    pub method: Method,
    /// Request target (origin-, absolute-, authority- or asterisk-form).
    pub uri: Uri,
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub version: Version,
    /// All header fields, in order.
    pub headers: HeaderMap,
}

/// A parsed, validated request head: what the handler sees ([`RequestHead`], through `Deref`)
/// and what the connection needs to frame the body and decide on keep-alive.
#[derive(Debug, Clone)]
pub struct Head {
    /// Method, target, version and fields.
    pub request: Rc<RequestHead>,
    /// How the body is framed.
    pub body: BodyKind,
    /// Whether the client allows the connection to stay open after this request.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request.
    pub expect_continue: bool,
    /// `Connection: upgrade` plus an `Upgrade` header.
    pub upgrade: bool,
}

impl Deref for Head {
    type Target = RequestHead;
    fn deref(&self) -> &RequestHead {
        &self.request
    }
}

/// What the previous request on a connection parsed to, so an identical target or header field
/// in the next one is cloned (a reference-count increment) instead of parsed and copied into a
/// new allocation. Keep-alive clients repeat most of their head from request to request.
///
/// It also keeps the last head's bytes: when the same bytes come again, the head they parsed to
/// is kept too, and from then on a byte-identical head (a benchmark client's, a health check's,
/// a polling client's) costs one comparison instead of a parse, and its [`RequestHead`] is
/// shared (a reference count) with the request instead of copied.
#[derive(Debug, Default)]
pub struct HeadCache {
    target: Vec<u8>,
    uri: Option<Uri>,
    /// Origin-form targets in a row that differed from the one kept; when backing off only
    /// every 16th is kept (a clone of its `Uri` and a copy of its bytes), so a client walking
    /// a site pays for next to nothing.
    target_misses: Backoff,
    fields: Vec<(HeaderName, HeaderValue)>,
    /// The last head parsed, byte for byte (empty if it was longer than [`REPEAT_MAX`]).
    last: Vec<u8>,
    /// What `last` parsed to, once it was seen twice in a row.
    repeat: Option<Repeat>,
    /// Heads in a row that differed from the one before; when backing off only every 16th
    /// head is looked at, so traffic that never repeats pays for next to nothing, and traffic
    /// that starts repeating is caught within 32 heads.
    misses: Backoff,
}

/// A head kept for byte-identical repeats, with what the settings-dependent limits look at.
#[derive(Debug)]
struct Repeat {
    head: Head,
    target_len: usize,
    fields: usize,
}

/// Longest head kept for byte-identical repeats.
const REPEAT_MAX: usize = 1024;

impl HeadCache {
    /// Whether to keep an origin-form target that differed from the one kept (see
    /// `target_misses`).
    #[inline]
    fn keep_target(&mut self) -> bool {
        let keep = self.target_misses.take_chance();
        self.target_misses.miss();
        keep
    }

    /// The head at the start of `buf` if it is byte for byte the one kept, and within the
    /// limits of `settings` (the cache may be shared by servers with different settings).
    fn repeated(&self, buf: &[u8], settings: &Settings) -> Option<(Head, usize)> {
        let r = self.repeat.as_ref()?;
        let len = self.last.len();
        let within = len <= settings.max_head_bytes
            && r.target_len <= settings.max_target_bytes
            && r.fields <= settings.max_headers
            && !matches!(r.head.body, BodyKind::Length(n) if n > settings.max_body_bytes);
        (within && buf.starts_with(&self.last)).then(|| (r.head.clone(), len))
    }

    /// Records a successfully parsed head; keeps what it parsed to when it repeats the last one.
    #[inline]
    fn remember(&mut self, bytes: &[u8], head: &Head, target_len: usize, fields: usize) {
        if !self.misses.take_chance() {
            return;
        }
        self.compare_and_keep(bytes, head, target_len, fields);
    }

    #[inline(never)]
    fn compare_and_keep(&mut self, bytes: &[u8], head: &Head, target_len: usize, fields: usize) {
        if self.last == bytes {
            self.misses.hit();
            if self.repeat.is_none() {
                self.repeat = Some(Repeat {
                    head: head.clone(),
                    target_len,
                    fields,
                });
            }
            return;
        }
        self.misses.miss();
        self.last.clear();
        if bytes.len() <= REPEAT_MAX {
            self.last.extend_from_slice(bytes);
        }
        self.repeat = None;
    }
}

thread_local! {
    /// A head whose request is done with it (see [`recycle`]), for the next parse on this
    /// thread to fill.
    static SPARE: Cell<Option<Rc<RequestHead>>> = const { Cell::new(None) };
}

/// The most header fields a recycled head's map is kept for: a map grown by a request with
/// many more fields is dropped rather than cleared on every request after it.
const RECYCLE_MAX_FIELDS: usize = 32;

/// Gives the parser back a request's head once nothing else holds it, so that the next head
/// parsed on this thread reuses its allocation and its header map's (a parse otherwise
/// allocates the `Rc` and the map's two arrays, and the request's drop frees all three).
/// What it held is dropped when it is reused.
pub(crate) fn recycle(head: Rc<RequestHead>) {
    if Rc::strong_count(&head) == 1
        && Rc::weak_count(&head) == 0
        && head.headers.capacity() <= RECYCLE_MAX_FIELDS
    {
        // The thread is going away when this fails: the head is just dropped.
        let _ = SPARE.try_with(|s| s.set(Some(head)));
    }
}

/// The recycled head, if there is one and it is (still) not shared.
#[inline]
fn spare_head() -> Option<Rc<RequestHead>> {
    SPARE
        .try_with(Cell::take)
        .ok()
        .flatten()
        .filter(|h| Rc::strong_count(h) == 1 && Rc::weak_count(h) == 0)
}

/// Header-array size kept on the stack; more headers than this (when allowed by
/// `max_headers`) use a heap array for that request.
const STACK_HEADERS: usize = 24;

/// Parses one request head from the start of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed, `Ok(Some((head, len)))` with the head's
/// length in bytes, or the error to answer with. Limits come from `settings`: `max_head_bytes`
/// (431, or 414 when even the request line does not fit), `max_target_bytes` (414),
/// `max_headers` (431), `max_body_bytes` (413 for a bigger `Content-Length`).
pub fn parse_head(buf: &[u8], settings: &Settings) -> Result<Option<(Head, usize)>, ProtocolError> {
    parse_head_cached(buf, settings, &mut HeadCache::default())
}

/// [`parse_head`] reusing (and updating) `cache`, the previous request's parse on the same
/// connection. The result is the same as without the cache.
///
/// The check for a byte-identical repeat is inlined into the caller; the parse is not (its
/// frame is large, and a repeat does not need it).
#[inline]
pub fn parse_head_cached(
    buf: &[u8],
    settings: &Settings,
    cache: &mut HeadCache,
) -> Result<Option<(Head, usize)>, ProtocolError> {
    if let Some(hit) = cache.repeated(buf, settings) {
        return Ok(Some(hit));
    }
    parse_head_uncached(buf, settings, cache)
}

/// [`parse_head_cached`] past the repeat check.
#[inline(never)]
fn parse_head_uncached(
    buf: &[u8],
    settings: &Settings,
    cache: &mut HeadCache,
) -> Result<Option<(Head, usize)>, ProtocolError> {
    // A typical request has a handful of fields: parse into a small, uninitialised array on
    // the stack (a 100-slot array was 3 KiB of stack per request, and zeroing it was half of
    // this function's time), and only a head with more fields is parsed again into a
    // `max_headers`-sized array on the heap.
    let mut small = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; STACK_HEADERS];
    let mut heap = Vec::new();
    let max_headers = settings.max_headers;
    let mut req = httparse::Request::new(&mut []);
    let mut result =
        req.parse_with_uninit_headers(buf, &mut small[..max_headers.min(STACK_HEADERS)]);
    if matches!(result, Err(httparse::Error::TooManyHeaders)) && max_headers > STACK_HEADERS {
        heap.resize_with(max_headers, MaybeUninit::uninit);
        req = httparse::Request::new(&mut []);
        result = req.parse_with_uninit_headers(buf, &mut heap[..]);
    }
    let len = match result {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return partial(buf, settings).map(|()| None),
        Err(httparse::Error::Version) if later_minor_version(buf).is_some() => {
            return parse_as_http11(buf, settings, cache);
        }
        Err(e) => return Err(map_httparse_error(e, buf)),
    };
    if len > settings.max_head_bytes {
        return Err(head_too_large(buf, settings));
    }
    let target = req.path.unwrap_or("");
    if target.len() > settings.max_target_bytes {
        return Err(ProtocolError::new(
            StatusCode::URI_TOO_LONG,
            "request target too long",
        ));
    }
    let method = Method::from_bytes(req.method.unwrap_or("").as_bytes())
        .map_err(|_| ProtocolError::bad("invalid method"))?;
    let version = if req.version == Some(1) {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let uri = match &cache.uri {
        // Only origin-form targets are cached: their validity does not depend on the method.
        Some(uri)
            if cache.target == target.as_bytes()
                && target.starts_with('/')
                && method != Method::CONNECT =>
        {
            cache.target_misses.hit();
            uri.clone()
        }
        _ => {
            let uri = parse_target(&method, target)?;
            if target.starts_with('/') && cache.keep_target() {
                cache.target.clear();
                cache.target.extend_from_slice(target.as_bytes());
                cache.uri = Some(uri.clone());
            }
            uri
        }
    };
    let head = validate_headers(req.headers, method, uri, version, settings, cache)?;
    cache.remember(&buf[..len], &head, target.len(), req.headers.len());
    Ok(Some((head, len)))
}

/// Decides, for an incomplete head, whether to wait for more bytes or give up.
fn partial(buf: &[u8], settings: &Settings) -> Result<(), ProtocolError> {
    // A request line longer than the target limit (plus room for method and version) is 414
    // even before the head limit is reached.
    if memchr::memchr(b'\n', buf).is_none() && buf.len() > settings.max_target_bytes + 32 {
        return Err(ProtocolError::new(
            StatusCode::URI_TOO_LONG,
            "request target too long",
        ));
    }
    if buf.len() >= settings.max_head_bytes {
        return Err(head_too_large(buf, settings));
    }
    Ok(())
}

fn head_too_large(buf: &[u8], settings: &Settings) -> ProtocolError {
    let limit = buf.len().min(settings.max_head_bytes);
    if memchr::memchr(b'\n', &buf[..limit]).is_none() {
        ProtocolError::new(StatusCode::URI_TOO_LONG, "request line too long")
    } else {
        ProtocolError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request head too large",
        )
    }
}

fn map_httparse_error(e: httparse::Error, buf: &[u8]) -> ProtocolError {
    use httparse::Error as E;
    match e {
        E::TooManyHeaders => ProtocolError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "too many headers",
        ),
        E::Version if looks_like_other_version(buf) => ProtocolError::new(
            StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            "unsupported HTTP version",
        ),
        E::Version => ProtocolError::bad("malformed request line"),
        E::HeaderName => ProtocolError::bad("invalid header name"),
        E::HeaderValue => ProtocolError::bad("invalid header value"),
        E::NewLine => ProtocolError::bad("invalid line ending"),
        E::Token => ProtocolError::bad("malformed request line"),
        E::Status => ProtocolError::bad("malformed request line"),
    }
}

/// Where the minor version digit is in a request line ending `HTTP/1.d` with `d` from 2 to
/// 9: such a request is read as HTTP/1.1, the highest minor version of HTTP/1 this server
/// implements (RFC 9110 §2.5).
fn later_minor_version(buf: &[u8]) -> Option<usize> {
    let line_end = memchr::memchr(b'\n', buf)?;
    let line = buf[..line_end]
        .strip_suffix(b"\r")
        .unwrap_or(&buf[..line_end]);
    match line {
        [.., b' ', b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'2'..=b'9'] => Some(line.len() - 1),
        _ => None,
    }
}

/// Parses a head whose request line says `HTTP/1.2`…`HTTP/1.9` as HTTP/1.1 (a copy with the
/// digit replaced; rare, so the copy does not matter).
#[cold]
#[inline(never)]
fn parse_as_http11(
    buf: &[u8],
    settings: &Settings,
    cache: &mut HeadCache,
) -> Result<Option<(Head, usize)>, ProtocolError> {
    let Some(at) = later_minor_version(buf) else {
        return Err(ProtocolError::bad("malformed request line"));
    };
    let mut copy = buf.to_vec();
    copy[at] = b'1';
    parse_head_uncached(&copy, settings, cache)
}

/// True when the request line is `method SP target SP HTTP/x.y` with a well-formed version
/// other than 1.0/1.1. A line with a space inside the target (`GET /a b HTTP/1.1`) is
/// malformed (400), not an unsupported version.
fn looks_like_other_version(buf: &[u8]) -> bool {
    let line_end = memchr::memchr(b'\n', buf).unwrap_or(buf.len());
    let line = buf[..line_end]
        .strip_suffix(b"\r")
        .unwrap_or(&buf[..line_end]);
    if memchr::memchr_iter(b' ', line).count() != 2 {
        return false;
    }
    let Some(sp) = memchr::memrchr(b' ', line) else {
        return false;
    };
    match &line[sp + 1..] {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'0' | b'1'] => false,
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] => {
            major.is_ascii_digit() && minor.is_ascii_digit()
        }
        _ => false,
    }
}

/// Validates the request target's form against the method (RFC 9112 §3.2).
fn parse_target(method: &Method, target: &str) -> Result<Uri, ProtocolError> {
    let bad = || ProtocolError::bad("invalid request target");
    // Raw 8-bit bytes are not URI characters (RFC 3986): a client percent-encodes them.
    if !target.is_ascii() {
        return Err(bad());
    }
    let first = *target.as_bytes().first().ok_or_else(bad)?;
    if target == "*" {
        return if method == Method::OPTIONS {
            Ok(Uri::from_static("*"))
        } else {
            Err(bad())
        };
    }
    if *method == Method::CONNECT {
        // authority-form only
        let uri = Uri::try_from(target).map_err(|_| bad())?;
        return match (uri.authority(), uri.scheme(), uri.path_and_query()) {
            (Some(_), None, None) => Ok(uri),
            (Some(_), None, Some(p)) if p.as_str().is_empty() || p.as_str() == "/" => Ok(uri),
            _ => Err(bad()),
        };
    }
    if first == b'/' {
        // Origin-form, nearly every request: built over a slice of the thread's target buffer
        // instead of an allocation of its own.
        let uri = Uri::from_maybe_shared(target_bytes(target.as_bytes())).map_err(|_| bad())?;
        return if uri.authority().is_none() {
            Ok(uri)
        } else {
            Err(bad())
        };
    }
    // absolute-form; userinfo is an error (RFC 9110 §4.2.4), as in `Host`
    let uri = Uri::try_from(target).map_err(|_| bad())?;
    match (uri.scheme_str(), uri.authority()) {
        (Some(s), Some(a))
            if (s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"))
                && valid_host(a.as_str().as_bytes()) =>
        {
            Ok(uri)
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests;
