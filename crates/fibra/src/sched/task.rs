//! The task record of a fiber, the park/unpark protocol and waiters.
//!
//! Parking follows `std::thread::park`'s token protocol, on one atomic per fiber:
//! `unpark` sets NOTIFIED and schedules the fiber only if it saw PARKED, so a fiber is never
//! queued twice and a wake-up that races with parking is never lost.

use super::shared::{with_home_local, with_local, Local, Message, RtShared};
use super::switch::suspend;
use crate::timer::{TimerHeap, TimerTask};
use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::Arc;
use std::thread;

const EMPTY: u8 = 0;
const PARKED: u8 = 1;
const NOTIFIED: u8 = 2;
const DONE: u8 = 3;

/// What every other part of the runtime knows about a fiber. Shared through `Arc` so wakers on
/// any thread can reach it; the coroutine itself lives in its home worker's slab.
// `repr(C)`, hot fields first: with the `Arc` counts in front they fill exactly the first 64
// bytes of the task's 128-byte (so 128-aligned) block, and a park/wake cycle touches one
// cache line of it; the id, name and outcome follow in the second.
#[repr(C)]
pub(crate) struct Task {
    /// EMPTY, PARKED, NOTIFIED or DONE.
    pub(super) state: AtomicU8,
    /// Set by the timer when the deadline passed. Home worker only.
    pub(crate) timed_out: AtomicBool,
    /// `J_*` bits of the hand-over of the fiber's outcome (see [`JoinCell`]).
    join_state: AtomicU8,
    /// Set once the fiber has been cancelled (runtime shutdown): it unwinds with
    /// [`Cancelled`](crate::fiber::Cancelled) once, and its blocking calls return instead of
    /// parking or unwinding again (see [`is_cancelled`](crate::sched::is_cancelled)). Home
    /// worker only.
    pub(super) cancelled: AtomicBool,
    /// Index of the worker that owns (or will own) the fiber.
    pub(super) home: u32,
    /// Key of the fiber's slot in its home worker's slab; set when it arrives there.
    pub(super) key: AtomicU32,
    /// The runtime it belongs to.
    pub(crate) rt: Arc<RtShared>,
    /// Current timeout in ticks, 0 for none. Home worker only (Relaxed is enough).
    pub(crate) deadline: AtomicU64,
    /// Tick of the timer entry queued for this fiber, 0 for none. Home worker only.
    pub(crate) timer_queued: AtomicU64,
    /// `limit` of the fiber's stack once it has started (0 before), from which the overflow
    /// handler derives the guard page. Written by the home worker before the first resume.
    pub(crate) stack_limit: AtomicUsize,
    /// Unique id, for messages (stack overflow, panics).
    pub(crate) id: u64,
    /// Optional name given through [`Builder::name`](crate::fiber::Builder::name).
    // A thin pointer (8 bytes, not a 16-byte `Box<str>`): names are rare and only read for
    // messages, while every spawn allocates a task, so its size is what counts.
    #[allow(clippy::box_collection)]
    pub(crate) name: Option<Box<String>>,
    /// The fiber's outcome, kept here (no separate allocation) until joined.
    join: JoinCell,
}

/// `JoinCell::state` bits.
const J_WAITING: u8 = 1;
const J_CLAIMED: u8 = 2;
const J_DONE: u8 = 4;
/// The [`JoinHandle`](crate::fiber::JoinHandle) was dropped: nobody will read the outcome.
const J_DETACHED: u8 = 8;

/// A fiber's outcome as its [`JoinHandle`](crate::fiber::JoinHandle) will see it, handed over
/// through one atomic word (`Task::join_state`)
/// instead of a mutex (a spawn + join costs two read-modify-writes here, not four):
///
/// - `complete` sets `J_CLAIMED` (only the first completion proceeds), writes `result`, then
///   sets `J_DONE`; if `J_WAITING` was set by then it takes `waiter` and wakes it.
/// - The one joiner (`JoinHandle::join` consumes the handle) reads `result` only after seeing
///   `J_DONE`, and writes `waiter` only before setting `J_WAITING`, and never again after.
/// - A handle dropped unjoined sets `J_DETACHED`. Whichever of the two `fetch_or`s (`J_DONE`
///   by `complete`, `J_DETACHED` by the drop) comes second sees the other's bit and drops the
///   value: the fiber itself at completion, or the dropper. So a detached fiber's value (whose
///   destructor is user code and may panic) is never dropped by the worker when it frees the
///   task, where a panic would unwind the worker loop.
#[derive(Default)]
struct JoinCell {
    /// The boxed value (no allocation for `()`) or the panic payload; `None` if the fiber was
    /// dropped before producing either.
    result: UnsafeCell<Option<thread::Result<Box<dyn Any + Send>>>>,
    /// The fiber or thread blocked in `join`.
    waiter: UnsafeCell<Option<Waiter>>,
}

