//! A worker: one OS thread with its run queue, fiber slab, stack pool, timers and poller.
//!
//! The loop: run the fibers that are ready (those that yield go to the next round), take what
//! other threads sent through the inbox, then wait in the driver — with a zero timeout if
//! fibers are still runnable, otherwise until the next timer — refresh the cached clock, wake
//! the fibers whose sockets became ready, and fire due timers.
//!
//! Cross-thread wake-ups and spawns go through [`WorkerShared::inbox`]; the producer interrupts
//! the poller (an eventfd) only when the worker said it is about to sleep.
//!
//! The loop runs in a coroutine on a pooled stack (see [`Worker::run_loops`]), so that a woken
//! fiber made of steps can run its next step right on the loop's stack, without a coroutine of
//! its own; a step that blocks there takes the loop's coroutine over as its own, and a new loop
//! coroutine goes on.

use crate::driver::{Driver, Events};
use crate::sched::{
    self, is_home, Body, FiberCoroutine, IoState, Local, Message, Next, Resumed, RtShared, Task,
    Timers, WorkerShared,
};
use crate::stack::StackPool;
use crate::timer;
use corosensei::stack::{DefaultStack, Stack};
use loop_stack::{LoopCtx, LoopExit};
use slab::Slab;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod loop_stack;

/// While fibers stay runnable, the poller and timers are checked after this many fiber runs.
const POLL_INTERVAL: usize = 256;

/// Lent stacks kept for reuse beyond those in use; more go back to the stack pool.
const MAX_SHARED_STACKS: usize = 4;

/// At shutdown, how long the cancellation of a worker's fibers may go without any fiber
/// running before the fibers still parked are given up (leaked, not dropped): fibers that
/// caught [`Cancelled`](crate::Cancelled) and parked again, or destructors waiting for
/// something that no cancelled fiber will release.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// A fiber's slot in its worker's slab.
enum FiberState {
    NotStarted(Body),
    /// Parked without a stack (see [`Step`](crate::fiber::Step)): this body runs, on a pooled
    /// stack, when the fiber is woken.
    Waiting(Next),
    /// The coroutine, resumed in place: the slab is never mutated while a fiber runs (spawns
    /// made meanwhile are deferred), so the coroutine does not move.
    Suspended(FiberCoroutine),
    /// Transient, while the slot changes state.
    Empty,
}

struct Slot {
    task: Arc<Task>,
    state: FiberState,
    /// How many more of the fiber's steps get a coroutine of their own rather than the loop's
    /// stack, because one of its steps blocked there lately: a step that blocks on the loop's
    /// stack takes it over, which costs a new loop coroutine and two more switches. Set to
    /// [`BLOCKED_STEPS`] when that happens, one less per step run in a coroutine: a fiber
    /// whose steps block (a handler waiting on a database) tries the loop's stack once in so
    /// many steps, one whose steps stopped blocking is back on it soon.
    blocked: u8,
}

/// See [`Slot::blocked`].
const BLOCKED_STEPS: u8 = 16;

/// Everything a worker thread owns. Lives on the worker thread's stack; fibers reach it through
/// the thread-local [`with`]. No `RefCell` borrow is ever held across a fiber switch.
pub(crate) struct Worker {
    /// What the task layer and the public API see of this worker (index, runtime, run queue,
    /// timers, clock), published to them by `sched::enter` for the worker's whole loop.
    local: Local,
    fibers: RefCell<Slab<Slot>>,
    /// True while a fiber runs: the slab must not change then.
    running: Cell<bool>,
    /// True while the worker cancels its fibers at shutdown: a fiber that has not started
    /// (or waits without a stack) is started only to drop its body, as a cancelled fiber.
    cancelling: Cell<bool>,
    /// Fibers spawned onto this worker while a fiber ran; inserted once it stops.
    deferred: RefCell<VecDeque<(Arc<Task>, Body)>>,
    stacks: RefCell<StackPool>,
    /// Stacks lent by [`crate::fiber::on_shared_stack`]; the last one returned is lent next,
    /// so it stays in the CPU's caches.
    shared_stacks: RefCell<Vec<DefaultStack>>,
    driver: RefCell<Driver>,
    /// The readiness events of the last wait (kept here, not in the loop's frame: a loop
    /// whose stack a fiber takes over is replaced by a new one).
    events: RefCell<Events>,
    /// The fiber whose step runs on the loop's stack right now, and that loop's context: if
    /// the step blocks, the loop's coroutine suspends to the worker thread, which hands it to
    /// this fiber (see [`Worker::run_loops`]).
    on_loop_stack: Cell<Option<(usize, *const LoopCtx)>>,
    /// A panic of the worker loop's own code, carried out of its coroutine to the thread.
    loop_panic: Cell<Option<Box<dyn std::any::Any + Send>>>,
}

