//! TCP: [`TcpListener`] and [`TcpStream`], with `std::net`'s shape.

use super::evented::Evented;
use super::sys;
use crate::reactor::Dir;
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

/// Options for [`TcpListener::bind_with`].
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// `SO_REUSEPORT`: several listeners (one per worker) on one port, balanced by the kernel.
    /// Default false.
    pub reuse_port: bool,
    /// `SO_REUSEADDR`. Default true.
    pub reuse_addr: bool,
    /// The `listen(2)` backlog. Default 1024.
    pub backlog: i32,
    /// Set `TCP_NODELAY` on accepted streams. Default false.
    pub nodelay: bool,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            reuse_port: false,
            reuse_addr: true,
            backlog: 1024,
            nodelay: false,
        }
    }
}

/// A TCP listening socket; `accept` parks the fiber until a connection arrives.
///
/// ```
/// use std::io::{Read, Write};
/// fibra::run(|| {
///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let server = fibra::spawn(move || {
///         let (mut s, _) = listener.accept().unwrap();
///         let mut buf = [0; 4];
///         s.read_exact(&mut buf).unwrap();
///         s.write_all(&buf).unwrap();
///     });
///     let mut c = fibra::net::TcpStream::connect(addr).unwrap();
///     c.write_all(b"ping").unwrap();
///     let mut back = [0; 4];
///     c.read_exact(&mut back).unwrap();
///     assert_eq!(&back, b"ping");
///     server.join().unwrap();
/// });
/// ```
pub struct TcpListener {
    inner: Evented<std::net::TcpListener>,
    nodelay: bool,
}

impl TcpListener {
    /// Binds to the first address that works, with [`ListenOptions::default`].
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match Self::bind_with(a, &ListenOptions::default()) {
                Ok(l) => return Ok(l),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to bind to")
        }))
    }

    /// Binds to `addr` with explicit options.
    pub fn bind_with(addr: SocketAddr, opts: &ListenOptions) -> io::Result<TcpListener> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(opts.reuse_addr)?;
        if opts.reuse_port {
            socket.set_reuse_port(true)?;
        }
        socket.bind(&addr.into())?;
        socket.listen(opts.backlog)?;
        socket.set_nonblocking(true)?;
        let std: std::net::TcpListener = socket.into();
        Ok(TcpListener {
            inner: Evented::new(std),
            nodelay: opts.nodelay,
        })
    }

    /// Wraps a `std` listener (switched to non-blocking mode).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            inner: Evented::new(listener),
            nodelay: false,
        })
    }

    /// A second descriptor (`dup`) of the same listening socket, with the same `nodelay`
    /// option and no timeout. It is registered on its own, with the poller of the worker where
    /// a fiber first waits on it: one listener can so feed fibers on several workers, each
    /// woken by its own worker when a connection arrives (the one that accepts first gets it,
    /// the others find nothing and wait again).
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        Ok(TcpListener {
            inner: Evented::new(self.inner.io.try_clone()?),
            nodelay: self.nodelay,
        })
    }

    /// Sets `TCP_NODELAY` on the streams it accepts from now on (as
    /// [`ListenOptions::nodelay`] does for a listener it binds), e.g. for a listener taken over
    /// with [`from_std`](Self::from_std).
    pub fn set_nodelay_on_accept(&mut self, on: bool) {
        self.nodelay = on;
    }

    /// Waits for a connection. Errors such as `EMFILE` are returned, not retried.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, addr) = self.inner.op(Dir::Read, sys::accept_tcp, |_| false)?;
        if self.nodelay {
            s.set_nodelay(true)?;
        }
        Ok((TcpStream::from_nonblocking(s), addr))
    }

    /// Limits how long `accept` waits (it then fails with `TimedOut`); `None` waits forever.
    pub fn set_accept_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, t)
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.local_addr()
    }
}

impl std::fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpListener")
            .field("addr", &self.local_addr().ok())
            .field("fd", &self.inner.io.as_raw_fd())
            .finish()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.io.as_raw_fd()
    }
}

/// A TCP connection with blocking-style `Read`/`Write` that park only the calling fiber.
///
/// `Read` and `Write` are implemented for `&TcpStream` too, so one fiber can read while another
/// writes through an `Arc<TcpStream>`. Timeouts are an atomic store (no system call), and a
/// timed-out operation fails with `io::ErrorKind::TimedOut`.
pub struct TcpStream {
    inner: Evented<std::net::TcpStream>,
}

pub(crate) fn short(want: usize) -> impl Fn(&usize) -> bool {
    move |&n| n > 0 && n < want
}

