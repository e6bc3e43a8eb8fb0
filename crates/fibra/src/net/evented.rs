//! `Evented<S>`: a non-blocking socket with blocking-style operations, shared by every socket
//! type. Inside a fiber an operation that would block parks the fiber on the reactor; on a plain
//! thread it waits in `poll(2)`.
//!
//! The socket is registered lazily, with the poller of the worker where a fiber first waits on
//! it (for an accepted connection: the worker that runs its fiber), and stays there. A plain
//! thread using a registered socket (handed to `spawn_blocking` or `std::thread`) still waits
//! in `poll(2)`, and leaves the readiness word as it found it unless an operation proved the
//! socket drained.
//!
//! Dropping the socket takes it out of its driver (`Handle::deregister`) before closing it:
//! closing alone does not, if another descriptor shares the open file description (a `dup`, a
//! `try_clone` made before [`from_std`](super::TcpStream::from_std)), and the driver would go
//! on reporting the token of the released state (see the contract in `driver`).

use crate::reactor::{Dir, Token};
use crate::sched::{self, is_home, wait_io, with_local, IoState, Message, RtShared, Wait};
use crate::sync::Notify;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A socket plus its reactor registration and timeouts.
///
/// `DATAGRAM` is true for a socket whose errors are transient (UDP: an ICMP report is returned
/// once, by the next operation, and the socket goes on working), false for a stream, whose
/// error or end of file is final. A stream's direction stays ready once the driver reported
/// it closed; a datagram socket's goes back to waiting once an operation finds nothing
/// ([`IoState::clear_closed_too`]).
///
/// Field order matters: `Drop` deregisters `io`, then `io` is closed before `reg` releases
/// the poller's reference.
pub(crate) struct Evented<S: AsRawFd, const DATAGRAM: bool = false> {
    pub(crate) io: S,
    reg: OnceLock<Registration>,
    /// Read timeout in nanoseconds, 0 for none.
    read_timeout: AtomicU64,
    /// Write timeout in nanoseconds, 0 for none.
    write_timeout: AtomicU64,
}

struct Registration {
    state: Arc<IoState>,
    token: Token,
    home: usize,
    rt: Arc<RtShared>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if is_home(&self.rt, self.home) {
            // On the home worker, outside event handling: no harvested event can name it.
            IoState::release(self.token);
        } else {
            // The home worker releases it between two rounds of events (also while it cancels
            // its fibers at shutdown, when it handles no events at all); once it has stopped,
            // the runtime's drop (or, after that, `send` itself) releases it.
            self.rt.workers[self.home].send(Message::Release(self.token));
        }
    }
}

impl<S: AsRawFd, const DATAGRAM: bool> Drop for Evented<S, DATAGRAM> {
    fn drop(&mut self) {
        if let Some(reg) = self.reg.get() {
            let fd = self.io.as_raw_fd();
            // Fails only if the fd is not registered there (the registration race in
            // `register` deregistered the loser already), which leaves nothing to do.
            let _ = reg.rt.workers[reg.home].driver.deregister(fd);
        }
    }
}

fn to_nanos(d: Option<Duration>) -> io::Result<u64> {
    match d {
        None => Ok(0),
        Some(d) if d.is_zero() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot set a 0 duration timeout",
        )),
        Some(d) => Ok(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
    }
}

fn from_nanos(n: u64) -> Option<Duration> {
    (n != 0).then(|| Duration::from_nanos(n))
}

