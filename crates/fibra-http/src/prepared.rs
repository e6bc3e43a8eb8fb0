//! Whole responses prepared ahead of time and kept by their owner — a file cache's `200`s, see
//! the `fibra-files` crate — and sent by reference to it.
//!
//! The owner keeps the head ([`PreparedHead`]: the fields, rendered once for each protocol)
//! and the body (bytes in memory, or an open file whose descriptor it also keeps in its own
//! memory) under one reference count, which a cache hit touches anyway. A response that held
//! its own `Bytes` of the fields and its own `Arc` of the file took two more reference counts
//! per request, each on a line of memory of its own: on a site whose files do not fit in the
//! CPU caches both are cold by the time the file is asked for again. Sending by reference took
//! about 3.5 % off the server's user time per request on a documentation site
//! (`docs/lab/site-2026-11-26c.md`).
//!
//! ```
//! use std::sync::{Arc, OnceLock};
//! use bytes::Bytes;
//! use fibra_http::prepared::{Prepared, PreparedBody, PreparedHead, PreparedRef};
//! use fibra_http::http::{HeaderMap, HeaderValue};
//! use fibra_http::Response;
//!
//! struct Hello(PreparedHead, Bytes);
//! impl Prepared for Hello {
//!     fn head(&self, _which: usize) -> &PreparedHead { &self.0 }
//!     fn body(&self, _which: usize) -> PreparedBody<'_> { PreparedBody::Memory(&self.1) }
//! }
//!
//! let mut fields = HeaderMap::new();
//! fields.insert("content-type", HeaderValue::from_static("text/plain"));
//! let hello = Arc::new(Hello(PreparedHead::new(fields), Bytes::from_static(b"Hello")));
//! let resp = Response::prepared(PreparedRef::new(hello, 0));
//! assert_eq!(resp.headers()["content-type"], "text/plain");
//! assert_eq!(resp.body().as_bytes(), Some(&b"Hello"[..]));
//! ```

use std::fmt;
use std::fs::File;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::HeaderMap;

use crate::inline_bytes::InlineBytes;

/// The head of a prepared response: its header fields, kept both as a map (what
/// [`Response::headers`](crate::Response::headers) shows) and, once each protocol has sent it,
/// in that protocol's form: the HTTP/1.1 field lines, the HPACK block, the QPACK field lines,
/// each copied as it is from then on.
///
/// The fields must not include `Date`, `Server`, `Connection` or a framing field
/// (`Content-Length`, `Transfer-Encoding`): the connection writes those; any given are left
/// out. The HTTP/1.1 lines are kept inside the value when they are short (most file heads:
/// 130-220 bytes), so that a cache entry holding its head holds them on the lines of memory a
/// hit reads anyway.
pub struct PreparedHead {
    /// The HTTP/1.1 lines, rendered by the connection loop the first time one is sent (the
    /// wire format is `conn`'s business).
    lines: OnceLock<Lines>,
    /// The fields as an HPACK block, encoded by HTTP/2 the first time one is sent.
    hpack: OnceLock<Box<[u8]>>,
    /// The fields as QPACK field lines, encoded by HTTP/3 the first time one is sent.
    qpack: OnceLock<Box<[u8]>>,
    fields: Box<HeaderMap>,
}

/// HTTP/1.1 field lines, kept inside the [`PreparedHead`] up to 230 bytes: a typical file's
/// fields (`ETag`, `Last-Modified`, `Content-Type`, `Accept-Ranges`, maybe `Vary` and
/// `Cache-Control`) take 130-220 bytes; longer ones go on the heap.
type Lines = InlineBytes<230>;

impl PreparedHead {
    /// The head with `fields` (see the type's docs for the fields left out).
    pub fn new(mut fields: HeaderMap) -> PreparedHead {
        use http::header::{CONNECTION, CONTENT_LENGTH, DATE, SERVER, TRANSFER_ENCODING};
        for name in [CONNECTION, CONTENT_LENGTH, DATE, SERVER, TRANSFER_ENCODING] {
            fields.remove(name);
        }
        PreparedHead {
            lines: OnceLock::new(),
            hpack: OnceLock::new(),
            qpack: OnceLock::new(),
            fields: Box::new(fields),
        }
    }

    /// The header fields.
    pub fn fields(&self) -> &HeaderMap {
        &self.fields
    }

