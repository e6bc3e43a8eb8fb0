//! Context switching: creating, resuming and suspending a fiber's coroutine, and lending a
//! worker's shared stack ([`on_shared_stack`]).

use super::cancel::{cancel_once, cancelling};
use super::steps::Next;
use super::task::{current_ptr, with_current, Task, CURRENT};
use crate::worker;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::thread;

thread_local! {
    /// The yielder of the fiber running on this thread, null outside fibers.
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
}

/// The coroutine type every fiber runs in. It returns the fiber's next body when the fiber
/// waits without a stack (see [`Step`](crate::fiber::Step)), `None` when it is finished.
pub(crate) type FiberCoroutine = Coroutine<(), (), Option<Next>, DefaultStack>;

/// The body of a fiber that has not started yet.
pub(crate) type Body = Box<dyn FnOnce() -> Option<Next> + Send + 'static>;

/// Suspends the running fiber back to its worker. Must be called inside a fiber.
#[inline(always)]
pub(crate) fn suspend() {
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
    if cancelling() {
        cancel_once();
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
    /// Its stack is free: it waits without one and runs this body when woken (see [`Step`](crate::fiber::Step)).
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
