//! Unix-domain stream sockets: [`UnixListener`] and [`UnixStream`].

use super::evented::Evented;
use super::sys;
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
    inner: Evented<std::os::unix::net::UnixListener>,
}

impl UnixListener {
    /// Binds to `path`.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        Ok(UnixListener {
            inner: Evented::new(sys::bind_unix(path.as_ref())?),
        })
    }

    /// Takes over a bound std listener (switched to non-blocking mode here).
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        Ok(UnixListener {
            inner: Evented::new(listener),
        })
    }

    /// Limits how long `accept` waits (it then fails with `TimedOut`); `None` waits forever.
    pub fn set_accept_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, t)
    }

    /// Waits for a connection.
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (s, addr) = self.inner.op(Dir::Read, sys::accept_unix, |_| false)?;
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
    inner: Evented<std::os::unix::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`.
    pub fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let std = std::os::unix::net::UnixStream::connect(path)?;
        std.set_nonblocking(true)?;
        Ok(UnixStream {
            inner: Evented::new(std),
        })
    }

    /// Takes over a connected std stream (switched to non-blocking mode here).
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        Ok(UnixStream {
            inner: Evented::new(stream),
        })
    }

    /// A connected pair.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = sys::unix_pair()?;
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

    /// Reads what has already arrived, without waiting: `WouldBlock` when nothing has. As
    /// [`TcpStream::try_read`](super::TcpStream::try_read): after a short read, further calls
    /// say `WouldBlock` without a system call until the reactor sees new data.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner
            .try_op(Dir::Read, |s| sys::recv(s.as_raw_fd(), buf), short(want))
    }

    /// Waits until a read may make progress (data, end of stream or an error), honouring the
    /// read timeout (`TimedOut`). See [`TcpStream::readable`](super::TcpStream::readable).
    pub fn readable(&self) -> io::Result<()> {
        self.inner.ready(Dir::Read)
    }

    /// Waits until a read may make progress (as [`readable`](UnixStream::readable)) or `notify`
    /// is notified, whichever comes first; honours the read timeout (`TimedOut`). Returns
    /// true if it was notified (taking the notification, or the permit a
    /// [`Notify::notify_one`](crate::sync::Notify::notify_one) stored while nobody waited),
    /// false if the stream may be readable.
    ///
    /// This is the wait of a fiber that owns a connection and also sends what other fibers
    /// hand it: they queue their data and notify, and the owner wakes for either input or
    /// output. On a plain thread it looks at both every 10 ms.
    pub fn readable_or_notified(&self, notify: &crate::sync::Notify) -> io::Result<bool> {
        self.inner.ready_or_notified(Dir::Read, notify, None)
    }

    /// [`readable`](UnixStream::readable) for a fiber made of steps: the wait, holding no
    /// stack, that [`Wait::then`](crate::fiber::Wait::then) continues. See
    /// [`crate::fiber::Step`].
    pub fn when_readable(&self) -> crate::fiber::Wait {
        self.inner.when_ready(Dir::Read)
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