    /// The fields as HTTP/1.1 field lines, each ending in CRLF: made by `render` from the
    /// fields the first time (by the connection loop, which owns the wire format), then kept.
    #[inline]
    pub(crate) fn lines(&self, render: impl FnOnce(&HeaderMap) -> Vec<u8>) -> &[u8] {
        self.lines
            .get_or_init(|| Lines::new(&render(&self.fields)))
            .as_bytes()
    }

    /// The fields in `encoding` (an HPACK header block fragment, or QPACK field lines without
    /// the section's prefix): made by `encode` from the fields the first time (by the
    /// protocol, which owns that wire format), then kept. Neither protocol's encoding uses a
    /// dynamic table here, so the bytes mean the same in every head.
    #[inline]
    pub(crate) fn encoded(
        &self,
        encoding: Encoding,
        encode: impl FnOnce(&HeaderMap) -> Vec<u8>,
    ) -> &[u8] {
        let kept = match encoding {
            Encoding::Hpack => &self.hpack,
            Encoding::Qpack => &self.qpack,
        };
        kept.get_or_init(|| encode(&self.fields).into_boxed_slice())
    }
}

/// The encodings of its fields a [`PreparedHead`] keeps besides the HTTP/1.1 lines.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Encoding {
    /// HTTP/2's.
    Hpack,
    /// HTTP/3's.
    Qpack,
}

impl fmt::Debug for PreparedHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PreparedHead").field(&self.fields).finish()
    }
}

/// What keeps prepared responses: representation `which` of it has a head and a body.
pub trait Prepared: Send + Sync {
    /// The head of representation `which`.
    fn head(&self, which: usize) -> &PreparedHead;
    /// The body of representation `which`.
    fn body(&self, which: usize) -> PreparedBody<'_>;
}

/// The body of a prepared response.
pub enum PreparedBody<'a> {
    /// Bytes in memory.
    Memory(&'a Bytes),
    /// The first `len` bytes of an open file.
    File {
        /// The file, to read or send from.
        file: &'a File,
        /// Bytes to send.
        len: u64,
    },
}

impl PreparedBody<'_> {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            PreparedBody::Memory(b) => b.len() as u64,
            PreparedBody::File { len, .. } => *len,
        }
    }
    /// True if the body has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One representation of a prepared response, holding its owner: what
/// [`Response::prepared`](crate::Response::prepared) sends.
#[derive(Clone)]
pub struct PreparedRef {
    owner: Arc<dyn Prepared>,
    which: usize,
}

impl PreparedRef {
    /// Representation `which` of `owner`.
    pub fn new(owner: Arc<dyn Prepared>, which: usize) -> PreparedRef {
        PreparedRef { owner, which }
    }
    /// Its head.
    #[inline]
    pub fn head(&self) -> &PreparedHead {
        self.owner.head(self.which)
    }
    /// Its body.
    #[inline]
    pub fn body(&self) -> PreparedBody<'_> {
        self.owner.body(self.which)
    }
}

impl fmt::Debug for PreparedRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("fields", self.head().fields())
            .field("body", &self.body().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn head_of(fields: &[(&'static str, &str)]) -> PreparedHead {
        let mut map = HeaderMap::new();
        for (n, v) in fields {
            map.append(*n, HeaderValue::from_str(v).unwrap());
        }
        PreparedHead::new(map)
    }

    /// The rendered lines are made once from the map, inline or on the heap; fields the
    /// connection writes itself are left out.
    #[test]
    fn lines_are_made_once_inline_or_on_the_heap() {
        let render = |m: &HeaderMap| {
            m.iter()
                .flat_map(|(n, v)| [n.as_str().as_bytes(), b": ", v.as_bytes(), b"\r\n"].concat())
                .collect::<Vec<u8>>()
        };
        let h = head_of(&[("etag", "\"1\""), ("vary", "a"), ("content-length", "9")]);
        assert_eq!(h.fields().len(), 2);
        assert_eq!(h.lines(render), b"etag: \"1\"\r\nvary: a\r\n");
        assert!(h.lines.get().is_some_and(InlineBytes::is_inline));
        assert_eq!(
            h.lines(|_| unreachable!("made once")),
            b"etag: \"1\"\r\nvary: a\r\n"
        );
        let long = "x".repeat(300);
        let h = head_of(&[("cache-control", &long)]);
        assert_eq!(
            h.lines(render),
            format!("cache-control: {long}\r\n").as_bytes()
        );
        assert!(h.lines.get().is_some_and(|l| !l.is_inline()));
        assert_eq!(head_of(&[]).lines(render), b"");
    }
}
