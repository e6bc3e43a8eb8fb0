//! Context switching: a fiber's coroutine on a pooled stack, and the raw switches into it
//! (resume) and out of it (suspend), with the AddressSanitizer annotations around them.
//!
//! This layer knows stacks and `corosensei`, not tasks: the task layer (`sched::switch`) adds
//! its bookkeeping (the running task, cancellation) around these calls.

use corosensei::stack::DefaultStack;
use corosensei::{CoroutineResult, Yielder};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::AtomicUsize;

/// A fiber's coroutine. Its body returns `Some(next)` when the fiber goes on waiting without a
/// stack (`next` is what runs when it is woken), `None` when it is finished.
pub(crate) type Coroutine<N> = corosensei::Coroutine<(), (), Option<N>, DefaultStack>;

thread_local! {
    /// The yielder of the fiber running on this thread, null outside fibers.
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
}

/// Suspends the running fiber back to the thread that resumed it. Must be called inside a
/// fiber.
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
}

/// The yielder of a worker loop's coroutine (see [`make_loop_coroutine`]), as the loop hands it
/// to a step it runs on its own stack.
pub(crate) type LoopYielder = *const Yielder<(), ()>;

/// Makes `yielder` the one a `suspend` on this thread uses: the worker loop's, right before it
/// runs the step of the fiber named `key` (its task's address, for the sanitizer) on the
/// loop's own stack. A step that blocks then suspends the loop's coroutine, which becomes that
/// fiber's (see `worker`).
#[inline(always)]
pub(crate) fn enter_loop_stack(yielder: LoopYielder, key: usize) {
    YIELDER.with(|y| y.set(yielder));
    crate::asan::step_on_loop_stack(key);
}

/// The step run on the loop's stack (see [`enter_loop_stack`]) has returned.
#[inline(always)]
pub(crate) fn loop_step_returned() {
    crate::asan::step_on_loop_stack_done();
}

/// Creates the coroutine a worker's loop runs in, on a pooled stack. `body` gets the
/// coroutine's yielder and returns what the coroutine returns, and whether it returns to the
/// worker's own thread stack (the loop ended) rather than to another loop (the coroutine had
/// become a fiber's, whose step has now ended).
pub(crate) fn make_loop_coroutine<N: 'static>(
    stack: DefaultStack,
    body: impl FnOnce(LoopYielder) -> (Option<N>, bool) + 'static,
) -> Coroutine<N> {
    crate::asan::fresh_stack(&stack);
    corosensei::Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
        crate::asan::loop_entered();
        let (next, to_thread_stack) =
            panic::catch_unwind(AssertUnwindSafe(|| body(yielder as *const _)))
                .unwrap_or((None, true));
        crate::asan::loop_exiting(to_thread_stack);
        next
    })
}

/// Creates the coroutine for a fiber's body on a pooled stack.
pub(crate) fn make_coroutine<N: 'static>(
    stack: DefaultStack,
    body: impl FnOnce() -> Option<N> + 'static,
) -> Coroutine<N> {
    crate::asan::fresh_stack(&stack);
    corosensei::Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
        crate::asan::fiber_entered();
        YIELDER.with(|y| y.set(yielder as *const _));
        // `body` catches the user's panic; this catch is for `Cancelled` unwinding out of the
        // join plumbing and keeps any unwind from crossing the coroutine boundary.
        let next = panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(None);
        crate::asan::fiber_exiting();
        next
    })
}

/// Resumes coroutine `co` of the fiber named `key` (its task's address, for the sanitizer),
/// whose current stack starts at `stack_limit`, until it suspends or returns.
#[inline(always)]
pub(crate) fn resume<N>(
    co: &mut Coroutine<N>,
    key: usize,
    stack_limit: &AtomicUsize,
) -> CoroutineResult<(), Option<N>> {
    let fake = crate::asan::to_fiber(key, stack_limit);
    let result = co.resume(());
    crate::asan::back_from_fiber(fake);
    result
}
