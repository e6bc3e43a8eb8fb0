//! Unix-domain stream sockets: [`UnixListener`] and [`UnixStream`].

use super::evented::Evented;
use super::tcp::short;
use crate::reactor::Dir;
use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// A Unix-domain listening socket.
///
/// ```
/// use std::io::{Read, Write};
/// let path = std::env::temp_dir().join(format!("fibra-doc-{}.sock", std::process::id()));
/// let _ = std::fs::remove_file(&path);
/// let p2 = path.clone();
/// fibra::run(move || {
///     let l = fibra::net::UnixListener::bind(&p2).unwrap();
///     let h = fibra::spawn(move || { let (mut s, _) = l.accept().unwrap(); s.write_all(b"hi").unwrap(); });
///     let mut c = fibra::net::UnixStream::connect(&p2).unwrap();
///     let mut buf = String::new();
///     c.read_to_string(&mut buf).unwrap();
///     assert_eq!(buf, "hi");
///     h.join().unwrap();
/// });
/// let _ = std::fs::remove_file(&path);
/// ```
pub struct UnixListener {
    inner: Evented<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to `path`.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        Ok(UnixListener {
            inner: Evented::new(mio::net::UnixListener::bind(path)?),
        })
    }

    /// Waits for a connection.
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (s, addr) = self.inner.op(Dir::Read, |l| l.accept(), |_| false)?;
        Ok((
            UnixStream {
                inner: Evented::new(s),
            },
            addr,
        ))
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.local_addr()
    }
}

impl std::fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixListener")
            .field("fd", &self.inner.io.as_raw_fd())
            .finish()
    }
}

impl AsRawFd for UnixListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.io.as_raw_fd()
    }
}

/// A Unix-domain stream with blocking-style `Read`/`Write` that park only the calling fiber.
pub struct UnixStream {
    inner: Evented<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`.
    pub fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let std = std::os::unix::net::UnixStream::connect(path)?;
        std.set_nonblocking(true)?;
        Ok(UnixStream {
            inner: Evented::new(mio::net::UnixStream::from_std(std)),
        })
    }

    /// A connected pair.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((
            UnixStream {
                inner: Evented::new(a),
            },
            UnixStream {
                inner: Evented::new(b),
            },
        ))
    }

    /// Shuts down one or both directions.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.io.shutdown(how)
    }

    /// Limits how long one read waits.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, t)
    }

    /// Limits how long one write waits.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, t)
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.peer_addr()
    }
}

impl Read for &UnixStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner.op(Dir::Read, |mut s| s.read(buf), short(want))
    }
}

impl Write for &UnixStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner.op(Dir::Write, |mut s| s.write(buf), short(want))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        self.inner
            .op(Dir::Write, |mut s| s.write_vectored(bufs), short(want))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

super::io_by_ref!(UnixStream);

impl AsRawFd for UnixStream {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.io.as_raw_fd()
    }
}

impl std::fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixStream")
            .field("fd", &self.inner.io.as_raw_fd())
            .finish()
    }
}