// `op` and `try_op` are forced inline: they are the whole of a stream's read and write, on the
// path every wake-up of a connection runs.
impl<S: AsRawFd, const DATAGRAM: bool> Evented<S, DATAGRAM> {
    pub(crate) fn new(io: S) -> Self {
        Evented {
            io,
            reg: OnceLock::new(),
            read_timeout: AtomicU64::new(0),
            write_timeout: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_timeout(&self, dir: Dir, d: Option<Duration>) -> io::Result<()> {
        let n = to_nanos(d)?;
        match dir {
            Dir::Read => self.read_timeout.store(n, Relaxed),
            Dir::Write => self.write_timeout.store(n, Relaxed),
        }
        Ok(())
    }

    pub(crate) fn timeout(&self, dir: Dir) -> Option<Duration> {
        from_nanos(self.timeout_ns(dir))
    }

    /// The timeout of `dir` in nanoseconds, as stored (0: none).
    #[inline]
    fn timeout_ns(&self, dir: Dir) -> u64 {
        match dir {
            Dir::Read => self.read_timeout.load(Relaxed),
            Dir::Write => self.write_timeout.load(Relaxed),
        }
    }

    /// The tick at which a wait in `dir` that starts now times out (0: no timeout).
    #[inline]
    fn deadline(&self, dir: Dir) -> u64 {
        let ns = self.timeout_ns(dir);
        if ns == 0 {
            0
        } else {
            crate::timer::ticks_after(ns)
        }
    }

    /// The registration, made now with the current worker if there is none yet.
    /// `None` on a plain thread.
    #[inline]
    fn registration(&self) -> io::Result<Option<&Registration>> {
        match self.reg.get() {
            Some(r) => Ok(Some(r)),
            None => self.register(),
        }
    }

    #[cold]
    fn register(&self) -> io::Result<Option<&Registration>> {
        if !sched::in_fiber() {
            return Ok(None);
        }
        let made = with_local(|w| -> io::Result<Registration> {
            let state = IoState::new();
            let token = IoState::token_of(&state);
            let fd = self.io.as_raw_fd();
            let res = w.rt.workers[w.index].driver.register(fd, token);
            if let Err(e) = res {
                IoState::release(token);
                return Err(e);
            }
            Ok(Registration {
                state,
                token,
                home: w.index,
                rt: w.rt.clone(),
            })
        })?;
        if let Err(lost) = self.reg.set(made) {
            // Two fibers raced to register this socket and the other won: take ours out of
            // this worker's poller before its token is released.
            let fd = self.io.as_raw_fd();
            with_local(|w| w.rt.workers[w.index].driver.deregister(fd))?;
            drop(lost);
        }
        Ok(self.reg.get())
    }

    /// Marks `dir` drained (see the type's doc for `DATAGRAM`), unless an event arrived since
    /// `snap` was taken.
    #[inline(always)]
    fn clear(reg: &Registration, snap: usize, dir: Dir) {
        if DATAGRAM {
            reg.state.clear_closed_too(snap, dir);
        } else {
            reg.state.clear(snap, dir);
        }
    }

    /// Runs `op` until it does not return `WouldBlock`, waiting for readiness in between.
    /// `drained(&r)` says a successful result proves the socket has nothing more to give
    /// (a short read), so the next call parks without trying.
    #[inline(always)]
    pub(crate) fn op<R>(
        &self,
        dir: Dir,
        mut op: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> io::Result<R> {
        let Some(reg) = self.registration()? else {
            return self.op_blocking(dir, op);
        };
        let mut deadline = 0u64;
        loop {
            let snap = reg.state.snapshot();
            if IoState::is_ready(snap, dir) {
                match op(&self.io) {
                    Ok(r) => {
                        if drained(&r) {
                            Self::clear(reg, snap, dir);
                        }
                        return Ok(r);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Self::clear(reg, snap, dir),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
            if deadline == 0 {
                deadline = self.deadline(dir);
            }
            let waited = sched::with_current(|task| {
                task.map(|task| wait_io(&reg.state, task, dir, deadline))
            });
            match waited {
                Some(result) => result?,
                // A plain thread, with a socket a fiber registered.
                None => return self.op_blocking(dir, op),
            }
        }
    }

    /// Runs `op` once if `dir` may be ready, never waiting: `WouldBlock` when it is not.
    /// After a result `drained` accepts (a short read), or a `WouldBlock`, the next call
    /// returns `WouldBlock` without a system call until the reactor reports readiness again.
    #[inline(always)]
    pub(crate) fn try_op<R>(
        &self,
        dir: Dir,
        mut op: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> io::Result<R> {
        let reg = self.registration()?;
        let snap = match reg {
            Some(reg) => {
                let snap = reg.state.snapshot();
                if !IoState::is_ready(snap, dir) {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Some((reg, snap))
            }
            None => None,
        };
        loop {
            let r = op(&self.io);
            let empty = match &r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => e.kind() == io::ErrorKind::WouldBlock,
                Ok(v) => drained(v),
            };
            if let (true, Some((reg, snap))) = (empty, snap) {
                Self::clear(reg, snap, dir);
            }
            return r;
        }
    }

    /// Waits until `dir` is (believed) ready, for at most the direction's timeout
    /// (`TimedOut`). Returns at once if no operation has found it drained since the last
    /// readiness event.
    pub(crate) fn ready(&self, dir: Dir) -> io::Result<()> {
        let Some(reg) = self.registration()? else {
            return self.ready_blocking(dir);
        };
        let mut deadline = 0u64;
        loop {
            if IoState::is_ready(reg.state.snapshot(), dir) {
                return Ok(());
            }
            if deadline == 0 {
                deadline = self.deadline(dir);
            }
            let waited = sched::with_current(|task| {
                task.map(|task| wait_io(&reg.state, task, dir, deadline))
            });
            match waited {
                Some(result) => result?,
                None => return self.ready_blocking(dir),
            }
        }
    }

    /// Waits until `dir` is (believed) ready or `notify` is notified, for at most the
    /// direction's timeout and until `until` if given, whichever ends first (`TimedOut`).
    /// True if it was notified (the notification, or a stored permit, is taken); false if
    /// `dir` is ready. On a plain thread it looks at both every 10 ms (`poll(2)` cannot wait
    /// for a `Notify`).
    pub(crate) fn ready_or_notified(
        &self,
        dir: Dir,
        notify: &Notify,
        until: Option<Instant>,
    ) -> io::Result<bool> {
        let Some(reg) = self.registration()? else {
            return self.ready_or_notified_polling(dir, notify, until);
        };
        let mut place = notify.place();
        // Computed when first needed: a wait that ends at once reads no clock.
        let mut deadline = None;
        loop {
            if notify.take_or_register(&mut place) {
                return Ok(true);
            }
            if IoState::is_ready(reg.state.snapshot(), dir) {
                // `place` leaves as it drops, passing on a notification that came meanwhile.
                return Ok(false);
            }
            let deadline = *deadline.get_or_insert_with(|| {
                let timeout = self.deadline(dir);
                let until = until.map_or(0, crate::timer::ticks_at);
                match (timeout, until) {
                    (0, t) | (t, 0) => t,
                    (a, b) => a.min(b),
                }
            });
            // A notification wakes this fiber as a spurious wake-up of the I/O wait.
            let waited = sched::with_current(|task| {
                task.map(|task| wait_io(&reg.state, task, dir, deadline))
            });
            match waited {
                Some(result) => result?,
                None => {
                    drop(place);
                    return self.ready_or_notified_polling(dir, notify, until);
                }
            }
        }
    }

    /// [`Evented::ready_or_notified`] on a plain thread: `poll(2)` in 10 ms slices, looking
    /// at `notify` between them.
    fn ready_or_notified_polling(
        &self,
        dir: Dir,
        notify: &Notify,
        until: Option<Instant>,
    ) -> io::Result<bool> {
        let timeout = self.timeout(dir).and_then(crate::time::deadline_after);
        let deadline = match (timeout, until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        loop {
            {
                let mut place = notify.place();
                if notify.take_or_register(&mut place) {
                    return Ok(true);
                }
            }
            let ms = match poll_ms(deadline)? {
                -1 => 10,
                ms => ms.min(10),
            };
            if poll_fd(self.io.as_raw_fd(), dir, ms)? {
                return Ok(false);
            }
        }
    }

    /// [`Evented::ready`] as a [`Wait`] for a fiber made of steps: the deadline (from the
    /// direction's timeout) starts now. On a plain thread it waits right away.
    pub(crate) fn when_ready(&self, dir: Dir) -> Wait {
        match self.registration() {
            Err(e) => Wait::now(Err(e)),
            Ok(None) => Wait::now(self.ready_blocking(dir)),
            Ok(Some(reg)) => Wait::io(reg.state.clone(), dir, self.deadline(dir)),
        }
    }

    /// [`Evented::ready`] on a plain thread, in `poll(2)`.
    fn ready_blocking(&self, dir: Dir) -> io::Result<()> {
        let deadline = self.timeout(dir).and_then(crate::time::deadline_after);
        loop {
            let ms = poll_ms(deadline)?;
            if poll_fd(self.io.as_raw_fd(), dir, ms)? {
                return Ok(());
            }
        }
    }

    /// `op` on a plain thread: try, and wait in `poll(2)` on `WouldBlock`.
    fn op_blocking<R>(&self, dir: Dir, mut op: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
        let deadline = self.timeout(dir).and_then(crate::time::deadline_after);
        loop {
            match op(&self.io) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
            let ms = poll_ms(deadline)?;
            poll_fd(self.io.as_raw_fd(), dir, ms)?;
        }
    }
}

/// The `poll(2)` timeout left until `deadline` (-1: none), or `TimedOut` once it has passed.
fn poll_ms(deadline: Option<Instant>) -> io::Result<i32> {
    let Some(at) = deadline else { return Ok(-1) };
    let left = at.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "fibra: operation timed out",
        ));
    }
    Ok(left.as_millis().clamp(1, i32::MAX as u128) as i32)
}

/// Waits in `poll(2)` until `fd` is ready for `dir` or `ms` milliseconds pass (-1: forever).
/// True if it is ready (or failed: the next operation reports it).
pub(crate) fn poll_fd(fd: RawFd, dir: Dir, ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: match dir {
            Dir::Read => libc::POLLIN,
            Dir::Write => libc::POLLOUT,
        },
        revents: 0,
    };
    // SAFETY: `pfd` is a valid, initialised pollfd array of length 1 for the call's duration.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(n > 0)
}
