//! The reactor: per-fd readiness on the edge-triggered driver, registered once per socket.
//!
//! Each socket is registered with the poller of the worker where it is first waited on, for
//! read and write at once, edge-triggered, and never modified again: no system call per wait. Its
//! [`IoState`] remembers readiness between events, so an operation only parks when the socket
//! is known to be drained, and a short read marks it drained without an extra `EAGAIN` read.
//!
//! Readiness is a word of flags plus an event counter ("tick"). An operation clears a flag only
//! if no event arrived since it looked (compare-and-swap on the whole word), so an edge that
//! lands between the syscall and the clear is never lost, even across threads.

mod spin;
mod waiters;

use crate::driver::Event;
use spin::SpinLock;
use std::io;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::sync::Arc;
pub(crate) use waiters::Identity;
use waiters::Waiters;

/// Direction of an operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dir {
    Read,
    Write,
}

impl Dir {
    fn bit(self) -> usize {
        match self {
            Dir::Read => READABLE,
            Dir::Write => WRITABLE,
        }
    }

    fn closed_bit(self) -> usize {
        match self {
            Dir::Read => READ_CLOSED,
            Dir::Write => WRITE_CLOSED,
        }
    }
}

const READABLE: usize = 1;
const WRITABLE: usize = 2;
/// The peer closed its side or the socket failed: reads stay ready (EOF or the error) forever,
/// even after a short read, because no further edge will come.
const READ_CLOSED: usize = 4;
/// Writing is over (error or shut down): writes stay ready and report it.
const WRITE_CLOSED: usize = 8;
const TICK: usize = 16;

// The driver reports readiness in these bits, so an event applies with one `or`.
const _: () = {
    use crate::driver::Ready;
    assert!(Ready::READABLE.bits() == READABLE);
    assert!(Ready::WRITABLE.bits() == WRITABLE);
    assert!(Ready::READ_CLOSED.bits() == READ_CLOSED | READABLE);
    assert!(Ready::WRITE_CLOSED.bits() == WRITE_CLOSED | WRITABLE);
};

/// The poller's reference to an [`IoState`]: `Arc::into_raw` of it, used as the driver's
/// token.
pub(crate) type Token = crate::driver::Token;

/// Readiness and waiters of one registered socket.
///
/// # Waiter protocol
/// Only fibers wait here (a plain thread waits in `poll(2)`, see `net::evented`). A fiber
/// registers itself for a direction under the `waiters` lock, after checking under that lock
/// that the direction is not ready ([`IoState::add_waiter`]). Any number of fibers may wait
/// on one direction (several acceptors on one listener, a reader in each of two fibers): the
/// first in an inline slot, the others in a list. An event for a direction removes and wakes
/// all of them ([`IoState::on_event`]); each then retries its operation, and those that find
/// nothing register again. A fiber whose wait timed out removes its own entry
/// ([`IoState::after_wait_of`]). The task layer stores an `Arc<Task>` as the waiter `W`, so an
/// entry left behind by a fiber that unwound out of its wait (cancellation) costs a spurious
/// wake-up, never a dangling pointer. The reactor itself knows nothing of fibers: it keeps
/// waiters of type `W`, named by their [`Identity`], and hands them back to be woken; parking
/// (`sched::wait_io`) and waking are the task layer's.
pub(crate) struct IoState<W> {
    /// READABLE | WRITABLE flags, plus an event counter in the bits above them.
    readiness: AtomicUsize,
    waiters: SpinLock<Waiters<W>>,
}

/// Hands every waiter in `woken` to `wake`.
#[cold]
fn wake_all<W>(woken: Vec<W>, mut wake: impl FnMut(&W)) {
    for w in woken {
        wake(&w);
    }
}

impl<W: Identity> IoState<W> {
    /// A new state; both directions start ready so the first operation is tried directly.
    pub(crate) fn new() -> Arc<IoState<W>> {
        Arc::new(IoState {
            readiness: AtomicUsize::new(READABLE | WRITABLE),
            waiters: SpinLock::new(Waiters::default()),
        })
    }

    /// The readiness word, to pass back to [`IoState::clear`].
    pub(crate) fn snapshot(&self) -> usize {
        self.readiness.load(Acquire)
    }