// SAFETY: the cells are accessed only under the protocol above, whose atomic transitions
// order every write before the read that follows it on another thread; the values are Send.
unsafe impl Sync for JoinCell {}

impl Task {
    pub(crate) fn new(id: u64, name: Option<String>, home: usize, rt: Arc<RtShared>) -> Self {
        Task {
            id,
            name: name.map(Box::new),
            home: u32::try_from(home).expect("fewer than 2^32 workers"),
            rt,
            state: AtomicU8::new(EMPTY),
            key: AtomicU32::new(u32::MAX),
            deadline: AtomicU64::new(0),
            timer_queued: AtomicU64::new(0),
            timed_out: AtomicBool::new(false),
            stack_limit: AtomicUsize::new(0),
            join_state: AtomicU8::new(0),
            cancelled: AtomicBool::new(false),
            join: JoinCell::default(),
        }
    }

    /// Records the fiber's outcome (`None`: it will never produce one) and wakes its joiner.
    /// Only the first call counts.
    pub(crate) fn complete(&self, result: Option<thread::Result<Box<dyn Any + Send>>>) {
        let j = &self.join;
        if self.join_state.fetch_or(J_CLAIMED, AcqRel) & J_CLAIMED != 0 {
            return;
        }
        // SAFETY: J_CLAIMED makes this the only writer of `result`, and the joiner reads it
        // only after J_DONE is set below.
        unsafe { *j.result.get() = result };
        let before = self.join_state.fetch_or(J_DONE, AcqRel);
        if before & J_WAITING != 0 {
            // SAFETY: the joiner wrote `waiter` before setting J_WAITING (acquired by the
            // fetch_or above) and does not touch it after; completion happens once.
            if let Some(w) = unsafe { (*j.waiter.get()).take() } {
                w.wake();
            }
        }
        if before & J_DETACHED != 0 {
            // SAFETY: the handle is gone (J_DETACHED was set before our J_DONE, so its drop
            // did not see J_DONE and left `result` alone); nobody else reads it.
            let value = unsafe { (*j.result.get()).take() };
            // User code (the value's destructor) runs here, in the fiber that made the value,
            // so a panic in it is caught at the fiber's entry like any other.
            drop(value);
        }
    }

    /// The joiner's half of the hand-over (see [`JoinCell`]): waits until the fiber's outcome
    /// is recorded and takes it (`None`: the fiber will never produce one). Called once, by
    /// the fiber's one [`JoinHandle`](crate::fiber::JoinHandle).
    pub(crate) fn wait_outcome(&self) -> Option<thread::Result<Box<dyn Any + Send>>> {
        let j = &self.join;
        loop {
            let state = self.join_state.load(Acquire);
            if state & J_DONE != 0 {
                // SAFETY: J_DONE (acquired) means `complete` finished writing `result` and
                // will not touch it again; this handle is the only reader.
                return unsafe { (*j.result.get()).take() };
            }
            if state & J_WAITING == 0 {
                // SAFETY: before J_WAITING is set nobody else reads or writes `waiter`.
                unsafe { *j.waiter.get() = Some(Waiter::current()) };
                if self.join_state.fetch_or(J_WAITING, AcqRel) & J_DONE != 0 {
                    continue;
                }
            }
            park_until(None);
        }
    }

    /// The [`JoinHandle`](crate::fiber::JoinHandle) is dropped: detach (see [`JoinCell`]),
    /// dropping the outcome here if it is recorded already.
    pub(crate) fn detach(&self) {
        let before = self.join_state.fetch_or(J_DETACHED, AcqRel);
        if before & J_DONE != 0 {
            // SAFETY: J_DONE (acquired) means `complete` wrote `result` and will not touch it
            // again; this handle is its only reader.
            let value = unsafe { (*self.join.result.get()).take() };
            drop(value);
        }
    }

    /// Whether the fiber's outcome is recorded (it has finished).
    pub(crate) fn is_finished(&self) -> bool {
        self.join_state.load(Acquire) & J_DONE != 0
    }

    /// Index of the worker that owns (or will own) the fiber.
    pub(crate) fn home(&self) -> usize {
        self.home as usize
    }

    /// Key of the fiber's slot in its home worker's slab.
    pub(crate) fn key(&self) -> usize {
        self.key.load(Relaxed) as usize
    }

    /// Records the fiber's slab key (on its home worker).
    pub(crate) fn set_key(&self, key: usize) {
        self.key.store(
            u32::try_from(key).expect("fewer than 2^32 fibers per worker"),
            Relaxed,
        );
    }

