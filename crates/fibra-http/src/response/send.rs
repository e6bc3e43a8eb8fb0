//! Sending a body: the one match over the body kinds ([`send_body`]), which hands each piece
//! to the protocol's [`BodySink`] — HTTP/1.1 (`conn/encode.rs`: the connection's write buffer
//! and socket, `sendfile`), HTTP/2 (`http2/stream.rs`: DATA frames within the windows) and an
//! in-memory one ([`ResponseBody::collect`]). A new kind of body is a new arm here, in terms
//! of what sinks already take; a new protocol is a new sink.

use std::fs::File;
use std::io;

use bytes::Bytes;
use http::HeaderMap;

use super::body::{Kind, ResponseBody, StreamFn};
use super::writer::{BodyWriter, StreamSink};
use crate::prepared::PreparedBody;

/// In-memory body bytes, as the body holds them: a sink that keeps them (HTTP/2 hands them
/// to its frames) takes them without a copy ([`BodyBytes::into_shared`]); one that copies
/// them reads them in place ([`BodyBytes::as_slice`]).
pub(crate) enum BodyBytes<'a> {
    /// Bytes that live for the whole program.
    Static(&'static [u8]),
    /// Bytes the body owns; a sink may take them.
    Owned(&'a mut Vec<u8>),
    /// Shared bytes (a `Bytes` body, or a prepared body's, which its owner keeps).
    Shared(&'a Bytes),
}

impl BodyBytes<'_> {
    /// The bytes.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            BodyBytes::Static(b) => b,
            BodyBytes::Owned(v) => v,
            BodyBytes::Shared(b) => b,
        }
    }
}

/// Where a protocol puts a response body. The head has been sent (or buffered) before;
/// the connection frames the body (a length, chunks, DATA frames) and ends it after.
pub(crate) trait BodySink {
    /// Sends in-memory bytes.
    fn bytes(&mut self, data: BodyBytes<'_>) -> io::Result<()>;
    /// Sends `len` bytes of `file` from `offset`. `Ok(false)` when the file held fewer (what
    /// it held was sent): the promised length cannot be met.
    fn file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool>;
    /// Runs a streamed body's writer `f` (of declared length `len`, if any) over this sink.
    /// `Ok(false)` when the body ended early or failed in a way that spoils the message.
    fn stream(&mut self, len: Option<u64>, f: StreamFn) -> io::Result<bool>;
}

/// Sends the body `kind` to `sink`: the one match over the kinds of body. Returns false when
/// the body came out shorter than promised (see [`BodySink::file`]). An empty body or an
/// upgrade sends nothing; a stream's writer is moved out of `kind`.
// Forced inline into each protocol's send: the body is read in place, and an in-memory body
// (the common case) is one arm.
#[inline(always)]
pub(crate) fn send_body<S: BodySink + ?Sized>(kind: &mut Kind, sink: &mut S) -> io::Result<bool> {
    match kind {
        Kind::Empty | Kind::Upgrade(_) => Ok(true),
        Kind::Static(b) => sink.bytes(BodyBytes::Static(b)).map(|()| true),
        Kind::Vec(v) => sink.bytes(BodyBytes::Owned(v)).map(|()| true),
        Kind::Bytes(b) => sink.bytes(BodyBytes::Shared(b)).map(|()| true),
        Kind::File(r) => sink.file(r.file(), r.offset(), r.len()),
        Kind::Prepared(p) => match p.body() {
            PreparedBody::Memory(b) => sink.bytes(BodyBytes::Shared(b)).map(|()| true),
            PreparedBody::File { file, len } => sink.file(file, 0, len),
        },
        Kind::Stream { .. } => {
            let Kind::Stream { len, f } = std::mem::replace(kind, Kind::Empty) else {
                unreachable!()
            };
            sink.stream(len, f)
        }
    }
}

/// Appends `len` bytes of `file` from `offset` to `out` with positional reads (the file's own
/// offset is left alone: it may be shared); returns how many there were (fewer when the file
/// is shorter). The bytes are read into `out`'s spare capacity, not zeroed first (for a large
/// file that `memset` cost as much as the read's own copy). On an error `out` is as it was.
#[inline]
pub(crate) fn append_file(
    out: &mut Vec<u8>,
    file: &File,
    offset: u64,
    len: usize,
) -> io::Result<usize> {
    let start = out.len();
    out.reserve(len);
    let mut got = 0;
    while got < len {
        match read_at_end(out, file, offset + got as u64, len - got) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        }
    }
    Ok(got)
}

/// One `pread` of at most `n` bytes of `file` at `offset` onto the end of `out`, which has
/// room for them; returns how many were read.
fn read_at_end(out: &mut Vec<u8>, file: &File, offset: u64, n: usize) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let offset = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset too large"))?;
    let end = out.len();
    let spare = &mut out.spare_capacity_mut()[..n];
    // SAFETY: `spare` is the vector's unused capacity, `n` bytes of it (the slice above
    // checks that); `pread` writes at most `n` bytes there through the raw pointer (no
    // reference to uninitialised bytes is made), and `file` keeps the descriptor open.
    let got = unsafe { libc::pread(file.as_raw_fd(), spare.as_mut_ptr().cast(), n, offset) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel initialised the `got <= n` bytes after `end`.
    unsafe { out.set_len(end + got as usize) };
    Ok(got as usize)
}

