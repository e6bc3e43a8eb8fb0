//! Fibers: the task record, parking and unparking, spawning and joining.
//!
//! A fiber is a `corosensei` coroutine on a pooled stack. It is created lazily, when it first
//! runs on its home worker, so spawning is an allocation and a queue push. Once started it never
//! migrates (see DESIGN.md: moving a running stack between threads is unsound in Rust).
//!
//! Parking follows `std::thread::park`'s token protocol, on one atomic per fiber:
//! `unpark` sets NOTIFIED and schedules the fiber only if it saw PARKED, so a fiber is never
//! queued twice and a wake-up that races with parking is never lost.

use crate::reactor::{Dir, IoState};
use crate::runtime::{self, RtShared};
use crate::worker;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::io;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::Arc;
use std::thread;

const EMPTY: u8 = 0;
const PARKED: u8 = 1;
const NOTIFIED: u8 = 2;
const DONE: u8 = 3;

/// The coroutine type every fiber runs in. It returns the fiber's next body when the fiber
/// waits without a stack (see [`Step`]), `None` when it is finished.
pub(crate) type FiberCoroutine = Coroutine<(), (), Option<Next>, DefaultStack>;

/// The body of a fiber that has not started yet.
pub(crate) type Body = Box<dyn FnOnce() -> Option<Next> + Send + 'static>;

/// What a fiber waiting without a stack runs when woken: the rest of its steps after the
/// wait (see [`Step`]). Kept in the fiber's slab slot as a value, not a boxed closure, so a
/// park costs no allocation and a wake-up reads no separately allocated line. It stays on the
/// fiber's worker thread, so it need not be `Send`.
pub(crate) struct Next(IoWait);

impl Next {
    /// The body of the fiber's next coroutine.
    pub(crate) fn run(self) -> Option<Next> {
        let Next(w) = self;
        drive_steps(|task| {
            let timed_out = park_end(task);
            w.woken(task, timed_out)
        })
    }
}

/// What every other part of the runtime knows about a fiber. Shared through `Arc` so wakers on
/// any thread can reach it; the coroutine itself lives in its home worker's slab.
// `repr(C)`, hot fields first: with the `Arc` counts in front they fill exactly the first 64
// bytes of the task's 128-byte (so 128-aligned) block, and a park/wake cycle touches one
// cache line of it; the id, name and outcome follow in the second.
#[repr(C)]
pub(crate) struct Task {
    /// EMPTY, PARKED, NOTIFIED or DONE.
    state: AtomicU8,
    /// Set by the timer when the deadline passed. Home worker only.
    pub(crate) timed_out: AtomicBool,
    /// `J_*` bits of the hand-over of the fiber's outcome (see [`JoinCell`]).
    join_state: AtomicU8,
    /// Set once the fiber has been cancelled (runtime shutdown): it unwinds with
    /// [`Cancelled`] once, and its blocking calls return instead of parking or unwinding
    /// again (see [`is_cancelled`]). Home worker only.
    cancelled: AtomicBool,
    /// Index of the worker that owns (or will own) the fiber.
    home: u32,
    /// Key of the fiber's slot in its home worker's slab; set when it arrives there.
    key: AtomicU32,
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
    /// Optional name given through [`Builder::name`].
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
/// The [`JoinHandle`] was dropped: nobody will read the outcome.
const J_DETACHED: u8 = 8;

/// A fiber's outcome as its [`JoinHandle`] will see it, handed over through one atomic word
/// (`Task::join_state`)
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

    /// Whether the fiber is being cancelled (see [`is_cancelled`]).
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
    /// The yielder of the fiber running on this thread, null outside fibers.
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
    /// The task of the fiber running on this thread, null outside fibers. Points into an
    /// `Arc<Task>` kept alive by the worker's slab while the fiber runs.
    static CURRENT: Cell<*const Task> = const { Cell::new(std::ptr::null()) };
    /// Set by a worker that is cancelling its fibers at shutdown.
    static CANCELLING: Cell<bool> = const { Cell::new(false) };
}

/// The payload a cancelled fiber unwinds with when its runtime shuts down.
#[derive(Debug)]
pub struct Cancelled;

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

