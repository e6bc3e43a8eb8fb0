//! The response a handler returns: [`Response`] (the head and a [`ResponseBody`]) and its
//! [`Builder`]. A body is empty, in-memory bytes, a byte range of a file (sent with
//! `sendfile`), a prepared body, a streaming writer, or an upgrade that takes over the raw
//! connection (`body.rs`); one match over the body kinds hands each to the protocol's sink
//! (`send.rs`); a streaming body writes through a [`BodyWriter`] (`writer.rs`).
//!
//! A [`Response`] is a thin wrapper with the accessors of `http::Response<ResponseBody>`
//! (`new`, `builder`, `status_mut`, `headers_mut`, …) and conversions to and from it. What it
//! changes is the layout: the header map and the extensions are boxed on first use, so a
//! response without fields of its own (the usual case once the body carries the media type,
//! see [`ResponseBody::with_content_type`]) is small to move and costs nothing to drop.
//!
//! The connection computes the framing headers (`Content-Length` or
//! `Transfer-Encoding: chunked`) from the body, so handlers set only their own headers.
//!
//! ```
//! use fibra_http::{Response, ResponseBody};
//! use http::{HeaderValue, StatusCode};
//!
//! let mut resp = Response::builder()
//!     .status(StatusCode::CREATED)
//!     .header("location", "/items/7")
//!     .body(ResponseBody::from("made"))
//!     .unwrap();
//! resp.headers_mut().insert("cache-control", HeaderValue::from_static("no-store"));
//! assert_eq!(resp.status(), 201);
//! assert_eq!(resp.body().as_bytes(), Some(&b"made"[..]));
//!
//! let plain = Response::new("ok".into());
//! assert!(plain.headers().is_empty());
//! let resp: http::Response<ResponseBody> = resp.into_http();
//! assert_eq!(resp.headers()["location"], "/items/7");
//! ```

use std::any::Any;
use std::fmt;

use http::header::{HeaderName, HeaderValue};
use http::{Extensions, HeaderMap, StatusCode, Version};

use crate::lazy::{Lazy, NO_EXTENSIONS, NO_HEADERS};
use crate::prepared::PreparedRef;
pub use crate::upgraded::Upgraded;

mod body;
mod fields;
mod send;
mod writer;

pub(crate) use body::Kind;
pub use body::{FileRange, ResponseBody, StreamFn, UpgradeFn, INLINE_FILE_BYTES};
pub(crate) use fields::{each_field, put_fields, Seen};
pub use send::Collected;
pub(crate) use send::{append_file, send_body, BodyBytes, BodySink};
pub use writer::BodyWriter;
pub(crate) use writer::{StreamSink, FLUSH_BYTES};

/// The response type handlers return. See the module docs.
pub struct Response {
    pub(crate) status: StatusCode,
    version: Version,
    /// Boxed on first use: most responses have no fields of their own, and an absent box is
    /// cheap to move and costs nothing to drop. Empty while `raw` holds the fields.
    pub(crate) headers: Lazy<HeaderMap>,
    extensions: Lazy<Extensions>,
    pub(crate) body: ResponseBody,
    /// A head prepared ahead of time (a cached file's, see [`crate::prepared`]), held by
    /// reference to its owner and written as it was rendered; the first change of the fields
    /// ([`Response::headers_mut`]) copies them into the map.
    pub(crate) raw: Option<PreparedRef>,
}

impl Response {
    /// Drops a written response as the connection does ([`shed`](Self::shed), then forgotten
    /// if it owns nothing); for the tests.
    #[cfg(test)]
    pub(crate) fn dispose(mut self) {
        if self.shed() {
            std::mem::forget(self);
        }
    }

    /// Readies a written response for dropping: drops its content type and says whether it
    /// now owns nothing (no header map, no extensions, no prepared head, an empty or static
    /// body). Such a response is then forgotten rather than run through its drop glue: three
    /// out-of-line calls (the response's, its body's and its body kind's) with their frames, 40
    /// instructions for each pipelined `fibra hello` request, of which this check and the
    /// content type's drop, inline, cost back 32 (`bench/cachesim.sh`: 697.9 → 690.3 per
    /// request). Taken by reference, so the caller forgets its response where it is: a call
    /// taking it by value copied its 128 bytes (16 instructions a pipelined request). The
    /// destructuring names every field, so a field added later is looked at here.
    #[inline(always)]
    pub(crate) fn shed(&mut self) -> bool {
        let Response {
            status: _,
            version: _,
            headers,
            extensions,
            body: ResponseBody { kind, content_type },
            raw,
        } = self;
        if headers.is_none()
            && extensions.is_none()
            && raw.is_none()
            && matches!(kind, body::Kind::Empty | body::Kind::Static(_))
        {
            drop(content_type.take());
            return true;
        }
        false
    }

