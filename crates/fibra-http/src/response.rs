//! Response bodies: empty, in-memory bytes, a byte range of a file (sent with `sendfile`), a
//! streaming writer, or an upgrade that takes over the raw connection.
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
use std::fs::File;
use std::io::{self, Write};
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Extensions, HeaderMap, StatusCode, Version};

use crate::lazy::{Lazy, NO_EXTENSIONS, NO_HEADERS};
use crate::prepared::{PreparedBody, PreparedRef};
pub use crate::upgraded::Upgraded;

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

/// A streaming body producer: called once with the writer; an `Err` or a panic aborts the
/// response and closes the connection.
pub type StreamFn = Box<dyn FnOnce(&mut BodyWriter<'_>) -> io::Result<()>>;

/// Takes over the connection after a `101 Switching Protocols` head has been sent.
pub type UpgradeFn = Box<dyn FnOnce(Upgraded)>;

/// A byte range of an open file, sent with `sendfile` where the transport supports it.
///
/// This is the building block for static files: open (or take from a cache) the file, pick
/// the range, and return it with whatever headers you need:
///
/// ```no_run
/// use std::sync::Arc;
/// use fibra_http::{FileRange, Response, ResponseBody};
///
/// let file = Arc::new(std::fs::File::open("index.html").unwrap());
/// let resp = Response::builder()
///     .status(206)
///     .header("content-type", "text/html")
///     .header("content-range", "bytes 0-99/1234")
///     .body(ResponseBody::file(FileRange::new(file, 0, 100)))
///     .unwrap();
/// ```
///
/// The server writes `Content-Length: len` itself (any `Content-Length` or
/// `Transfer-Encoding` header on the response is replaced). The file must hold at least
/// `offset + len` bytes when the response is sent; if it is shorter the connection is closed
/// after the bytes available, since the promised length cannot be met.
#[derive(Debug, Clone)]
pub struct FileRange {
    file: Arc<File>,
    offset: u64,
    len: u64,
}

impl FileRange {
    /// `len` bytes of `file` starting at `offset`. Takes a `File` or an `Arc<File>` (shared,
    /// e.g. from an fd cache; reads use positional I/O, so sharing is safe).
    pub fn new(file: impl Into<Arc<File>>, offset: u64, len: u64) -> Self {
        FileRange {
            file: file.into(),
            offset,
            len,
        }
    }
    /// The whole file, sized from its metadata.
    pub fn whole(file: impl Into<Arc<File>>) -> io::Result<Self> {
        let file = file.into();
        let len = file.metadata()?.len();
        Ok(FileRange {
            file,
            offset: 0,
            len,
        })
    }
    /// The file.
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }
    /// First byte of the range.
    pub fn offset(&self) -> u64 {
        self.offset
    }
    /// Number of bytes in the range.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// True if the range holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

pub(crate) enum Kind {
    Empty,
    Static(&'static [u8]),
    Vec(Vec<u8>),
    Bytes(Bytes),
    File(FileRange),
    /// A prepared body (a cached file's), see [`crate::prepared`].
    Prepared(PreparedRef),
    Stream {
        len: Option<u64>,
        f: StreamFn,
    },
    Upgrade(UpgradeFn),
}

/// The body of a [`Response`].
///
/// Build it with `From` (`&'static str`, `&'static [u8]`, `String`, `Vec<u8>`, `Bytes`, `()`)
/// or the constructors below.
pub struct ResponseBody {
    pub(crate) kind: Kind,
    pub(crate) content_type: Option<HeaderValue>,
}

impl ResponseBody {
    fn of(kind: Kind) -> Self {
        ResponseBody {
            kind,
            content_type: None,
        }
    }
    /// No body (`Content-Length: 0` where a length is allowed).
    pub fn empty() -> Self {
        ResponseBody::of(Kind::Empty)
    }
    /// A byte range of a file, see [`FileRange`].
    pub fn file(range: FileRange) -> Self {
        ResponseBody::of(Kind::File(range))
    }
    /// A body written by `f` as the response goes out; sent chunked on HTTP/1.1 (on HTTP/1.0
    /// it is delimited by closing the connection). `f` is dropped unrun for `HEAD`.
    /// Whatever `f` owns is dropped when it returns, also when the client has gone away.
    pub fn stream(f: impl FnOnce(&mut BodyWriter<'_>) -> io::Result<()> + 'static) -> Self {
        ResponseBody::of(Kind::Stream {
            len: None,
            f: Box::new(f),
        })
    }
    /// A streamed body of exactly `len` bytes, sent with `Content-Length`. Writing more fails;
    /// writing fewer closes the connection after the response.
    pub fn stream_sized(
        len: u64,
        f: impl FnOnce(&mut BodyWriter<'_>) -> io::Result<()> + 'static,
    ) -> Self {
        ResponseBody::of(Kind::Stream {
            len: Some(len),
            f: Box::new(f),
        })
    }
    /// Upgrades the connection: send this with status `101` and an `Upgrade` header; after the
    /// head is written, `f` runs in the connection's fiber with the raw connection.
    pub fn upgrade(f: impl FnOnce(Upgraded) + 'static) -> Self {
        ResponseBody::of(Kind::Upgrade(Box::new(f)))
    }
    /// Gives the body a media type, sent as `Content-Type` unless the response's headers have
    /// one. For a fixed type this is cheaper than a header: no `HeaderMap` is allocated, and
    /// the worker's copy of the last response head still applies.
    ///
    /// ```
    /// use fibra_http::{Response, ResponseBody};
    /// use http::HeaderValue;
    ///
    /// let resp = Response::new(
    ///     ResponseBody::from("Hello").with_content_type(HeaderValue::from_static("text/plain")),
    /// );
    /// assert!(resp.headers().is_empty());
    /// assert_eq!(resp.body().content_type().unwrap(), "text/plain");
    /// ```
    #[inline(always)]
    pub fn with_content_type(self, value: HeaderValue) -> Self {
        // A new value rather than `self` changed and returned: LLVM then builds the body where
        // the caller keeps it, instead of copying it whole right after writing it field by
        // field (a copy that stalls on store forwarding).
        ResponseBody {
            kind: self.kind,
            content_type: Some(value),
        }
    }
    /// The media type given with [`ResponseBody::with_content_type`].
    pub fn content_type(&self) -> Option<&HeaderValue> {
        self.content_type.as_ref()
    }
    /// The body's length when known in advance.
    pub fn len(&self) -> Option<u64> {
        match &self.kind {
            Kind::Empty | Kind::Upgrade(_) => Some(0),
            Kind::Static(b) => Some(b.len() as u64),
            Kind::Vec(v) => Some(v.len() as u64),
            Kind::Bytes(b) => Some(b.len() as u64),
            Kind::File(r) => Some(r.len),
            Kind::Prepared(p) => Some(p.body().len()),
            Kind::Stream { len, .. } => *len,
        }
    }
    /// True if the body is known to be empty.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
    /// The bytes of an in-memory body (`None` for files, streams and upgrades).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.kind {
            Kind::Empty => Some(&[]),
            Kind::Static(b) => Some(b),
            Kind::Vec(v) => Some(v),
            Kind::Bytes(b) => Some(b),
            Kind::Prepared(p) => match p.body() {
                PreparedBody::Memory(b) => Some(b),
                PreparedBody::File { .. } => None,
            },
            _ => None,
        }
    }
}

impl Default for ResponseBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Empty => f.write_str("Empty"),
            Kind::Static(b) => write!(f, "Static({} bytes)", b.len()),
            Kind::Vec(b) => write!(f, "Vec({} bytes)", b.len()),
            Kind::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Kind::File(r) => f.debug_tuple("File").field(r).finish(),
            Kind::Prepared(p) => p.fmt(f),
            Kind::Stream { len, .. } => write!(f, "Stream(len: {len:?})"),
            Kind::Upgrade(_) => f.write_str("Upgrade"),
        }?;
        match &self.content_type {
            Some(t) => write!(f, " as {t:?}"),
            None => Ok(()),
        }
    }
}

