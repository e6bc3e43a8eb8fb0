//! Cancellation of fibers at runtime shutdown: [`Cancelled`], [`is_cancelled`] and the
//! worker's cancelling mode.

use super::steps::Next;
use super::task::{with_current, Task};
use std::cell::Cell;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;

thread_local! {
    /// Set by a worker that is cancelling its fibers at shutdown.
    static CANCELLING: Cell<bool> = const { Cell::new(false) };
}

/// The payload a cancelled fiber unwinds with when its runtime shuts down.
#[derive(Debug)]
pub struct Cancelled;

/// Starts the cancellation of the running fiber (its worker is shutting down): the first
/// time, it unwinds with [`Cancelled`]; once the fiber is being cancelled, the call returns,
/// as a spurious wake-up would. A second unwind raised inside a destructor that the first one
/// runs would abort the process.
#[cold]
#[inline(never)]
pub(crate) fn cancel_once() {
    let first = with_current(|task| task.is_some_and(|t| !t.cancelled.swap(true, Relaxed)));
    if first {
        panic::resume_unwind(Box::new(Cancelled));
    }
}

/// Whether the running fiber is being cancelled (its runtime is shutting down and it has
/// started unwinding). Its blocking calls then return instead of waiting: timed waits time
/// out at once, waits for socket readiness fail with [`shutting_down`], and `sleep` and
/// `Notify::wait` return. Waits that a cancelled counterpart ends (a lock its holder
/// releases as it unwinds, a channel whose senders are dropped) wait as usual.
#[inline]
pub(crate) fn is_cancelled() -> bool {
    with_current(|task| task.is_some_and(Task::is_cancelled))
}

/// Marks fiber `task` as cancelled before its worker drops a body it never ran (or the rest
/// of a fiber waiting without a stack), so blocking calls in those destructors return.
pub(crate) fn mark_cancelled(task: &Task) {
    task.cancelled.store(true, Relaxed);
}

/// The body of a cancelled fiber that never ran (or waited without a stack): runs
/// `drop_body`, which drops what the fiber held, and reports the fiber as cancelled to its
/// joiner. A panic in those destructors is caught here (the panic hook has reported it).
pub(crate) fn end_unstarted(drop_body: impl FnOnce()) -> Option<Next> {
    let _ = panic::catch_unwind(AssertUnwindSafe(drop_body));
    with_current(|task| {
        if let Some(task) = task {
            task.complete(None);
        }
    });
    None
}

/// The error a wait for socket readiness returns in a fiber being cancelled.
pub(crate) fn shutting_down() -> io::Error {
    io::Error::other("fibra: the runtime is shutting down")
}

/// Whether this thread is cancelling fibers (see [`set_cancelling`]).
#[inline(always)]
pub(crate) fn cancelling() -> bool {
    CANCELLING.with(|c| c.get())
}

/// Marks this thread as cancelling fibers: every suspended fiber it resumes unwinds.
pub(crate) fn set_cancelling(on: bool) {
    CANCELLING.with(|c| c.set(on));
}