/// Suspends the running fiber back to its worker. Must be called inside a fiber.
#[inline(always)]
fn suspend() {
    let yielder = YIELDER.with(|y| y.get());
    assert!(!yielder.is_null(), "fibra: suspend outside a fiber");
    let fake = crate::asan::leaving_fiber();
    // SAFETY: YIELDER is set at fiber entry to the coroutine's own yielder, which lives on the
    // fiber's stack for the whole life of the coroutine; fibers never migrate, so the pointer
    // read on this thread belongs to the fiber executing this very code.
    unsafe { (*yielder).suspend(()) };
    crate::asan::back_in_fiber(fake);
    // Other fibers ran on this thread in between and overwrote the thread-locals.
    YIELDER.with(|y| y.set(yielder));
    if CANCELLING.with(|c| c.get()) {
        cancel_once();
    }
}

/// Starts the cancellation of the running fiber (its worker is shutting down): the first
/// time, it unwinds with [`Cancelled`]; once the fiber is being cancelled, the call returns,
/// as a spurious wake-up would. A second unwind raised inside a destructor that the first one
/// runs would abort the process.
#[cold]
#[inline(never)]
fn cancel_once() {
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
    /// The fiber is marked parked: suspend it (or end its run, see [`Step`]), then call
    /// [`park_end`] once it runs again.
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
        worker::with(|w| w.timers.borrow_mut().arm(task, deadline));
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
pub(crate) fn unpark(task: &Task) {
    if task.state.swap(NOTIFIED, AcqRel) == PARKED {
        worker::schedule(task);
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

/// Lets the other runnable fibers of this worker run before the caller continues.
///
/// Outside a fiber it yields the OS thread.
#[inline(always)]
pub fn yield_now() {
    let Some(key) = with_current(|t| t.map(|t| t.key())) else {
        thread::yield_now();
        return;
    };
    worker::with(|w| w.queue.borrow_mut().push_back(key));
    suspend();
}

/// Runs `f` on a stack shared by the fibers of this worker instead of the fiber's own stack.
///
/// With thousands of fibers taking turns, each fiber's own stack has left the CPU caches by
/// the time the fiber runs again, and every stack line a burst of work writes is a cache miss.
/// A shared stack is lent to whichever fiber asks, so for work that does not block (parsing a
/// request and writing its response, say) the same few kilobytes serve every fiber and stay
/// cached. `f` may still block: the fiber then keeps the stack until `f` returns, and others
/// are lent another one. Panics propagate to the caller; stack overflow is reported as usual.
///
/// Outside a fiber, or when no stack can be mapped, `f` runs in place.
///
/// ```
/// let n = fibra::run(|| fibra::fiber::on_shared_stack(|| {
///     fibra::yield_now(); // blocking inside is allowed
///     6 * 7
/// }));
/// assert_eq!(n, 42);
/// ```
pub fn on_shared_stack<R>(f: impl FnOnce() -> R) -> R {
    let task = current_ptr();
    if task.is_null() {
        return f();
    }
    let Some(Ok(stack)) = worker::try_with(|w| w.take_shared_stack()) else {
        return f();
    };
    /// Gives the stack back and restores the overflow handler's view, also when `f` panics
    /// (the unwind resumes on the fiber's own stack, after `on_stack` returned).
    struct Lent<'a> {
        task: &'a Task,
        own_limit: usize,
        stack: Option<DefaultStack>,
    }
    impl Drop for Lent<'_> {
        fn drop(&mut self) {
            self.task.stack_limit.store(self.own_limit, Relaxed);
            if let Some(s) = self.stack.take() {
                worker::try_with(|w| w.return_shared_stack(s));
            }
        }
    }
    // SAFETY: `current_ptr` is the running fiber's task, alive while this fiber runs (its
    // worker's slab holds it), which covers this whole call.
    let task = unsafe { &*task };
    let mut lent = Lent {
        task,
        own_limit: task.stack_limit.load(Relaxed),
        stack: Some(stack),
    };
    let stack = lent.stack.as_mut().expect("just set");
    task.stack_limit
        .store(corosensei::stack::Stack::limit(stack).get(), Relaxed);
    crate::asan::on_stack(stack, f)
}

/// A handle to join a fiber, like [`std::thread::JoinHandle`].
///
/// Dropping it detaches the fiber.
pub struct JoinHandle<T> {
    task: Arc<Task>,
    _result: PhantomData<fn() -> T>,
}

impl<T: 'static> JoinHandle<T> {
    /// Waits for the fiber to finish and returns its result, or the payload of its panic
    /// ([`Cancelled`] if its runtime shut down before it finished).
    ///
    /// Called from a fiber, only that fiber parks; from a thread, the thread blocks.
    pub fn join(self) -> thread::Result<T> {
        let j = &self.task.join;
        loop {
            let state = self.task.join_state.load(Acquire);
            if state & J_DONE != 0 {
                // SAFETY: J_DONE (acquired) means `complete` finished writing `result` and
                // will not touch it again; this handle is the only reader.
                return match unsafe { (*j.result.get()).take() } {
                    Some(Ok(value)) => Ok(*value
                        .downcast::<T>()
                        .expect("a fiber's result has the JoinHandle's type")),
                    Some(Err(payload)) => Err(payload),
                    None => Err(Box::new(Cancelled)),
                };
            }
            if state & J_WAITING == 0 {
                // SAFETY: before J_WAITING is set nobody else reads or writes `waiter`.
                unsafe { *j.waiter.get() = Some(Waiter::current()) };
                if self.task.join_state.fetch_or(J_WAITING, AcqRel) & J_DONE != 0 {
                    continue;
                }
            }
            park_until(None);
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // Detach (see [`JoinCell`]). After a `join` the value is taken already, and this
        // finds nothing to drop.
        let before = self.task.join_state.fetch_or(J_DETACHED, AcqRel);
        if before & J_DONE != 0 {
            // SAFETY: J_DONE (acquired) means `complete` wrote `result` and will not touch it
            // again; this handle is its only reader.
            let value = unsafe { (*self.task.join.result.get()).take() };
            drop(value);
        }
    }
}

impl<T> JoinHandle<T> {
    /// Whether the fiber has finished.
    pub fn is_finished(&self) -> bool {
        self.task.join_state.load(Acquire) & J_DONE != 0
    }

    /// The fiber's unique id.
    pub fn id(&self) -> u64 {
        self.task.id
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.task.id)
            .finish()
    }
}