impl From<()> for ResponseBody {
    fn from(_: ()) -> Self {
        Self::empty()
    }
}
impl From<&'static str> for ResponseBody {
    fn from(s: &'static str) -> Self {
        ResponseBody::of(Kind::Static(s.as_bytes()))
    }
}
impl From<&'static [u8]> for ResponseBody {
    fn from(s: &'static [u8]) -> Self {
        ResponseBody::of(Kind::Static(s))
    }
}
impl From<String> for ResponseBody {
    fn from(s: String) -> Self {
        ResponseBody::of(Kind::Vec(s.into_bytes()))
    }
}
impl From<Vec<u8>> for ResponseBody {
    fn from(v: Vec<u8>) -> Self {
        ResponseBody::of(Kind::Vec(v))
    }
}
impl From<Bytes> for ResponseBody {
    fn from(b: Bytes) -> Self {
        ResponseBody::of(Kind::Bytes(b))
    }
}
impl From<FileRange> for ResponseBody {
    fn from(r: FileRange) -> Self {
        Self::file(r)
    }
}

/// File ranges up to this size are read into the connection's write buffer and sent with the
/// head (one `pread` and one `write` beat a `write` of the head and a `sendfile`); bigger ones
/// go out with `sendfile` where the transport has it. A file cache gains nothing by keeping
/// bigger files in memory.
pub const INLINE_FILE_BYTES: u64 = 16 * 1024;