    /// A new strong reference to this task.
    pub(crate) fn arc(&self) -> Arc<Task> {
        // SAFETY: tasks are only ever created inside an `Arc` (`spawn_in` is the one place
        // that constructs them), and `&self` proves that Arc is alive, so adding a strong
        // count and rebuilding an `Arc` from the same pointer is sound.
        unsafe {
            let ptr = self as *const Task;
            Arc::increment_strong_count(ptr);
            Arc::from_raw(ptr)
        }
    }

    /// The fiber's identity in waiter lists: its task's address.
    #[inline(always)]
    pub(crate) fn waiter_id(&self) -> usize {
        self as *const Task as usize
    }

    /// Whether the fiber is being cancelled (see [`is_cancelled`](crate::sched::is_cancelled)).
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Relaxed)
    }

    pub(crate) fn mark_done(&self) {
        self.state.store(DONE, Release);
    }

    /// The fiber's name, or "unnamed".
    pub(crate) fn display_name(&self) -> &str {
        self.name.as_deref().map_or("unnamed", String::as_str)
    }
}

thread_local! {
    /// The task of the fiber running on this thread, null outside fibers. Points into an
    /// `Arc<Task>` kept alive by the worker's slab while the fiber runs.
    pub(super) static CURRENT: Cell<*const Task> = const { Cell::new(std::ptr::null()) };
}

/// Whether the caller runs inside a fiber.
pub fn in_fiber() -> bool {
    !CURRENT.with(|c| c.get()).is_null()
}

/// The task of the fiber running on this thread, or null. A plain thread-local read, so the
/// stack-overflow signal handler may call it.
pub(crate) fn current_ptr() -> *const Task {
    CURRENT.with(|c| c.get())
}

/// Runs `f` with the current fiber's task, without touching its reference count.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Task>) -> R) -> R {
    let ptr = CURRENT.with(|c| c.get());
    // SAFETY: CURRENT is null or `Arc::as_ptr` of the running fiber's task, set by the worker
    // around each resume; the worker's slab keeps that Arc alive while the fiber runs, and `f`
    // runs within this fiber.
    f(unsafe { ptr.as_ref() })
}

/// Parks the current fiber until it is unparked or tick `deadline` (0: none) passes.
/// Returns true if it woke because the deadline passed. May wake spuriously.
#[inline(always)]
pub(crate) fn park_fiber(task: &Task, deadline: u64) -> bool {
    match park_begin(task, deadline) {
        ParkBegin::Notified => return false,
        ParkBegin::Parked => suspend(),
        ParkBegin::Raced => {}
    }
    park_end(task)
}

/// How the first half of a park went.
pub(crate) enum ParkBegin {
    /// A wake-up was pending: it is consumed and the fiber does not park.
    Notified,
    /// The fiber is marked parked: suspend it (or end its run, see
    /// [`Step`](crate::fiber::Step)), then call [`park_end`] once it runs again.
    Parked,
    /// A wake-up arrived while the timer was being armed: call [`park_end`] right away.
    Raced,
}

/// The first half of [`park_fiber`]: arms the deadline and marks the fiber parked.
#[inline(always)]
pub(crate) fn park_begin(task: &Task, deadline: u64) -> ParkBegin {
    // Plain loads first: a locked instruction costs ~4 ns here, and the common cases (not yet
    // notified; not timed out) need none.
    if task.state.load(Acquire) == NOTIFIED
        && task
            .state
            .compare_exchange(NOTIFIED, EMPTY, Acquire, Relaxed)
            .is_ok()
    {
        return ParkBegin::Notified;
    }
    if deadline != 0 {
        with_local(|l| l.timers.borrow_mut().arm(task, deadline));
    }
    if task
        .state
        .compare_exchange(EMPTY, PARKED, AcqRel, Acquire)
        .is_ok()
    {
        ParkBegin::Parked
    } else {
        ParkBegin::Raced
    }
}

/// The second half of [`park_fiber`], once the fiber runs again: returns whether the deadline
/// passed.
#[inline(always)]
pub(crate) fn park_end(task: &Task) -> bool {
    task.state.store(EMPTY, Release);
    task.deadline.store(0, Relaxed);
    let timed_out = task.timed_out.load(Relaxed);
    if timed_out {
        task.timed_out.store(false, Relaxed);
    }
    timed_out
}

/// Wakes a parked fiber (or makes its next park return at once).
#[inline]
pub(crate) fn unpark(task: &Task) {
    if task.state.swap(NOTIFIED, AcqRel) == PARKED {
        schedule(task);
    }
}

/// [`unpark`] by worker `local`'s own loop (its reactor): a fiber of this worker goes on its
/// run queue without a look-up of the thread's worker context, which the loop holds already.
/// Every socket event wakes its fiber through here.
#[inline(always)]
pub(crate) fn unpark_on(local: &Local, task: &Task) {
    if task.state.swap(NOTIFIED, AcqRel) == PARKED {
        if local.is_home(&task.rt, task.home()) {
            local.queue.borrow_mut().push_back(task.key());
        } else {
            schedule(task);
        }
    }
}