/// Fiber factory with options, like [`std::thread::Builder`].
///
/// ```
/// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
/// let v = rt.block_on(|| {
///     let h = fibra::fiber::Builder::new().name("adder").worker(1).spawn(|| 40 + 2).unwrap();
///     h.join().unwrap()
/// });
/// assert_eq!(v, 42);
/// ```
#[derive(Debug, Default)]
pub struct Builder {
    name: Option<String>,
    worker: Option<usize>,
}

impl Builder {
    /// A builder with no name, placed round-robin.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the fiber (shown in stack-overflow messages).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Places the fiber on worker `index` (modulo the worker count).
    pub fn worker(mut self, index: usize) -> Self {
        self.worker = Some(index);
        self
    }

    /// Spawns the fiber on the current runtime.
    ///
    /// Fails with `io::ErrorKind::Other` when called outside a fibra runtime.
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Ok(spawn_in(&current_runtime()?, self.name, self.worker, f))
    }

    /// Spawns a fiber made of steps (see [`Step`]): `f` runs first, and each step it (or a
    /// later one) returns says whether the fiber is done or what it waits for next, holding no
    /// stack meanwhile. The handle's `join` returns once a step returns [`Step::done`], or
    /// with the payload of a step that panicked.
    ///
    /// Fails with `io::ErrorKind::Other` when called outside a fibra runtime.
    pub fn spawn_steps<F>(self, f: F) -> io::Result<JoinHandle<()>>
    where
        F: FnOnce() -> Step + Send + 'static,
    {
        let body: Body = Box::new(move || drive_steps(move |_| f()));
        Ok(submit_body(
            &current_runtime()?,
            self.name,
            self.worker,
            body,
        ))
    }
}

/// The runtime of the calling thread, or the error `Builder`'s spawns report outside one.
fn current_runtime() -> io::Result<Arc<RtShared>> {
    runtime::current().ok_or_else(|| {
        io::Error::other("fibra::spawn called outside a fibra runtime (use Runtime::block_on)")
    })
}

/// Spawns a fiber on the current runtime, like [`std::thread::spawn`].
///
/// The fiber is placed round-robin on a worker and stays there once it starts.
///
/// # Panics
/// Panics when called outside a fibra runtime.
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).unwrap_or_else(|e| panic!("{e}"))
}

/// Spawns a fiber on runtime `rt`.
pub(crate) fn spawn_in<F, T>(
    rt: &Arc<RtShared>,
    name: Option<String>,
    worker: Option<usize>,
    f: F,
) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let body: Body = Box::new(move || {
        let result = panic::catch_unwind(AssertUnwindSafe(f))
            .map(|value| Box::new(value) as Box<dyn Any + Send>);
        // The body runs inside its own fiber, so the current task is this fiber's.
        with_current(|task| {
            if let Some(task) = task {
                task.complete(Some(result));
            }
        });
        None
    });
    submit_body(rt, name, worker, body)
}