/// A whole body in memory: what [`ResponseBody::collect`] gives.
#[derive(Debug, Default)]
pub struct Collected {
    /// The body's bytes.
    pub bytes: Bytes,
    /// The trailer fields a streamed body set ([`BodyWriter::set_trailers`]).
    pub trailers: Option<HeaderMap>,
}

/// The in-memory sink.
#[derive(Default)]
struct Memory {
    out: Vec<u8>,
    trailers: Option<HeaderMap>,
}

impl StreamSink for Memory {
    fn sink_write(&mut self, data: &[u8], _chunked: bool) -> io::Result<()> {
        self.out.extend_from_slice(data);
        Ok(())
    }
    fn sink_flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl BodySink for Memory {
    fn bytes(&mut self, data: BodyBytes<'_>) -> io::Result<()> {
        self.out.extend_from_slice(data.as_slice());
        Ok(())
    }
    fn file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::OutOfMemory)?;
        Ok(append_file(&mut self.out, file, offset, len)? == len)
    }
    fn stream(&mut self, len: Option<u64>, f: StreamFn) -> io::Result<bool> {
        let cell = std::cell::RefCell::new(std::mem::take(self));
        let mut w = BodyWriter {
            sink: &cell as &std::cell::RefCell<dyn StreamSink>,
            chunked: false,
            remaining: len,
            written: 0,
            trailers: None,
            going_away: None,
        };
        let result = f(&mut w);
        let (complete, trailers) = (w.remaining.unwrap_or(0) == 0, w.trailers.take());
        *self = cell.into_inner();
        self.trailers = trailers;
        result.map(|()| complete)
    }
}

impl ResponseBody {
    /// The whole body in memory, as a client would receive it: in-memory bytes as they are,
    /// a file range read from its file, a stream run with a writer that keeps what it writes
    /// (and its trailers). For an in-process test client, or a cache in front of an
    /// application.
    ///
    /// Errors: the stream's own error; a file that cannot be read, or holds fewer bytes than
    /// the range (`UnexpectedEof`), or a stream that wrote fewer than it declared
    /// (`UnexpectedEof`); an upgrade, which has no body to read (`Unsupported`).
    ///
    /// ```
    /// use std::io::Write;
    /// use fibra_http::ResponseBody;
    ///
    /// let body = ResponseBody::stream(|w| w.write_all(b"made on the fly"));
    /// assert_eq!(&body.collect().unwrap().bytes[..], b"made on the fly");
    /// ```
    pub fn collect(mut self) -> io::Result<Collected> {
        if let Kind::Upgrade(_) = self.kind {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an upgrade has no body to read",
            ));
        }
        let mut sink = Memory::default();
        if !send_body(&mut self.kind, &mut sink)? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "body shorter than its length",
            ));
        }
        Ok(Collected {
            bytes: Bytes::from(sink.out),
            trailers: sink.trailers,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use std::sync::Arc;

    use super::*;
    use crate::response::FileRange;

    #[test]
    fn every_kind_of_body_collects() {
        let bytes = |b: ResponseBody| b.collect().unwrap().bytes;
        assert_eq!(bytes(ResponseBody::empty()), "");
        assert_eq!(bytes("static".into()), "static");
        assert_eq!(bytes(String::from("owned").into()), "owned");
        assert_eq!(bytes(Bytes::from_static(b"shared").into()), "shared");
        let path = std::env::temp_dir().join(format!("fibra-collect-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").unwrap();
        let file = Arc::new(File::open(&path).unwrap());
        assert_eq!(bytes(FileRange::new(file.clone(), 2, 5).into()), "23456");
        let short = ResponseBody::file(FileRange::new(file, 8, 5)).collect();
        assert_eq!(short.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        std::fs::remove_file(&path).unwrap();
        let streamed = ResponseBody::stream(|w| {
            w.write_all(b"a")?;
            w.write_all(b"b")?;
            let mut t = HeaderMap::new();
            t.insert("x-sum", http::HeaderValue::from_static("2"));
            w.set_trailers(t);
            Ok(())
        })
        .collect()
        .unwrap();
        assert_eq!(streamed.bytes, "ab");
        assert_eq!(streamed.trailers.unwrap()["x-sum"], "2");
        let short = ResponseBody::stream_sized(3, |w| w.write_all(b"a")).collect();
        assert_eq!(short.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let failed = ResponseBody::stream(|_| Err(io::Error::other("broken"))).collect();
        assert_eq!(failed.unwrap_err().to_string(), "broken");
        let upgrade = ResponseBody::upgrade(|_| {}).collect();
        assert_eq!(upgrade.unwrap_err().kind(), io::ErrorKind::Unsupported);
    }
}
