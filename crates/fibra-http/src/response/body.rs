//! Response bodies: the kinds a [`ResponseBody`] holds (bytes, a file range, a prepared body,
//! a stream, an upgrade), their constructors, and their length as the connection frames it.

use std::fmt;
use std::fs::File;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderValue;

use super::writer::BodyWriter;
use super::Upgraded;
use crate::prepared::{PreparedBody, PreparedRef};

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

/// The body of a [`Response`](super::Response).
///
/// Build it with `From` (`&'static str`, `&'static [u8]`, `String`, `Vec<u8>`, `Bytes`, `()`)
/// or the constructors below.
pub struct ResponseBody {
    pub(crate) kind: Kind,
    pub(crate) content_type: Option<HeaderValue>,
}

impl ResponseBody {
    pub(super) fn of(kind: Kind) -> Self {
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
    /// The bytes of an in-memory body (`None` for files, streams and upgrades). The
    /// protocols send such a body straight from here: a new kind of in-memory body answers
    /// it (and `send.rs`'s match), nothing in a protocol's code.
    #[inline]
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