/// Creates the task for `body` on runtime `rt` (on worker `worker`, or round-robin) and hands
/// it to its home worker.
fn submit_body<T>(
    rt: &Arc<RtShared>,
    name: Option<String>,
    worker: Option<usize>,
    body: Body,
) -> JoinHandle<T> {
    let home = match worker {
        Some(i) => i % rt.workers.len(),
        None => rt.next_worker(),
    };
    let task = Arc::new(Task::new(rt.next_id(), name, home, rt.clone()));
    let handle = JoinHandle {
        task: task.clone(),
        _result: PhantomData,
    };
    worker::submit(task, body);
    handle
}

/// Creates the coroutine for a fiber's body on a pooled stack.
pub(crate) fn make_coroutine(
    stack: DefaultStack,
    body: impl FnOnce() -> Option<Next> + 'static,
) -> FiberCoroutine {
    crate::asan::fresh_stack(&stack);
    Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
        crate::asan::fiber_entered();
        YIELDER.with(|y| y.set(yielder as *const _));
        // `body` catches the user's panic; this catch is for `Cancelled` unwinding out of the
        // join plumbing and keeps any unwind from crossing the coroutine boundary.
        let next = panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(None);
        crate::asan::fiber_exiting();
        next
    })
}

/// How a resumed fiber stopped.
pub(crate) enum Resumed {
    /// It parked or yielded.
    Suspended,
    /// It finished.
    Finished,
    /// Its stack is free: it waits without one and runs this body when woken (see [`Step`]).
    Waiting(Next),
}

/// Resumes fiber `task` on the current worker.
///
/// The hot half of every switch: two thread-local stores around corosensei's resume. The
/// overflow handler finds the running fiber (and its guard page) through `CURRENT`; `YIELDER`
/// is left stale on purpose — only a running fiber reads it, after setting it.
#[inline]
pub(crate) fn resume(task: &Task, co: &mut FiberCoroutine) -> Resumed {
    CURRENT.with(|c| c.set(task as *const Task));
    let fake = crate::asan::to_fiber(task);
    let result = co.resume(());
    crate::asan::back_from_fiber(fake);
    CURRENT.with(|c| c.set(std::ptr::null()));
    match result {
        CoroutineResult::Yield(()) => Resumed::Suspended,
        CoroutineResult::Return(None) => Resumed::Finished,
        CoroutineResult::Return(Some(next)) => Resumed::Waiting(next),
    }
}