/// Fails a connection whose two ends are the same address: TCP's simultaneous open lets a
/// socket dialling a local port on which nothing listens connect to itself when the kernel
/// happens to pick that port as its source (it lies in `ip_local_port_range`). Such a
/// connection reads back its own writes, and closed normally it would sit in `TIME_WAIT` on
/// the port, keeping the real server from binding it. So, as Go's `net` package does, it is
/// closed abortively (`SO_LINGER` 0: a reset, no `TIME_WAIT`) and reported as refused, which
/// is what the dial would have got had the kernel picked another port.
///
/// The socket is connected to `addr`, so one `getsockname` tells: its own address is `addr`.
fn refuse_self(s: &std::net::TcpStream, addr: &SocketAddr) -> io::Result<()> {
    match s.local_addr() {
        Ok(local) if local == *addr => {
            let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
            Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("connecting to {addr}: connection refused (the socket connected to itself: nothing listens there)"),
            ))
        }
        _ => Ok(()),
    }
}

impl TcpStream {
    /// Wraps a stream already in non-blocking mode.
    pub(crate) fn from_nonblocking(s: std::net::TcpStream) -> TcpStream {
        TcpStream {
            inner: Evented::new(s),
        }
    }

    /// Opens a connection to the first address that accepts.
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match Self::connect_inner(None, &a, None) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to connect to")
        }))
    }

    /// Opens a connection, failing with `TimedOut` after `timeout`.
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        Self::connect_inner(None, addr, Some(timeout))
    }

    /// Opens a connection from the local address `local` (bound first, as Go's
    /// `Dialer.LocalAddr` or nginx's `proxy_bind`; port 0 lets the kernel pick one), failing
    /// with `TimedOut` after `timeout` if one is given.
    pub fn connect_from(
        local: &SocketAddr,
        addr: &SocketAddr,
        timeout: Option<Duration>,
    ) -> io::Result<TcpStream> {
        Self::connect_inner(Some(local), addr, timeout)
    }

    /// Connects, on a fiber by parking it until the socket is writable, elsewhere by blocking
    /// the thread; either way a socket that connected to itself is refused ([`refuse_self`]).
    fn connect_inner(
        local: Option<&SocketAddr>,
        addr: &SocketAddr,
        timeout: Option<Duration>,
    ) -> io::Result<TcpStream> {
        if !crate::sched::in_fiber() {
            let s = sys::connect_blocking(local, addr, timeout)?;
            refuse_self(&s, addr)?;
            s.set_nonblocking(true)?;
            return Ok(Self::from_nonblocking(s));
        }
        let stream = Self::from_nonblocking(sys::connect_nonblocking(local, addr)?);
        stream.inner.set_timeout(Dir::Write, timeout)?;
        stream.inner.op(
            Dir::Write,
            |s| {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                        Err(io::ErrorKind::WouldBlock.into())
                    }
                    Err(e) => Err(e),
                }
            },
            |_| false,
        )?;
        refuse_self(&stream.inner.io, addr)?;
        stream.inner.set_timeout(Dir::Write, None)?;
        Ok(stream)
    }

    /// Wraps a connected `std` stream (switched to non-blocking mode).
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Ok(Self::from_nonblocking(stream))
    }

    /// Reads without consuming (`MSG_PEEK`), waiting until data or EOF is there.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.op(Dir::Read, |s| s.peek(buf), |_| false)
    }

    /// Reads and drops up to `len` bytes without copying them into memory (`recv` with
    /// `MSG_TRUNC`), waiting as [`read`](std::io::Read::read) does; returns how many were
    /// dropped, 0 at end of stream. For a client that only counts what it receives (a load
    /// generator skipping a response body of known length): the kernel's copy to user space is
    /// most of the cost of receiving a large body.
    pub fn discard(&self, len: usize) -> io::Result<usize> {
        if len == 0 {
            return Ok(0);
        }
        let fd = self.inner.io.as_raw_fd();
        self.inner
            .op(Dir::Read, |_| sys::recv_discard(fd, len), short(len))
    }

    /// Shuts down one or both directions. Shutting down reading wakes a fiber parked in `read`
    /// on this stream (it sees end of file).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.io.shutdown(how)
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.io.set_nodelay(on)
    }

    /// Sets `TCP_CORK`: while on, partial frames are held back (to send a head and a file body
    /// in one packet).
    pub fn set_cork(&self, on: bool) -> io::Result<()> {
        SockRef::from(&self.inner.io).set_cork(on)
    }

    /// Sets the `SO_LINGER` option (`Some(0)` makes `close` send a reset).
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        SockRef::from(&self.inner.io).set_linger(linger)
    }

    /// Limits how long one read waits. `None` (the default) waits forever.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, t)
    }

    /// Limits how long one write waits. `None` (the default) waits forever.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, t)
    }

    /// The read timeout.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.inner.timeout(Dir::Read)
    }

    /// The write timeout.
    pub fn write_timeout(&self) -> Option<Duration> {
        self.inner.timeout(Dir::Write)
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.peer_addr()
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.local_addr()
    }

    /// Takes the pending socket error (`SO_ERROR`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.io.take_error()
    }

    /// Writes all of `buf` with `MSG_MORE`, waiting as needed: the kernel holds a partial last
    /// frame back until the next send without the flag (a [`sendfile`](Self::sendfile) of the
    /// body that follows a response head), so both leave in full frames — what two `TCP_CORK`
    /// toggles do, without their two system calls.
    pub fn write_all_more(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let want = buf.len();
            let n = self.inner.op(
                Dir::Write,
                |s| sys::send_more(s.as_raw_fd(), buf),
                short(want),
            )?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Sends `len` bytes of `file` from `offset` with `sendfile(2)`, waiting as needed, and
    /// returns the bytes sent: less than `len` when the file is shorter, or when an error
    /// (a reset, a timeout) came after some bytes had left — as with `write`, the bytes that
    /// left are reported and the next call returns the error (or `0` at the file's end).
    pub fn sendfile(&self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        let out = self.inner.io.as_raw_fd();
        let inp = file.as_raw_fd();
        let mut off = i64::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
        let mut sent = 0u64;
        while sent < len {
            let chunk = (len - sent).min(0x7fff_f000) as usize;
            let n = self.inner.op(
                Dir::Write,
                |_| {
                    // SAFETY: both descriptors are open for the duration of the call (owned by
                    // `self` and borrowed from `file`), and `off` is a valid i64 the kernel
                    // updates in place.
                    let r = unsafe { libc::sendfile(out, inp, &mut off, chunk) };
                    if r < 0 {
                        Err(io::Error::last_os_error())
                    } else {
                        Ok(r as usize)
                    }
                },
                short(chunk),
            );
            let n = match n {
                Ok(n) => n,
                // What left before the error is reported (as `write` does); the next call
                // meets the error again.
                Err(_) if sent > 0 => break,
                Err(e) => return Err(e),
            };
            if n == 0 {
                break;
            }
            sent += n as u64;
        }
        Ok(sent)
    }
}

