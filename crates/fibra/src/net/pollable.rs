//! [`Pollable`]: any non-blocking descriptor (an inotify instance, a pipe, an eventfd, a
//! timerfd, a socket made elsewhere) registered with the worker's poller, so that a fiber can
//! wait for it to become readable or writable the way fibra's own sockets do.
//!
//! The operations are the sockets' own (`Evented`): registered lazily with the poller of the
//! worker where a fiber first uses it, edge-triggered, and a readiness word the reactor keeps.
//! That word makes [`Pollable::try_read_with`] free when nothing has arrived: it answers
//! `WouldBlock` from memory, without a system call, until the driver reports an edge. On a
//! plain thread the same calls wait in `poll(2)`.

use super::evented::Evented;
use crate::reactor::Dir;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// A non-blocking descriptor whose readiness fibers can wait for.
///
/// `T` owns the descriptor (a `File`, an `OwnedFd`, …); dropping the `Pollable` takes the
/// descriptor out of its poller, then drops `T`. The descriptor is registered with the runtime
/// where a fiber first uses it, and is meant to be used within that runtime.
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
///
/// fibra::run(|| {
///     let (a, mut b) = UnixStream::pair().unwrap();
///     let a = fibra::net::Pollable::new(a).unwrap();
///     let writer = fibra::spawn(move || b.write_all(b"ping").unwrap());
///     let mut buf = [0u8; 4];
///     // Parks this fiber until the pair's other end has written.
///     let n = a.read_with(|mut s| s.read(&mut buf)).unwrap();
///     assert_eq!(&buf[..n], b"ping");
///     writer.join().unwrap();
/// });
/// ```
pub struct Pollable<T: AsRawFd> {
    inner: Evented<T>,
}

impl<T: AsRawFd> Pollable<T> {
    /// Wraps `io`, switching its descriptor to non-blocking mode (`O_NONBLOCK`).
    pub fn new(io: T) -> io::Result<Pollable<T>> {
        set_nonblocking(io.as_raw_fd())?;
        Ok(Pollable {
            inner: Evented::new(io),
        })
    }

    /// The wrapped descriptor's owner. Operations on it directly bypass the readiness word:
    /// use the `*_with` methods for anything that may return `WouldBlock`.
    pub fn get_ref(&self) -> &T {
        &self.inner.io
    }

    /// Limits how long [`read_with`](Pollable::read_with) and
    /// [`readable`](Pollable::readable) wait (they then fail with `TimedOut`); `None` waits
    /// forever.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, t)
    }

    /// Limits how long [`write_with`](Pollable::write_with) waits; `None` waits forever.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, t)
    }

    /// Runs `op` (a read of some kind) until it returns anything but `WouldBlock`, parking
    /// the fiber until the descriptor is readable in between.
    pub fn read_with<R>(&self, op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        self.inner.op(Dir::Read, op, |_| false)
    }

    /// Runs `op` (a write of some kind) until it returns anything but `WouldBlock`, parking
    /// the fiber until the descriptor is writable in between.
    pub fn write_with<R>(&self, op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        self.inner.op(Dir::Write, op, |_| false)
    }

    /// Runs `op` once if the descriptor may be readable, never waiting. Once `op` has
    /// returned `WouldBlock`, later calls return `WouldBlock` without running it (and without
    /// a system call) until the poller reports the descriptor readable again. So a caller
    /// that reads until `WouldBlock` whenever this succeeds sees every edge, at the cost of
    /// one atomic load while nothing arrives.
    pub fn try_read_with<R>(&self, op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        self.inner.try_op(Dir::Read, op, |_| false)
    }

    /// Waits until the descriptor is (believed) readable: returns at once unless an operation
    /// has found it drained since the last readiness event.
    pub fn readable(&self) -> io::Result<()> {
        self.inner.ready(Dir::Read)
    }

    /// Waits until the descriptor is (believed) writable.
    pub fn writable(&self) -> io::Result<()> {
        self.inner.ready(Dir::Write)
    }
}

impl<T: AsRawFd> AsRawFd for Pollable<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.io.as_raw_fd()
    }
}

impl<T: AsRawFd> std::fmt::Debug for Pollable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pollable")
            .field("fd", &self.inner.io.as_raw_fd())
            .finish()
    }
}

/// Sets `O_NONBLOCK` on `fd`, keeping its other status flags.
fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL takes no argument and only reads the descriptor's status flags; an
    // invalid fd makes it fail with EBADF, which is reported.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK != 0 {
        return Ok(());
    }
    // SAFETY: F_SETFL with an int argument only changes the descriptor's status flags.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