/// What a fiber started with [`Builder::spawn_steps`] does after each step: finish, or wait
/// for a socket **without holding a stack** and then run its next step.
///
/// A fiber blocked in `read` keeps its stack for as long as it waits. A keep-alive connection
/// waits most of its life, and when thousands take turns, each wake-up finds its fiber's stack
/// gone from the CPU caches. A fiber made of steps ends each step by returning a `Step`
/// instead: while it waits it is a task record and a closure, its stack is back in the
/// worker's pool, and its next step starts on the stack used last, which is still cached.
/// Inside a step, blocking calls work as in any fiber.
///
/// Steps come from [`Step::done`] and [`Wait::then`] (or [`Wait::resume_with`]), on a wait
/// such as [`TcpStream::when_readable`](crate::net::TcpStream::when_readable).
///
/// ```
/// use std::io::{Read, Write};
/// use fibra::fiber::{Builder, Step};
/// use fibra::net::{TcpListener, TcpStream};
///
/// /// Echoes what has arrived, then waits for more without holding a stack.
/// fn echo(conn: TcpStream) -> Step {
///     let mut buf = [0u8; 512];
///     loop {
///         match conn.try_read(&mut buf) {
///             Ok(n @ 1..) if (&conn).write_all(&buf[..n]).is_ok() => {}
///             Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
///             _ => return Step::done(), // end of stream or an error
///         }
///     }
///     conn.when_readable().then(move |ready| match ready {
///         Ok(()) => echo(conn),
///         Err(_) => Step::done(),
///     })
/// }
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     fibra::spawn(move || {
///         let (conn, _) = listener.accept().unwrap();
///         Builder::new().spawn_steps(move || echo(conn)).unwrap();
///     });
///     let mut client = TcpStream::connect(addr).unwrap();
///     for word in [b"ping", b"pong"] {
///         client.write_all(word).unwrap();
///         let mut reply = [0u8; 4];
///         client.read_exact(&mut reply).unwrap();
///         assert_eq!(&reply, word);
///     }
/// });
/// ```
#[must_use = "a fiber only waits (or ends) by returning the step"]
pub struct Step(pub(crate) StepKind);

pub(crate) enum StepKind {
    Done,
    /// Run `then` with this outcome at once.
    Now(io::Result<()>, Then),
    /// Wait for readiness, then run `then`.
    Wait(IoWait),
}

/// The rest of a fiber made of steps, given the outcome of its wait.
pub(crate) type Then = Box<dyn Resume>;

/// The rest of a fiber made of steps, as a value: what runs once a [`Wait`] ends, given its
/// outcome. [`Wait::then`] makes one from a closure (boxing it); implementing `Resume` for a
/// state that is boxed already and handing that box to [`Wait::resume_with`] waits without
/// an allocation.
///
/// ```
/// use std::io::{Read, Write};
/// use fibra::fiber::{Builder, Resume, Step};
/// use fibra::net::{TcpListener, TcpStream};
///
/// /// An echo connection that counts what it echoed; its box is the rest of the fiber.
/// struct Echo {
///     conn: TcpStream,
///     echoed: usize,
/// }
///
/// impl Resume for Echo {
///     fn resume(mut self: Box<Self>, ready: std::io::Result<()>) -> Step {
///         if ready.is_err() {
///             return Step::done();
///         }
///         let mut buf = [0u8; 512];
///         loop {
///             match self.conn.try_read(&mut buf) {
///                 Ok(n @ 1..) if (&self.conn).write_all(&buf[..n]).is_ok() => self.echoed += n,
///                 Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
///                 _ => return Step::done(), // end of stream or an error
///             }
///         }
///         let wait = self.conn.when_readable();
///         wait.resume_with(self) // the same box: no allocation per wait
///     }
/// }
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     fibra::spawn(move || {
///         let (conn, _) = listener.accept().unwrap();
///         let echo = Box::new(Echo { conn, echoed: 0 });
///         Builder::new().spawn_steps(move || echo.resume(Ok(()))).unwrap();
///     });
///     let mut client = TcpStream::connect(addr).unwrap();
///     for word in [b"ping", b"pong"] {
///         client.write_all(word).unwrap();
///         let mut reply = [0u8; 4];
///         client.read_exact(&mut reply).unwrap();
///         assert_eq!(&reply, word);
///     }
/// });
/// ```
pub trait Resume: 'static {
    /// Runs the next step with the wait's outcome: `Ok` once ready, or the error the blocking
    /// operation would have returned.
    fn resume(self: Box<Self>, ready: io::Result<()>) -> Step;
}

/// A closure as a [`Resume`] (what [`Wait::then`] boxes).
struct ResumeFn<F>(F);

impl<F: FnOnce(io::Result<()>) -> Step + 'static> Resume for ResumeFn<F> {
    fn resume(self: Box<Self>, ready: io::Result<()>) -> Step {
        (self.0)(ready)
    }
}

/// A wait for readiness `dir` of a socket, until tick `deadline` (0: none).
pub(crate) struct IoWait {
    pub(crate) state: Arc<IoState>,
    pub(crate) dir: Dir,
    pub(crate) deadline: u64,
    pub(crate) then: Then,
}

/// Something a fiber made of steps can wait for without holding a stack; [`Wait::then`] turns
/// it into the fiber's next [`Step`]. Made by
/// [`TcpStream::when_readable`](crate::net::TcpStream::when_readable).
pub struct Wait(WaitKind);

enum WaitKind {
    /// The outcome is known already (an error, or a wait on a plain thread).
    Now(io::Result<()>),
    Io {
        state: Arc<IoState>,
        dir: Dir,
        deadline: u64,
    },
}

impl std::fmt::Debug for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            WaitKind::Now(result) => f.debug_tuple("Wait::Now").field(result).finish(),
            WaitKind::Io { dir, deadline, .. } => f
                .debug_struct("Wait::Io")
                .field("dir", dir)
                .field("deadline", deadline)
                .finish(),
        }
    }
}

impl Wait {
    pub(crate) fn now(result: io::Result<()>) -> Wait {
        Wait(WaitKind::Now(result))
    }

    pub(crate) fn io(state: Arc<IoState>, dir: Dir, deadline: u64) -> Wait {
        Wait(WaitKind::Io {
            state,
            dir,
            deadline,
        })
    }