    /// `200 OK` with no header fields and `body` (as `http::Response::new`).
    #[inline]
    pub fn new(body: ResponseBody) -> Self {
        Response {
            status: StatusCode::OK,
            version: Version::HTTP_11,
            headers: Lazy::none(),
            extensions: Lazy::none(),
            body,
            raw: None,
        }
    }
    /// A `200` prepared ahead of time: its head and its body are `prepared`'s (see
    /// [`crate::prepared`]).
    pub fn prepared(prepared: PreparedRef) -> Self {
        Response {
            raw: Some(prepared.clone()),
            ..Response::new(ResponseBody::of(Kind::Prepared(prepared)))
        }
    }
    /// A builder, as `http::Response::builder` (its `body` gives a `Result<Response>`).
    pub fn builder() -> Builder {
        Builder {
            inner: http::Response::builder(),
        }
    }
    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }
    /// The status code, for changing.
    pub fn status_mut(&mut self) -> &mut StatusCode {
        &mut self.status
    }
    /// The version. The server answers in its own version whatever this says; it is kept for
    /// conversions.
    pub fn version(&self) -> Version {
        self.version
    }
    /// The version, for changing.
    pub fn version_mut(&mut self) -> &mut Version {
        &mut self.version
    }
    /// The handler's header fields (the server adds `Date`, `Server` and the framing fields).
    pub fn headers(&self) -> &HeaderMap {
        match &self.raw {
            Some(raw) => raw.head().fields(),
            None => self.headers.get_or(&NO_HEADERS),
        }
    }
    /// The header fields, for changing.
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        self.own_fields();
        self.headers.get_mut()
    }
    /// Fields rendered ahead of time become the map's (the map is what is sent from now on).
    #[cold]
    #[inline(never)]
    fn materialize(&mut self) {
        if let Some(raw) = self.raw.take() {
            *self.headers.get_mut() = raw.head().fields().clone();
        }
    }
    #[inline]
    fn own_fields(&mut self) {
        if self.raw.is_some() {
            self.materialize();
        }
    }
    /// Typed values attached to the response; the server does not send them.
    pub fn extensions(&self) -> &Extensions {
        self.extensions.get_or(&NO_EXTENSIONS)
    }
    /// Typed values attached to the response, for changing.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        self.extensions.get_mut()
    }
    /// The body.
    pub fn body(&self) -> &ResponseBody {
        &self.body
    }
    /// The body, for changing.
    pub fn body_mut(&mut self) -> &mut ResponseBody {
        &mut self.body
    }
    /// The body alone.
    pub fn into_body(self) -> ResponseBody {
        self.body
    }
    /// The head prepared ahead of time, taken out before [`Response::into_parts`] so that
    /// its fields are not copied into the map (a protocol that renders them its own way,
    /// HTTP/2, keeps them encoded in the prepared head).
    pub(crate) fn take_prepared_head(&mut self) -> Option<PreparedRef> {
        self.raw.take()
    }
    /// The head as `http`'s parts, and the body.
    pub fn into_parts(mut self) -> (http::response::Parts, ResponseBody) {
        self.own_fields();
        let (mut parts, ()) = http::Response::new(()).into_parts();
        parts.status = self.status;
        parts.version = self.version;
        if let Some(h) = self.headers.take() {
            parts.headers = h;
        }
        if let Some(e) = self.extensions.take() {
            parts.extensions = e;
        }
        (parts, self.body)
    }
    /// A response from `http`'s parts and a body.
    pub fn from_parts(parts: http::response::Parts, body: ResponseBody) -> Self {
        Response {
            status: parts.status,
            version: parts.version,
            headers: Lazy::unless_empty(parts.headers, HeaderMap::is_empty),
            extensions: Lazy::unless_empty(parts.extensions, Extensions::is_empty),
            body,
            raw: None,
        }
    }
    /// Converts into `http::Response<ResponseBody>`.
    pub fn into_http(self) -> http::Response<ResponseBody> {
        let (parts, body) = self.into_parts();
        http::Response::from_parts(parts, body)
    }
}

impl Default for Response {
    fn default() -> Self {
        Response::new(ResponseBody::empty())
    }
}

impl From<http::Response<ResponseBody>> for Response {
    fn from(resp: http::Response<ResponseBody>) -> Self {
        let (parts, body) = resp.into_parts();
        Response::from_parts(parts, body)
    }
}