thread_local! {
    static WORKER: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` on the current thread's worker. Panics outside a worker thread.
pub(crate) fn with<R>(f: impl FnOnce(&Worker) -> R) -> R {
    try_with(f).expect("fibra: not on a fibra worker thread")
}

/// Runs `f` on the current thread's worker, if this is a worker thread.
pub(crate) fn try_with<R>(f: impl FnOnce(&Worker) -> R) -> Option<R> {
    let ptr = WORKER.with(|w| w.get());
    // SAFETY: WORKER is set by `run` to a Worker living on this thread's stack for the whole
    // loop and reset to null before that Worker is dropped; only this thread reads it.
    unsafe { ptr.as_ref() }.map(f)
}

/// Hands a new fiber to its home worker.
pub(crate) fn submit(task: Arc<Task>, body: Body) {
    if is_home(&task.rt, task.home()) {
        with(|w| w.insert(task, body));
    } else {
        let rt = task.rt.clone();
        rt.workers[task.home()].send(Message::Spawn(task, body));
    }
}

impl Worker {
    fn insert(&self, task: Arc<Task>, body: Body) {
        let mut fibers = self.fibers.borrow_mut();
        // While a fiber runs its slot must not move: insert only if the slab will not grow
        // (and nothing is deferred already, to keep spawn order).
        if self.running.get()
            && (fibers.len() == fibers.capacity() || !self.deferred.borrow().is_empty())
        {
            self.deferred.borrow_mut().push_back((task, body));
            return;
        }
        let key = fibers.insert(Slot {
            task: task.clone(),
            state: FiberState::NotStarted(body),
            blocked: 0,
        });
        task.set_key(key);
        self.local.queue.borrow_mut().push_back(key);
    }

    /// A stack to lend to a running fiber (see [`crate::fiber::on_shared_stack`]).
    pub(crate) fn take_shared_stack(&self) -> std::io::Result<DefaultStack> {
        match self.shared_stacks.borrow_mut().pop() {
            Some(s) => Ok(s),
            None => self.stacks.borrow_mut().get(),
        }
    }

    /// Takes a lent stack back.
    pub(crate) fn return_shared_stack(&self, stack: DefaultStack) {
        let mut shared = self.shared_stacks.borrow_mut();
        if shared.len() < MAX_SHARED_STACKS {
            shared.push(stack);
        } else {
            drop(shared);
            self.stacks.borrow_mut().put(stack);
        }
    }

    fn refresh_clock(&self) {
        let (ticks, now) = timer::round_clock();
        self.local.now.set(now);
        self.local.now_ticks.set(ticks);
    }

    /// Runs fiber `key` until it parks, yields or ends. Inside a loop coroutine (`ctx`), a
    /// fiber waiting without a stack runs its next step on the loop's own stack; if that step
    /// blocked, the loop's stack became the fiber's, and this returns true once the step has
    /// ended (its outcome is in `ctx`): the caller ends the loop.
    fn run_fiber(&self, key: usize, ctx: Option<&LoopCtx>) -> bool {
        let (task_ptr, co_ptr) = {
            let mut fibers = self.fibers.borrow_mut();
            let Some(slot) = fibers.get_mut(key) else {
                return false;
            };
            if let (Some(ctx), FiberState::Waiting(_), 0, false) =
                (ctx, &slot.state, slot.blocked, self.cancelling.get())
            {
                let FiberState::Waiting(next) =
                    std::mem::replace(&mut slot.state, FiberState::Empty)
                else {
                    unreachable!()
                };
                slot.task.stack_limit.store(ctx.stack_limit, Relaxed);
                let task = Arc::as_ptr(&slot.task);
                drop(fibers);
                return self.run_step_on_loop_stack(key, task, next, ctx);
            }
            if matches!(
                slot.state,
                FiberState::NotStarted(_) | FiberState::Waiting(_)
            ) {
                match self.stacks.borrow_mut().get() {
                    Ok(stack) => {
                        slot.blocked = slot.blocked.saturating_sub(1);
                        slot.task.stack_limit.store(stack.limit().get(), Relaxed);
                        let state = std::mem::replace(&mut slot.state, FiberState::Empty);
                        let co = if self.cancelling.get() {
                            // Its destructors run in the fiber, where blocking calls behave
                            // as in any cancelled fiber.
                            sched::mark_cancelled(&slot.task);
                            sched::make_coroutine(stack, move || {
                                sched::end_unstarted(move || drop(state))
                            })
                        } else {
                            match state {
                                FiberState::NotStarted(body) => sched::make_coroutine(stack, body),
                                FiberState::Waiting(next) => {
                                    sched::make_coroutine(stack, move || next.run())
                                }
                                _ => unreachable!(),
                            }
                        };
                        slot.state = FiberState::Suspended(co);
                    }
                    Err(e) => {
                        // Out of memory or mappings: the body is dropped, so a joiner sees
                        // the fiber as cancelled.
                        report(format_args!("fibra: cannot allocate a fiber stack: {e}"));
                        let slot = fibers.remove(key);
                        drop(fibers);
                        slot.task.mark_done();
                        self.local.timers.borrow_mut().cancel(&slot.task);
                        slot.task.complete(None);
                        // The body is user code: its destructors must not unwind this loop.
                        drop_outside_fibers(slot);
                        return false;
                    }
                }
            }
            let FiberState::Suspended(co) = &mut slot.state else {
                return false;
            };
            (Arc::as_ptr(&slot.task), co as *mut FiberCoroutine)
        };
        self.running.set(true);
        // SAFETY: the slab is not mutated while `running` is set (`insert` defers, and slots
        // are only removed below, after the fiber stopped), so the slot — its `Arc<Task>` and
        // the coroutine stored in place — stays where these pointers point, and nothing else
        // borrows the coroutine meanwhile. A task never moves inside its Arc.
        let resumed = unsafe { sched::resume(&*task_ptr, &mut *co_ptr) };
        self.running.set(false);
        match resumed {
            Resumed::Suspended => {}
            Resumed::Finished => {
                let slot = self.fibers.borrow_mut().remove(key);
                slot.task.mark_done();
                self.local.timers.borrow_mut().cancel(&slot.task);
                if let FiberState::Suspended(co) = slot.state {
                    self.stacks.borrow_mut().put(co.into_stack());
                }
            }
            Resumed::Waiting(next) => {
                // The fiber stays (parked, its wakers hold its key); its stack goes back to
                // the pool, on top, so the next fiber to start runs on it while it is cached.
                let mut fibers = self.fibers.borrow_mut();
                let slot = &mut fibers[key];
                if let FiberState::Suspended(co) =
                    std::mem::replace(&mut slot.state, FiberState::Waiting(next))
                {
                    self.stacks.borrow_mut().put(co.into_stack());
                }
            }
        }
        self.insert_deferred();
        false
    }

    /// Inserts the fibers spawned while a fiber ran, in spawn order.
    #[inline]
    fn insert_deferred(&self) {
        // The queue keeps its capacity for the next burst.
        if self.deferred.borrow().is_empty() {
            return;
        }
        loop {
            let next = self.deferred.borrow_mut().pop_front();
            match next {
                Some((task, body)) => self.insert(task, body),
                None => break,
            }
        }
    }

    fn drain_inbox(&self) {
        let shared = &self.local.rt.workers[self.local.index];
        if !shared.pending.load(SeqCst) {
            return;
        }
        shared.pending.store(false, SeqCst);
        let msgs = std::mem::take(
            &mut *self.local.rt.workers[self.local.index]
                .inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for msg in msgs {
            match msg {
                Message::Spawn(task, body) => self.insert(task, body),
                Message::Wake(task) => self.local.queue.borrow_mut().push_back(task.key()),
                Message::Release(token) => IoState::release(token),
            }
        }
    }

    fn inbox_empty(&self) -> bool {
        !self.local.rt.workers[self.local.index].pending.load(SeqCst)
    }

    /// The loop of one worker thread; returns at runtime shutdown, or, in a loop coroutine
    /// (`ctx`) that a fiber's blocked step took over, once that step has ended.
    fn run_loop(&self, ctx: Option<&LoopCtx>) -> LoopExit {
        let shared = &self.local.rt.workers[self.local.index];
        let mut ran_since_poll = 0usize;
        loop {
            let n = self.local.queue.borrow().len();
            for _ in 0..n {
                let next = self.local.queue.borrow_mut().pop_front();
                match next {
                    Some(key) => {
                        if self.run_fiber(key, ctx) {
                            return LoopExit::Taken;
                        }
                    }
                    None => break,
                }
            }
            ran_since_poll += n;
            self.drain_inbox();
            if self.local.rt.is_shutdown() {
                break;
            }
            // While fibers keep each other busy, look at I/O and timers only every
            // POLL_INTERVAL fiber runs: a wait in the driver per round would dominate a yield.
            if ran_since_poll < POLL_INTERVAL && !self.local.queue.borrow().is_empty() {
                continue;
            }
            ran_since_poll = 0;
            let mut timeout = if self.local.queue.borrow().is_empty() {
                self.local.timers.borrow().next_due().map(|due| {
                    Duration::from_millis(due.saturating_sub(self.local.now_ticks.get()))
                })
            } else {
                Some(Duration::ZERO)
            };
            if timeout != Some(Duration::ZERO) {
                shared.sleeping.store(true, SeqCst);
                if !self.inbox_empty() || self.local.rt.is_shutdown() {
                    timeout = Some(Duration::ZERO);
                }
            }
            let mut events = self.events.borrow_mut();
            let polled = self.driver.borrow_mut().wait(&mut events, timeout);
            shared.sleeping.store(false, SeqCst);
            if let Err(e) = polled {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    report(format_args!("fibra: waiting for I/O events failed: {e}"));
                }
            }
            self.refresh_clock();
            for event in events.iter() {
                IoState::on_event(event, |task| sched::unpark_on(&self.local, task));
            }
            drop(events);
            self.local
                .timers
                .borrow_mut()
                .fire(self.local.now_ticks.get());
        }
        self.cancel_all();
        LoopExit::Shutdown
    }

    /// Cancels every fiber still alive on this worker (runtime shutdown).
    ///
    /// Each fiber is resumed once with the cancellation flag up, so it unwinds with
    /// [`Cancelled`](crate::Cancelled) from its blocking call; a fiber that never started (or
    /// waits without a stack) is started to drop its body instead. While they unwind,
    /// destructors may block: their timed waits and socket waits return at once, but a lock
    /// or a channel waits for its cancelled counterpart, so the fibers those unwinds wake are
    /// run — also when the wake-up comes from another worker — until every fiber has ended,
    /// or none ran for [`CANCEL_GRACE`].
    fn cancel_all(&self) {
        sched::set_cancelling(true);
        self.cancelling.set(true);
        self.local.queue.borrow_mut().clear();
        let keys: Vec<usize> = self.fibers.borrow().iter().map(|(k, _)| k).collect();
        for key in keys {
            self.run_fiber(key, None);
        }
        let shared = &self.local.rt.workers[self.local.index];
        let mut events = Events::with_capacity(16);
        let mut last_progress = Instant::now();
        loop {
            self.drain_inbox();
            if self.fibers.borrow().is_empty() {
                break;
            }
            let next = self.local.queue.borrow_mut().pop_front();
            if let Some(key) = next {
                self.run_fiber(key, None);
                last_progress = Instant::now();
                continue;
            }
            if last_progress.elapsed() >= CANCEL_GRACE {
                break;
            }
            // Wait for a wake-up sent by another thread (the inbox's waker ends the wait).
            shared.sleeping.store(true, SeqCst);
            let timeout = if self.inbox_empty() {
                Duration::from_millis(10)
            } else {
                Duration::ZERO
            };
            let _ = self.driver.borrow_mut().wait(&mut events, Some(timeout));
            shared.sleeping.store(false, SeqCst);
        }
        // Fibers that never ended are leaked rather than dropped: dropping a suspended
        // coroutine would unwind it from here.
        // Their tasks are leaked with them: a registration without a reference count (an
        // mpsc receiver's) may still point at one.
        for (_, slot) in std::mem::take(&mut *self.fibers.borrow_mut()) {
            slot.task.complete(None);
            match slot.state {
                FiberState::Suspended(co) => {
                    crate::asan::leak_fiber(
                        Arc::as_ptr(&slot.task) as usize,
                        slot.task.stack_limit.load(Relaxed),
                    );
                    std::mem::forget(co);
                    std::mem::forget(slot.task);
                }
                other => drop_outside_fibers(other),
            }
        }
        sched::set_cancelling(false);
        self.local.timers.borrow_mut().clear();
        self.local.queue.borrow_mut().clear();
    }
}

/// Drops `value`, which holds user code (a fiber's body or the rest of its steps), on the
/// worker thread outside any fiber: a panic in its destructors is reported (the panic hook
/// has printed it) and does not unwind the worker.
fn drop_outside_fibers<T>(value: T) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value))).is_err() {
        report(format_args!(
            "fibra: a fiber's body panicked while it was dropped; the worker goes on"
        ));
    }
}

/// Writes a worker's message to stderr. A failed write is ignored: `eprintln!` would panic on
/// a stderr whose reader has gone, and end the worker.
fn report(msg: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Creates the poller and the shared half of a worker (on the thread that builds the runtime,
/// so set-up errors surface from `Builder::build`).
pub(crate) fn new_poller() -> std::io::Result<(Driver, WorkerShared)> {
    let (driver, handle) = Driver::new()?;
    Ok((
        driver,
        WorkerShared {
            inbox: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            driver: handle,
        },
    ))
}

/// Body of worker thread `index`.
pub(crate) fn run(index: usize, rt: Arc<RtShared>, driver: Driver) {
    let _altstack = crate::overflow::install::<Task>();
    let now = Instant::now();
    let worker = Worker {
        stacks: RefCell::new(StackPool::new(rt.stack_size, rt.max_idle_stacks)),
        shared_stacks: RefCell::new(Vec::new()),
        local: Local {
            index,
            rt,
            queue: RefCell::new(VecDeque::with_capacity(1024)),
            timers: RefCell::new(Timers::default()),
            now: Cell::new(now),
            now_ticks: Cell::new(timer::ticks_passed()),
        },
        fibers: RefCell::new(Slab::with_capacity(1024)),
        running: Cell::new(false),
        cancelling: Cell::new(false),
        deferred: RefCell::new(VecDeque::new()),
        driver: RefCell::new(driver),
        events: RefCell::new(Events::with_capacity(1024)),
        on_loop_stack: Cell::new(None),
        loop_panic: Cell::new(None),
    };
    WORKER.with(|w| w.set(&worker as *const Worker));
    // SAFETY: `worker` (and its Local) lives on this stack frame, unmoved, until `leave` below.
    unsafe { sched::enter(&worker.local) };
    worker.run_loops();
    sched::leave();
    WORKER.with(|w| w.set(std::ptr::null()));
}