    /// The step that waits, then runs `then` (in the same fiber, on a stack from the worker's
    /// pool) with the outcome: `Ok` once ready, or the error the blocking operation would have
    /// returned (`TimedOut` after the socket's timeout).
    pub fn then(self, then: impl FnOnce(io::Result<()>) -> Step + 'static) -> Step {
        self.resume_with(Box::new(ResumeFn(then)))
    }

    /// As [`Wait::then`], with the rest of the fiber as a boxed [`Resume`]: a fiber that keeps
    /// its state in a box already passes that box on, and a wait costs no allocation.
    pub fn resume_with(self, next: Box<dyn Resume>) -> Step {
        match self.0 {
            WaitKind::Now(result) => Step(StepKind::Now(result, next)),
            WaitKind::Io {
                state,
                dir,
                deadline,
            } => Step(StepKind::Wait(IoWait {
                state,
                dir,
                deadline,
                then: next,
            })),
        }
    }
}

impl Step {
    /// The fiber is finished.
    pub fn done() -> Step {
        Step(StepKind::Done)
    }
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            StepKind::Done => "Step::Done",
            StepKind::Now(..) => "Step::Now",
            StepKind::Wait(..) => "Step::Wait",
        })
    }
}

impl IoWait {
    /// The step after the wait ended: `then`, or the same wait again after a spurious
    /// wake-up.
    #[inline(always)]
    fn woken(self, task: &Task, timed_out: bool) -> Step {
        match self.state.after_wait_of(task, self.dir, timed_out) {
            Err(e) => self.then.resume(Err(e)),
            Ok(()) if IoState::is_ready(self.state.snapshot(), self.dir) => {
                self.then.resume(Ok(()))
            }
            Ok(()) => Step(StepKind::Wait(self)),
        }
    }
}

/// Runs steps until the fiber finishes (`None`) or waits without its stack (the body to run
/// when woken).
#[inline(always)]
fn run_steps(task: &Task, mut step: Step) -> Option<Next> {
    loop {
        step = match step.0 {
            StepKind::Done => return None,
            StepKind::Now(result, then) => then.resume(result),
            StepKind::Wait(w) => {
                if !w.state.add_waiter(task, w.dir) {
                    w.then.resume(Ok(()))
                } else {
                    match park_begin(task, w.deadline) {
                        ParkBegin::Parked => return Some(Next(w)),
                        ParkBegin::Notified => w.woken(task, false),
                        ParkBegin::Raced => {
                            let timed_out = park_end(task);
                            w.woken(task, timed_out)
                        }
                    }
                }
            }
        };
    }
}

/// Runs the steps that start with `first`, and records the fiber's outcome once it is
/// finished (or a step panicked).
fn drive_steps(first: impl FnOnce(&Task) -> Step) -> Option<Next> {
    with_current(|task| {
        let task = task.expect("fibra: steps run in a fiber");
        match panic::catch_unwind(AssertUnwindSafe(|| run_steps(task, first(task)))) {
            Ok(Some(next)) => Some(next),
            Ok(None) => {
                task.complete(Some(Ok(Box::new(()))));
                None
            }
            Err(payload) => {
                task.complete(Some(Err(payload)));
                None
            }
        }
    })
}

/// Marks this thread as cancelling fibers: every suspended fiber it resumes unwinds.
pub(crate) fn set_cancelling(on: bool) {
    CANCELLING.with(|c| c.set(on));
}

#[cfg(test)]
mod layout_tests {
    use super::Task;
    use std::mem::{offset_of, size_of};

    #[test]
    fn a_park_wake_cycle_touches_one_line_of_the_task() {
        // `Arc<Task>`'s block is the two counts plus the task: keep it in the 128-byte bin...
        assert!(
            16 + size_of::<Task>() <= 128,
            "task is {} bytes",
            size_of::<Task>()
        );
        // ...with every field a park, wake or timer touches in its first 64 bytes.
        for end in [
            offset_of!(Task, state) + 1,
            offset_of!(Task, timed_out) + 1,
            offset_of!(Task, home) + 4,
            offset_of!(Task, key) + 4,
            offset_of!(Task, rt) + 8,
            offset_of!(Task, deadline) + 8,
            offset_of!(Task, timer_queued) + 8,
            offset_of!(Task, stack_limit) + 8,
        ] {
            assert!(16 + end <= 64, "hot field ends at {end}");
        }
    }
}