impl From<Response> for http::Response<ResponseBody> {
    fn from(resp: Response) -> Self {
        resp.into_http()
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("version", &self.version)
            .field("headers", self.headers())
            .field("body", &self.body)
            .finish()
    }
}

/// Builds a [`Response`]: `http::response::Builder`'s methods, with a `body` that gives this
/// crate's type. Errors (an invalid status or field) surface from [`Builder::body`].
#[derive(Debug, Default)]
pub struct Builder {
    inner: http::response::Builder,
}

impl Builder {
    /// A builder for `200 OK` with no fields (as [`Response::builder`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the status code (a `StatusCode` or a `u16`).
    pub fn status<T>(self, status: T) -> Self
    where
        StatusCode: TryFrom<T>,
        <StatusCode as TryFrom<T>>::Error: Into<http::Error>,
    {
        Builder {
            inner: self.inner.status(status),
        }
    }
    /// Sets the version.
    pub fn version(self, version: Version) -> Self {
        Builder {
            inner: self.inner.version(version),
        }
    }
    /// Appends a header field.
    pub fn header<K, V>(self, key: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        Builder {
            inner: self.inner.header(key, value),
        }
    }
    /// The fields so far (`None` after an error).
    pub fn headers_mut(&mut self) -> Option<&mut HeaderMap> {
        self.inner.headers_mut()
    }
    /// Attaches a typed value.
    pub fn extension<T>(self, extension: T) -> Self
    where
        T: Clone + Any + Send + Sync + 'static,
    {
        Builder {
            inner: self.inner.extension(extension),
        }
    }
    /// The response with `body`, or the first error of the calls before.
    pub fn body(self, body: ResponseBody) -> http::Result<Response> {
        self.inner.body(body).map(Response::from)
    }
}

