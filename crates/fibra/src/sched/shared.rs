//! What the threads of a runtime share ([`RtShared`], each worker's [`WorkerShared`] inbox),
//! and the worker's context as the task layer sees it ([`Local`]): the hook through which
//! parking and waking reach the scheduler without naming it.
//!
//! The scheduler (`worker`) owns a [`Local`] for its whole loop and publishes it with
//! [`enter`]; [`unpark`](super::unpark) queues a fiber on it (or sends it home through the
//! home worker's inbox), and a park with a deadline arms its timer heap. Both are a
//! thread-local read and a direct call, as before the split.

use super::switch::Body;
use super::task::{Task, Timers};
use crate::driver;
use crate::reactor::Token;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What all threads of one runtime share.
pub(crate) struct RtShared {
    pub(crate) workers: Vec<WorkerShared>,
    pub(crate) stack_size: usize,
    pub(crate) max_idle_stacks: usize,
    next_worker: AtomicUsize,
    next_id: AtomicU64,
    shutdown: AtomicBool,
}

impl RtShared {
    pub(crate) fn new(
        workers: Vec<WorkerShared>,
        stack_size: usize,
        max_idle_stacks: usize,
    ) -> Self {
        RtShared {
            workers,
            stack_size,
            max_idle_stacks,
            next_worker: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            shutdown: AtomicBool::new(false),
        }
    }

    /// Tells the workers to stop (they look at the flag once per loop round) and wakes each
    /// from its poller.
    pub(crate) fn stop_workers(&self) {
        self.shutdown.store(true, SeqCst);
        for w in &self.workers {
            // An empty message list still wakes the poller; the flag does the rest.
            w.sleeping.store(false, SeqCst);
            let _ = w.driver.wake();
        }
    }

    pub(crate) fn next_worker(&self) -> usize {
        let n = self.workers.len();
        if n == 1 {
            0
        } else {
            self.next_worker.fetch_add(1, Relaxed) % n
        }
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed)
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(SeqCst)
    }
}

thread_local! {
    /// The runtime a helper thread of `spawn_blocking` is running a job for.
    static BLOCKING_FOR: std::cell::RefCell<Option<Arc<RtShared>>> =
        const { std::cell::RefCell::new(None) };
}

/// The runtime of the calling thread, if any: the worker's, or the one whose fiber handed a
/// blocking job to this helper thread (see [`enter_blocking`]).
pub(crate) fn current_rt() -> Option<Arc<RtShared>> {
    try_with_local(|l| l.rt.clone()).or_else(|| BLOCKING_FOR.with(|b| b.borrow().clone()))
}

/// While the returned guard lives, the calling (helper) thread counts as running for `rt`:
/// `fibra::spawn` in a `spawn_blocking` job spawns onto the runtime of the fiber that asked.
pub(crate) fn enter_blocking(rt: Arc<RtShared>) -> impl Drop {
    struct Leave(Option<Arc<RtShared>>);
    impl Drop for Leave {
        fn drop(&mut self) {
            let previous = self.0.take();
            BLOCKING_FOR.with(|b| *b.borrow_mut() = previous);
        }
    }
    Leave(BLOCKING_FOR.with(|b| b.borrow_mut().replace(rt)))
}

/// A worker's context, as the task layer and the public API see it: which worker this is,
/// its run queue, timers and cached clock. Owned by the worker (see [`enter`]).
pub(crate) struct Local {
    pub(crate) index: usize,
    pub(crate) rt: Arc<RtShared>,
    /// Keys of the fibers ready to run.
    pub(crate) queue: RefCell<VecDeque<usize>>,
    pub(crate) timers: RefCell<Timers>,
    /// Cached coarse clock, refreshed once per loop iteration.
    pub(crate) now: Cell<Instant>,
    pub(crate) now_ticks: Cell<u64>,
}