impl TcpStream {
    /// Reads what has already arrived, without waiting: `WouldBlock` when nothing has.
    ///
    /// Once a read comes back short (or `WouldBlock`), further calls return `WouldBlock`
    /// without a system call until the reactor sees new data, so a loop of `try_read` and
    /// [`readable`](TcpStream::readable) costs one `read(2)` per arrival, like blocking
    /// reads. Pairs with `readable` to wait in one place and read in another (e.g. on a
    /// different stack, see [`crate::fiber::on_shared_stack`]).
    #[inline(always)]
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner
            .try_op(Dir::Read, |s| sys::recv(s.as_raw_fd(), buf), short(want))
    }

    /// Writes what fits into the socket's send buffer now, or says `WouldBlock`; never waits.
    /// For a last word on a connection about to close (a TLS `close_notify`) that must not
    /// hold up the caller, also where no fiber runs (a destructor at thread exit).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner
            .try_op(Dir::Write, |s| sys::send(s.as_raw_fd(), buf), short(want))
    }

    /// Waits until a read may make progress: data, end of stream or an error has arrived
    /// (as far as the reactor knows; a following [`try_read`](TcpStream::try_read) can still
    /// find nothing and say `WouldBlock`). Honours the read timeout (`TimedOut`). Returns at
    /// once if no read has come back short since the last readiness event.
    pub fn readable(&self) -> io::Result<()> {
        self.inner.ready(Dir::Read)
    }

    /// Waits until a read may make progress (as [`readable`](TcpStream::readable)) or `notify`
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

    /// Waits until a write may make progress (room in the send buffer, or an error) or
    /// `notify` is notified, whichever comes first; honours the write timeout (`TimedOut`).
    /// Returns true if it was notified, false if the stream may be writable. The writing
    /// side of [`readable_or_notified`](TcpStream::readable_or_notified): a fiber that must
    /// not stop reading while its peer is slow to take what it writes.
    pub fn writable_or_notified(&self, notify: &crate::sync::Notify) -> io::Result<bool> {
        self.inner.ready_or_notified(Dir::Write, notify, None)
    }

    /// [`readable`](TcpStream::readable) for a fiber made of steps: the wait, holding no
    /// stack, that [`Wait::then`](crate::fiber::Wait::then) continues. The read timeout
    /// (`TimedOut`) counts from this call. See [`crate::fiber::Step`].
    pub fn when_readable(&self) -> crate::fiber::Wait {
        self.inner.when_ready(Dir::Read)
    }
}

impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner
            .op(Dir::Read, |s| sys::recv(s.as_raw_fd(), buf), short(want))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        self.inner
            .op(Dir::Read, |mut s| s.read_vectored(bufs), short(want))
    }
}

impl Write for &TcpStream {
    #[inline(always)]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let want = buf.len();
        self.inner
            .op(Dir::Write, |s| sys::send(s.as_raw_fd(), buf), short(want))
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

super::io_by_ref!(TcpStream);

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.io.as_raw_fd()
    }
}

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.io.as_fd()
    }
}

impl std::fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpStream")
            .field("peer", &self.peer_addr().ok())
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