/// A plain-text response the server makes itself (`status`, `text`): a handler that
/// panicked, an upgrade HTTP/2 cannot do.
pub(crate) fn error_response(status: StatusCode, text: &'static str) -> Response {
    let body =
        ResponseBody::from(text).with_content_type(http::HeaderValue::from_static("text/plain"));
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

/// Statuses whose responses carry no body and no framing (RFC 9112 §6.3): 1xx, 204, 304.
#[inline(always)] // a few compares on every response; called from the inlined send path
pub(crate) fn is_bodiless(status: StatusCode) -> bool {
    status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepared::PreparedBody;
    use bytes::Bytes;
    use std::sync::Arc;

    /// Bytes whose owner sets `dropped` when the last of them goes.
    fn watched(dropped: &Arc<std::sync::atomic::AtomicBool>) -> Bytes {
        struct Owner(Arc<std::sync::atomic::AtomicBool>);
        impl AsRef<[u8]> for Owner {
            fn as_ref(&self) -> &[u8] {
                b"text/plain"
            }
        }
        impl Drop for Owner {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        Bytes::from_owner(Owner(dropped.clone()))
    }

    #[test]
    fn a_disposed_response_drops_everything_it_owns() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        // Forgotten but for its content type, which is dropped.
        let ctype_dropped = Arc::new(AtomicBool::new(false));
        let ctype = HeaderValue::from_maybe_shared(watched(&ctype_dropped)).unwrap();
        Response::new(ResponseBody::from(&b"hi"[..]).with_content_type(ctype)).dispose();
        assert!(ctype_dropped.load(SeqCst));
        // An owned body, header fields, extensions: dropped as usual.
        let body_dropped = Arc::new(AtomicBool::new(false));
        Response::new(ResponseBody::from(watched(&body_dropped))).dispose();
        assert!(body_dropped.load(SeqCst));
        let field_dropped = Arc::new(AtomicBool::new(false));
        let mut r = Response::new(ResponseBody::from(&b"hi"[..]));
        r.headers_mut().insert(
            "x-a",
            HeaderValue::from_maybe_shared(watched(&field_dropped)).unwrap(),
        );
        r.dispose();
        assert!(field_dropped.load(SeqCst));
        let ext = Arc::new(());
        let mut r = Response::new(ResponseBody::empty());
        r.extensions_mut().insert(ext.clone());
        r.dispose();
        assert_eq!(Arc::strong_count(&ext), 1);
    }

    #[test]
    fn converts_to_and_from_http() {
        let mut resp = http::Response::builder()
            .status(404)
            .version(Version::HTTP_10)
            .header("x-a", "1")
            .body(ResponseBody::from("gone"))
            .unwrap();
        resp.extensions_mut().insert(7u32);
        let mut resp = Response::from(resp);
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.version(), Version::HTTP_10);
        assert_eq!(resp.headers()["x-a"], "1");
        assert_eq!(resp.extensions().get::<u32>(), Some(&7));
        assert_eq!(resp.body().as_bytes(), Some(&b"gone"[..]));
        resp.headers_mut()
            .insert("x-b", HeaderValue::from_static("2"));
        resp.extensions_mut().insert(8u32);
        *resp.status_mut() = StatusCode::GONE;
        let back: http::Response<ResponseBody> = resp.into();
        assert_eq!(back.status(), StatusCode::GONE);
        assert_eq!(back.headers()["x-a"], "1");
        assert_eq!(back.headers()["x-b"], "2");
        assert_eq!(back.extensions().get::<u32>(), Some(&8));
        let (parts, body) = back.into_parts();
        let again = Response::from_parts(parts, body);
        assert_eq!(again.headers().len(), 2);
        assert!(format!("{again:?}").contains("410"));
    }

    /// A response without fields or extensions holds no map; asking to change one makes it.
    #[test]
    fn fields_and_extensions_are_made_on_first_change() {
        let mut resp = Response::new(().into());
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.version(), Version::HTTP_11);
        assert!(resp.headers.get_or(&NO_HEADERS).is_empty());
        assert!(resp.headers().is_empty() && resp.extensions().is_empty());
        resp.headers_mut()
            .append("vary", HeaderValue::from_static("a"));
        resp.headers_mut()
            .append("vary", HeaderValue::from_static("b"));
        assert_eq!(resp.headers().get_all("vary").iter().count(), 2);
        // Converting an empty `http` response keeps nothing boxed.
        let (parts, body) = http::Response::new(ResponseBody::empty()).into_parts();
        let plain = Response::from_parts(parts, body);
        assert!(plain.headers().is_empty() && plain.extensions().is_empty());
        let http_resp = plain.into_http();
        assert!(http_resp.headers().is_empty());
    }

    /// A prepared response with one representation: these fields and the body "x".
    struct OneFile(crate::prepared::PreparedHead, Bytes);

    impl crate::prepared::Prepared for OneFile {
        fn head(&self, _: usize) -> &crate::prepared::PreparedHead {
            &self.0
        }
        fn body(&self, _: usize) -> PreparedBody<'_> {
            PreparedBody::Memory(&self.1)
        }
    }

    fn prepared() -> Response {
        let mut fields = HeaderMap::new();
        fields.insert("etag", HeaderValue::from_static("\"1\""));
        fields.insert("content-type", HeaderValue::from_static("text/plain"));
        fields.insert("vary", HeaderValue::from_static("a"));
        let head = crate::prepared::PreparedHead::new(fields);
        let owner = Arc::new(OneFile(head, Bytes::from_static(b"x")));
        Response::prepared(PreparedRef::new(owner, 0))
    }

    /// Prepared fields show in `headers()`, and the first change makes them the map's.
    #[test]
    fn rendered_fields_are_shown_and_become_the_map_on_change() {
        let resp = prepared();
        assert_eq!(resp.body().as_bytes(), Some(&b"x"[..]));
        assert_eq!(resp.body().len(), Some(1));
        assert_eq!(resp.headers()["etag"], "\"1\"");
        assert_eq!(resp.headers().len(), 3);
        assert!(resp.raw.is_some(), "looking keeps the rendered fields");
        let mut resp = prepared();
        resp.headers_mut()
            .insert("content-type", HeaderValue::from_static("text/html"));
        assert!(resp.raw.is_none());
        let (parts, _) = resp.into_parts();
        assert_eq!(parts.headers["content-type"], "text/html");
        assert_eq!(parts.headers["vary"], "a");
        // Converted as a whole (what HTTP/2 does), after a look or without one.
        let resp = prepared();
        let _ = resp.headers();
        assert_eq!(resp.into_http().headers().len(), 3);
        let resp = prepared();
        assert_eq!(resp.into_http().headers()["etag"], "\"1\"");
    }

    #[test]
    fn builder_reports_the_first_error() {
        let ok = Response::builder()
            .status(StatusCode::CREATED)
            .header("location", "/x")
            .extension("tag")
            .body(ResponseBody::empty())
            .unwrap();
        assert_eq!(ok.status(), 201);
        assert_eq!(ok.headers()["location"], "/x");
        assert_eq!(ok.extensions().get::<&str>(), Some(&"tag"));
        let mut b = Builder::new().status(1000u16);
        assert!(b.headers_mut().is_none());
        assert!(b.body(ResponseBody::empty()).is_err());
        assert!(Response::builder()
            .header("bad name", "v")
            .body(ResponseBody::empty())
            .is_err());
        assert_eq!(Response::default().body().len(), Some(0));
    }
}