    /// Whether `snapshot` says `dir` is ready.
    pub(crate) fn is_ready(snapshot: usize, dir: Dir) -> bool {
        snapshot & dir.bit() != 0
    }

    /// Marks `dir` not ready, unless an event arrived since `snapshot` was taken.
    pub(crate) fn clear(&self, snapshot: usize, dir: Dir) {
        if snapshot & dir.closed_bit() != 0 {
            return;
        }
        let _ = self
            .readiness
            .compare_exchange(snapshot, snapshot & !dir.bit(), AcqRel, Acquire);
    }

    /// Marks `dir` not ready and not closed, unless an event arrived since `snapshot` was
    /// taken. For a datagram socket, whose error (an ICMP report on a connected UDP socket)
    /// ends nothing: the operation that returns it consumes it, and one that then finds
    /// nothing proves the direction idle. Kept closed, the direction would stay ready and a
    /// waiting fiber would retry forever without parking.
    pub(crate) fn clear_closed_too(&self, snapshot: usize, dir: Dir) {
        let _ = self.readiness.compare_exchange(
            snapshot,
            snapshot & !(dir.bit() | dir.closed_bit()),
            AcqRel,
            Acquire,
        );
    }

    /// Registers the waiter named `id` (made by `waiter` if it is not registered already) for
    /// `dir`, unless `dir` is ready (false).
    #[inline(always)]
    pub(crate) fn add_waiter(&self, dir: Dir, id: usize, waiter: impl FnOnce() -> W) -> bool {
        let mut w = self.waiters.lock();
        if self.readiness.load(Acquire) & dir.bit() != 0 {
            return false;
        }
        w.add(dir, id, waiter);
        true
    }

    /// After a wait registered by [`IoState::add_waiter`] ended: `TimedOut` if the deadline
    /// passed before `dir` became ready (the registration is removed), otherwise `Ok` (which
    /// may be a spurious wake-up: look at the readiness again).
    #[inline(always)]
    pub(crate) fn after_wait_of(&self, id: usize, dir: Dir, timed_out: bool) -> io::Result<()> {
        if timed_out && self.readiness.load(Acquire) & dir.bit() == 0 {
            let mut w = self.waiters.lock();
            w.remove(dir, id);
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                match dir {
                    Dir::Read => "fibra: read timed out",
                    Dir::Write => "fibra: write timed out",
                },
            ));
        }
        Ok(())
    }

    /// Applies one readiness event to the state its token names and hands each waiter it
    /// ends to `wake`.
    pub(crate) fn on_event(event: Event, mut wake: impl FnMut(&W)) {
        let ptr = event.token as *const IoState<W>;
        // SAFETY: every non-waker token registered with a worker's poller is `Arc::into_raw` of
        // an IoState, and the poller's reference is only released (see `release`) after the
        // socket was closed and all events harvested before the close have been handled — on
        // this same thread, which is now handling this event.
        let state = unsafe { &*ptr };
        // The driver's flags are this state's bits (checked below `WRITE_CLOSED`).
        let bits = event.ready.bits();
        let mut cur = state.readiness.load(Acquire);
        loop {
            let next = (cur.wrapping_add(TICK)) | bits;
            match state
                .readiness
                .compare_exchange_weak(cur, next, AcqRel, Acquire)
            {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        let (reader, writer, more) = state.waiters.lock().take(bits);
        if let Some(r) = reader {
            wake(&r);
        }
        if let Some(wr) = writer {
            wake(&wr);
        }
        // Rare: several fibers waiting on one direction.
        if let Some(more) = more {
            wake_all(more, wake);
        }
    }

    /// Turns a state into the token that the poller holds (one strong reference).
    pub(crate) fn token_of(state: &Arc<IoState<W>>) -> Token {
        Arc::into_raw(state.clone()) as usize
    }

    /// Drops the poller's reference behind `token`.
    pub(crate) fn release(token: Token) {
        // SAFETY: `token` came from `token_of` (Arc::into_raw) and each token is released
        // once, by the registration's drop, after the socket was closed.
        drop(unsafe { Arc::from_raw(token as *const IoState<W>) });
    }
}
