//! The driver: the readiness backend of one worker, behind a narrow interface.
//!
//! Everything that talks to the kernel's readiness API lives in this module; the scheduler
//! (`worker`), the per-socket readiness state (`reactor`) and the sockets (`net`) only use
//! the types below. The backend is chosen at compile time (today [`epoll`], through `mio`), so
//! calls cost what a direct call costs: no trait object, no function pointer. Another backend
//! (io_uring's poll mode, say) is one more file here exporting the same names, selected with a
//! `cfg` on the `use` below.
//!
//! # Interface
//! - [`Driver`]: owned by one worker thread. `Driver::new()` makes a driver and its
//!   [`Handle`]; [`Driver::wait`] blocks until an event, a [`Handle::wake`] or the timeout,
//!   and fills an [`Events`] buffer, whose [`Events::iter`] yields each [`Event`] (a
//!   [`Token`] and its [`Ready`] flags).
//! - [`Handle`]: shared by every thread (`Send + Sync`). [`Handle::register`] adds a file
//!   descriptor with a token, [`Handle::deregister`] takes it out, [`Handle::wake`] ends the
//!   worker's current or next `wait` from any thread.
//!
//! # Contract every backend keeps
//! - **Readiness, edge-triggered.** A descriptor is registered once, for reading and writing
//!   at once, and never modified. An event reports that readiness *changed* towards ready
//!   (data arrived, buffer space freed, the peer closed, an error); it is not repeated while
//!   the descriptor stays ready. The caller keeps the readiness between events (the reactor's
//!   `IoState`) and clears it only when an operation returns `WouldBlock` or proves the
//!   descriptor drained. [`Ready`] carries `READ_CLOSED`/`WRITE_CLOSED` for a closed peer or
//!   a failed socket (an error sets both), each together with the direction's ready flag;
//!   after those no further edge may come.
//! - **Spurious events are allowed**; lost edges are not: an edge that happens while the
//!   descriptor is registered is reported by a later `wait`.
//! - **Tokens belong to the caller.** A token is an opaque `usize` (the reactor uses
//!   `Arc::into_raw` of the socket's state); the driver never dereferences it and hands it
//!   back unchanged in events. [`WAKE_TOKEN`] (`usize::MAX`) is reserved: the driver uses it
//!   for its own waker and never reports it, and no pointer equals it.
//! - **Deregister before release.** The caller must [`Handle::deregister`] a descriptor
//!   before it closes it and releases what its token names: closing alone does not take it
//!   out of an epoll set when another descriptor shares the open file description (a `dup`, a
//!   `try_clone`), and the kernel would go on reporting the released token. Events already
//!   harvested by a `wait` may still name the token: the caller releases it only once no
//!   harvested event can be pending (on the worker, between two rounds of events).
//!   Deregistering a descriptor that is not registered fails and changes nothing.
//! - **Threads.** `register`/`deregister`/`wake` may be called from any thread; `wait` only
//!   from the worker that owns the `Driver`. `wake` is cheap and idempotent: wakes that arrive
//!   before a `wait` make it return at once, several collapse into one.
//! - **Timeouts.** `wait(None)` blocks until an event or a wake; `wait(Some(d))` returns after
//!   at most about `d` (rounded up to the backend's resolution), `Some(ZERO)` only collects
//!   what is pending. The caller derives the timeout from its timer heap. `Interrupted` is
//!   returned as an error; the caller treats it as an empty round.

mod epoll;

pub(crate) use epoll::{Driver, Events, Handle};

/// The caller's name for a registered descriptor, handed back in its events.
pub(crate) type Token = usize;

/// The token a backend keeps for its own waker; never a registered descriptor's.
pub(crate) const WAKE_TOKEN: Token = usize::MAX;

/// What one event says became ready. The flags are the bits the reactor keeps per socket, so
/// applying an event is one `or` (a backend folds its own flags into them once, as it reads
/// the event).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Ready(u8);

impl Ready {
    /// Reading may make progress.
    pub(crate) const READABLE: Ready = Ready(1);
    /// Writing may make progress.
    pub(crate) const WRITABLE: Ready = Ready(2);
    /// The peer closed its writing side, or the socket failed: reads reach EOF or the error.
    /// Always set together with `READABLE`.
    pub(crate) const READ_CLOSED: Ready = Ready(4 | 1);
    /// Writing is over: the peer is gone, the socket was shut down for writing, or it failed.
    /// Always set together with `WRITABLE`.
    pub(crate) const WRITE_CLOSED: Ready = Ready(8 | 2);

    /// The flags as bits: `READABLE` 1, `WRITABLE` 2, read-closed 4, write-closed 8.
    #[inline(always)]
    pub(crate) const fn bits(self) -> usize {
        self.0 as usize
    }
}

impl std::ops::BitOr for Ready {
    type Output = Ready;

    #[inline(always)]
    fn bitor(self, other: Ready) -> Ready {
        Ready(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for Ready {
    #[inline(always)]
    fn bitor_assign(&mut self, other: Ready) {
        self.0 |= other.0;
    }
}

/// One readiness event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    /// The token the descriptor was registered with.
    pub(crate) token: Token,
    /// What became ready.
    pub(crate) ready: Ready,
}