thread_local! {
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

/// Publishes `local` as this thread's worker context until [`leave`].
///
/// # Safety
/// `local` must stay alive and in place until [`leave`] is called on this thread.
pub(crate) unsafe fn enter(local: &Local) {
    LOCAL.with(|l| l.set(local as *const Local));
}

/// Ends what [`enter`] started.
pub(crate) fn leave() {
    LOCAL.with(|l| l.set(std::ptr::null()));
}

/// Runs `f` on the current thread's worker context. Panics outside a worker thread.
#[inline]
pub(crate) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    try_with_local(f).expect("fibra: not on a fibra worker thread")
}

/// Runs `f` on the current thread's worker context, if this is a worker thread.
#[inline]
pub(crate) fn try_with_local<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    let ptr = LOCAL.with(|l| l.get());
    // SAFETY: LOCAL is set by `enter`, whose caller keeps the Local alive and in place until
    // `leave` resets it to null; only this thread reads it.
    unsafe { ptr.as_ref() }.map(f)
}

/// Whether the calling thread is worker `home` of runtime `rt`.
pub(crate) fn is_home(rt: &Arc<RtShared>, home: usize) -> bool {
    with_home_local(rt, home, |_| ()).is_some()
}

/// Runs `f` on the worker context if the calling thread is worker `home` of runtime `rt`
/// (one thread-local read for the check and the work).
#[inline]
pub(crate) fn with_home_local<R>(
    rt: &Arc<RtShared>,
    home: usize,
    f: impl FnOnce(&Local) -> R,
) -> Option<R> {
    try_with_local(|l| l.is_home(rt, home).then(|| f(l))).flatten()
}

impl Local {
    /// Whether this is worker `home` of runtime `rt`.
    #[inline(always)]
    pub(crate) fn is_home(&self, rt: &Arc<RtShared>, home: usize) -> bool {
        Arc::ptr_eq(&self.rt, rt) && self.index == home
    }
}

/// A message to a worker from another thread.
pub(crate) enum Message {
    /// A new fiber to start.
    Spawn(Arc<Task>, Body),
    /// A parked fiber to resume.
    Wake(Arc<Task>),
    /// A socket registered with this worker's poller was closed elsewhere: drop the poller's
    /// reference once no event for it can be pending.
    Release(Token),
}

/// The part of a worker other threads can reach.
pub(crate) struct WorkerShared {
    pub(crate) inbox: Mutex<Vec<Message>>,
    /// Set (under the inbox lock) once the worker has stopped and its inbox was emptied for
    /// good: a message sent after that is discarded at once.
    pub(crate) closed: AtomicBool,
    /// Set when a message is pushed, so the worker can skip locking an empty inbox.
    pub(crate) pending: AtomicBool,
    /// True while the worker is in (or about to enter) a blocking wait in its driver.
    pub(crate) sleeping: AtomicBool,
    /// The worker's driver, for registering and taking out sockets and for waking the
    /// worker from any thread.
    pub(crate) driver: driver::Handle,
}

impl WorkerShared {
    /// Empties the inbox of a worker that has stopped (its poller is closed).
    pub(crate) fn discard_inbox(&self) {
        let msgs = {
            let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
            self.closed.store(true, SeqCst);
            std::mem::take(&mut *inbox)
        };
        msgs.into_iter().for_each(discard);
    }

    pub(crate) fn send(&self, msg: Message) {
        {
            let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
            if self.closed.load(SeqCst) {
                drop(inbox);
                // A spawn from a thread outliving the runtime (a `spawn_blocking` job, say).
                discard(msg);
                return;
            }
            inbox.push(msg);
        }
        self.pending.store(true, SeqCst);
        if self.sleeping.load(SeqCst) && self.sleeping.swap(false, SeqCst) {
            let _ = self.driver.wake();
        }
    }
}

/// Handles a message to a worker that has stopped: a fiber that never started is reported to
/// its joiner as cancelled (its body is dropped by the calling thread, not a worker).
fn discard(msg: Message) {
    match msg {
        Message::Spawn(task, body) => {
            drop(body);
            task.mark_done();
            task.complete(None);
        }
        Message::Wake(_) => {}
        // The poller is closed, so no event can name the token any more.
        Message::Release(token) => super::IoState::release(token),
    }
}