/// Queues a fiber that was just unparked: on this worker's run queue if it is the fiber's
/// home, otherwise through its home worker's inbox.
#[inline]
pub(crate) fn schedule(task: &Task) {
    // A wake-up from the fiber's own worker (its reactor, a timer, a fiber there) is the
    // common case.
    let queued = with_home_local(&task.rt, task.home(), |l| {
        l.queue.borrow_mut().push_back(task.key())
    });
    if queued.is_none() {
        task.rt.workers[task.home()].send(Message::Wake(task.arc()));
    }
}

/// A waiter registered without a reference count, for primitives that wake it while holding
/// the lock under which it registered (and unregisters before it returns): while it is
/// registered, its fiber is parked inside the primitive, so the task is alive.
pub(crate) enum LocalWaiter {
    Fiber(*const Task),
    Thread(thread::Thread),
}

impl LocalWaiter {
    /// The caller, as a waiter. No atomic operation for a fiber.
    #[inline]
    pub(crate) fn current() -> LocalWaiter {
        let task = current_ptr();
        if task.is_null() {
            LocalWaiter::Thread(thread::current())
        } else {
            LocalWaiter::Fiber(task)
        }
    }

    /// Wakes it.
    ///
    /// # Safety
    /// A `Fiber` waiter's task must still be alive: call this under the lock that guards the
    /// registration, which the waiter removes (under the same lock) before leaving the
    /// primitive.
    #[inline]
    pub(crate) unsafe fn wake(self) {
        match self {
            // SAFETY: the caller guarantees the task is alive (see above).
            LocalWaiter::Fiber(task) => unpark(unsafe { &*task }),
            LocalWaiter::Thread(thread) => thread.unpark(),
        }
    }
}

// SAFETY: the pointer is only dereferenced under the contract of `wake`, and `Task` is `Sync`.
unsafe impl Send for LocalWaiter {}

/// Something that can block and be woken: a fiber or an OS thread.
#[derive(Clone)]
pub(crate) enum Waiter {
    Fiber(Arc<Task>),
    Thread(thread::Thread),
}

impl Waiter {
    /// The caller, as a waiter.
    pub(crate) fn current() -> Waiter {
        with_current(|task| match task {
            Some(task) => Waiter::Fiber(task.arc()),
            None => Waiter::Thread(thread::current()),
        })
    }

    /// Wakes it.
    pub(crate) fn wake(self) {
        match self {
            Waiter::Fiber(task) => unpark(&task),
            Waiter::Thread(thread) => thread.unpark(),
        }
    }
}

/// Blocks the caller (fiber or thread) until woken or `deadline` passes; may wake spuriously.
/// Returns true if the deadline passed.
#[inline(always)]
pub(crate) fn park_until(deadline: Option<std::time::Instant>) -> bool {
    let parked = with_current(|task| {
        task.map(|t| {
            if deadline.is_some() && t.cancelled.load(Relaxed) {
                return true;
            }
            park_fiber(t, deadline.map_or(0, crate::timer::ticks_at))
        })
    });
    match parked {
        Some(timed_out) => timed_out,
        None => match deadline {
            None => {
                thread::park();
                false
            }
            Some(at) => {
                let now = std::time::Instant::now();
                if at <= now {
                    return true;
                }
                thread::park_timeout(at - now);
                std::time::Instant::now() >= at
            }
        },
    }
}

/// The deadline heap of one worker, over the runtime's fibers (see [`TimerHeap`] for its
/// protocol and invariant).
pub(crate) type Timers = TimerHeap<Task>;

impl TimerTask for Task {
    #[inline(always)]
    fn deadline(&self) -> &AtomicU64 {
        &self.deadline
    }

    #[inline(always)]
    fn timer_queued(&self) -> &AtomicU64 {
        &self.timer_queued
    }

    #[inline(always)]
    fn to_arc(&self) -> Arc<Task> {
        self.arc()
    }

    fn expire(&self) {
        self.timed_out.store(true, Relaxed);
        unpark(self);
    }
}

/// The overflow handler's view of the running fiber (see [`crate::overflow`]).
impl crate::overflow::RunningFiber for Task {
    #[inline(always)]
    fn with_running(f: impl FnOnce(usize, u64, &str)) {
        let task = current_ptr();
        // SAFETY: the current-fiber pointer is null or set from a live `&Task` for exactly as
        // long as that fiber runs on this thread, and the fault happened on this thread.
        let Some(task) = (unsafe { task.as_ref() }) else {
            return;
        };
        f(task.stack_limit.load(Relaxed), task.id, task.display_name());
    }
}
