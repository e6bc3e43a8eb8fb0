//! The request body: a `std::io::Read` that streams from the connection (Content-Length or
//! chunked), answering `Expect: 100-continue` on the first read.
//!
//! A `Body` shares the connection's read buffer through an `Rc`, so a [`crate::Request`] is
//! not `Send`: it lives in the connection's fiber. Read what you need (e.g. with
//! [`Body::read_to_vec`]) before handing data to other threads.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

/// The connection side of a body (implemented by the connection loop).
pub(crate) trait BodySource {
    /// Reads body bytes of request number `seq`; `Ok(0)` at the end (or for a stale body).
    fn read_body(&mut self, seq: u64, out: &mut [u8]) -> io::Result<usize>;
    /// The client's address.
    fn peer_addr(&self) -> Option<SocketAddr>;
    /// The TLS server name (SNI) the client asked for.
    fn server_name(&self) -> Option<Arc<str>>;
    /// The index of the server's acceptor the connection came through
    /// ([`crate::Settings::listener`]).
    fn listener(&self) -> usize;
    /// Body bytes announced but not yet read, when known (`Content-Length` bodies).
    fn remaining_hint(&self, seq: u64) -> Option<u64>;
    /// The trailer fields that followed the body of request `seq`, once it was read to its
    /// end; taken by the first call.
    fn trailers(&mut self, seq: u64) -> Option<http::HeaderMap>;
    /// Lowers the most body bytes request `seq` may send to `max` (see [`Body::limit`]).
    fn limit(&mut self, seq: u64, max: u64);
}

// A plain tag rather than a niche in `Vec`'s capacity: telling the variants apart (every
// request drops a `Conn` body) is one compare instead of ten instructions.
#[repr(u8)]
enum Inner {
    Empty,
    Memory {
        data: Vec<u8>,
        pos: usize,
    },
    Conn {
        src: Rc<RefCell<dyn BodySource>>,
        seq: u64,
    },
}

/// A request body. See the module docs.
pub struct Body {
    inner: Inner,
}

impl Body {
    /// A body with no bytes (also handy for testing handlers).
    pub fn empty() -> Self {
        Body {
            inner: Inner::Empty,
        }
    }
    /// An in-memory body (for testing handlers without a socket).
    pub fn from_bytes(data: impl Into<Vec<u8>>) -> Self {
        Body {
            inner: Inner::Memory {
                data: data.into(),
                pos: 0,
            },
        }
    }
    pub(crate) fn from_conn(src: Rc<RefCell<dyn BodySource>>, seq: u64) -> Self {
        Body {
            inner: Inner::Conn { src, seq },
        }
    }
    /// Reads the whole body into a `Vec`, failing with `InvalidData` if it exceeds `limit`
    /// bytes. (The server's `max_body_bytes` applies in any case.)
    pub fn read_to_vec(&mut self, limit: usize) -> io::Result<Vec<u8>> {
        let hint = self.remaining().unwrap_or(0).min(limit as u64) as usize;
        let mut out = Vec::with_capacity(hint);
        self.by_ref().take(limit as u64 + 1).read_to_end(&mut out)?;
        if out.len() > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "body larger than the limit",
            ));
        }
        Ok(out)
    }
    /// Bytes not yet read, when known in advance (a `Content-Length` body).
    pub fn remaining(&self) -> Option<u64> {
        match &self.inner {
            Inner::Empty => Some(0),
            Inner::Memory { data, pos } => Some((data.len() - pos) as u64),
            Inner::Conn { src, seq } => src.borrow().remaining_hint(*seq),
        }
    }
    /// The trailer fields that followed the body (a chunked body's trailer section on
    /// HTTP/1.1, a trailing HEADERS frame on HTTP/2), once the body has been read to its end
    /// (`read` returned 0). `None` if there were none, before the end, or after the first
    /// call, which takes them.
    pub fn trailers(&mut self) -> Option<http::HeaderMap> {
        match &mut self.inner {
            Inner::Conn { src, seq } => src.borrow_mut().trailers(*seq),
            _ => None,
        }
    }
    /// The client's address (`None` for bodies not read from a connection).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        match &self.inner {
            Inner::Conn { src, .. } => src.borrow().peer_addr(),
            _ => None,
        }
    }
    /// Lowers the most bytes this body may have to `max`, below the server's
    /// [`Settings::max_body_bytes`](crate::Settings::max_body_bytes) (a route's own limit).
    /// Call it before reading: a body declared longer (`Content-Length`), or one that goes
    /// past `max` as it arrives (chunked, HTTP/2 DATA), fails as one over the server's limit
    /// does: the read errors and the server answers `413` instead of the handler's response
    /// (if that has not begun).
    pub fn limit(&mut self, max: u64) {
        match &mut self.inner {
            Inner::Conn { src, seq } => src.borrow_mut().limit(*seq, max),
            Inner::Memory { data, pos } => {
                let keep = (*pos as u64).saturating_add(max).min(data.len() as u64) as usize;
                data.truncate(keep);
            }
            Inner::Empty => {}
        }
    }
    /// The TLS server name (SNI) of the connection (`None` without TLS, without SNI, or for
    /// bodies not read from a connection).
    pub(crate) fn server_name(&self) -> Option<Arc<str>> {
        match &self.inner {
            Inner::Conn { src, .. } => src.borrow().server_name(),
            _ => None,
        }
    }
    /// The index of the server's acceptor the connection came through (0 for bodies not
    /// read from a connection).
    pub(crate) fn listener(&self) -> usize {
        match &self.inner {
            Inner::Conn { src, .. } => src.borrow().listener(),
            _ => 0,
        }
    }
}

impl Default for Body {
    fn default() -> Self {
        Self::empty()
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Body")
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl Read for Body {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        match &mut self.inner {
            Inner::Empty => Ok(0),
            Inner::Memory { data, pos } => {
                let n = out.len().min(data.len() - *pos);
                out[..n].copy_from_slice(&data[*pos..*pos + n]);
                *pos += n;
                Ok(n)
            }
            Inner::Conn { src, seq } => src.borrow_mut().read_body(*seq, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_body_reads_and_limits() {
        let mut b = Body::from_bytes(&b"hello"[..]);
        assert_eq!(b.remaining(), Some(5));
        assert_eq!(b.read_to_vec(10).unwrap(), b"hello");
        let mut b = Body::from_bytes(&b"hello"[..]);
        assert_eq!(
            b.read_to_vec(4).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(Body::empty().read_to_vec(1).unwrap(), b"");
    }
}