/// Size at which buffered output is pushed to the socket.
pub(crate) const FLUSH_BYTES: usize = 16 * 1024;

/// Where a [`BodyWriter`] puts its bytes: the connection, borrowed per call so the closure
/// may read the request body between writes.
pub(crate) trait StreamSink {
    /// Appends `data` (as one chunk if `chunked`) to the connection's output.
    fn sink_write(&mut self, data: &[u8], chunked: bool) -> io::Result<()>;
    /// Pushes buffered output to the socket.
    fn sink_flush(&mut self) -> io::Result<()>;
}

/// The writer a streaming body's closure gets. Small writes are buffered in the connection's
/// write buffer; when the length was not declared they are framed as chunks.
pub struct BodyWriter<'a> {
    pub(crate) sink: &'a std::cell::RefCell<dyn StreamSink>,
    pub(crate) chunked: bool,
    /// Bytes still allowed when the length was declared.
    pub(crate) remaining: Option<u64>,
    /// Bytes written so far (for the access log).
    pub(crate) written: u64,
    /// Trailer fields to send after the body ([`BodyWriter::set_trailers`]).
    pub(crate) trailers: Option<http::HeaderMap>,
}

impl BodyWriter<'_> {
    /// Trailer fields to send after the body (the last call wins): on HTTP/2 a trailing
    /// HEADERS frame; on HTTP/1.1 the trailer section after the last chunk of a chunked
    /// body (a body of declared length, or one to an HTTP/1.0 client, has nowhere to put
    /// them: they are dropped, as hyper does). Fields that frame or route a message
    /// (`Content-Length`, `Transfer-Encoding`, `Host`, `Trailer`, `TE` and the
    /// connection-specific ones) are not allowed in trailers (RFC 9110 §6.5.1) and are left
    /// out.
    pub fn set_trailers(&mut self, mut fields: http::HeaderMap) {
        use http::header;
        for name in [
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::HOST,
            header::TRAILER,
            header::TE,
            header::CONNECTION,
            header::UPGRADE,
            http::HeaderName::from_static("keep-alive"),
        ] {
            fields.remove(name);
        }
        self.trailers = Some(fields);
    }
}

impl fmt::Debug for BodyWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyWriter")
            .field("chunked", &self.chunked)
            .field("remaining", &self.remaining)
            .finish()
    }
}

impl Write for BodyWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if let Some(rem) = &mut self.remaining {
            if data.len() as u64 > *rem {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "body longer than its declared length",
                ));
            }
            *rem -= data.len() as u64;
        }
        self.sink.borrow_mut().sink_write(data, self.chunked)?;
        self.written += data.len() as u64;
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.sink.borrow_mut().sink_flush()
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
