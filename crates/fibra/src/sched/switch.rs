//! The task layer's side of context switching: the running task around each resume, and
//! cancellation after each suspend (the raw switches are in `crate::switch`).

use super::cancel::{cancel_once, cancelling};
use super::steps::Next;
use super::task::{Task, CURRENT};
use corosensei::stack::DefaultStack;
use corosensei::CoroutineResult;

/// The coroutine type every fiber runs in. It returns the fiber's next body when the fiber
/// waits without a stack (see [`Step`](crate::fiber::Step)), `None` when it is finished.
pub(crate) type FiberCoroutine = crate::switch::Coroutine<Next>;

/// The body of a fiber that has not started yet.
pub(crate) type Body = Box<dyn FnOnce() -> Option<Next> + Send + 'static>;

/// Suspends the running fiber back to its worker. Must be called inside a fiber.
#[inline(always)]
pub(crate) fn suspend() {
    crate::switch::suspend();
    if cancelling() {
        cancel_once();
    }
}

/// Creates the coroutine for a fiber's body on a pooled stack.
pub(crate) fn make_coroutine(
    stack: DefaultStack,
    body: impl FnOnce() -> Option<Next> + 'static,
) -> FiberCoroutine {
    crate::switch::make_coroutine(stack, body)
}

/// Runs `step`, the next step of waiting fiber `task`, right here on the worker loop's own
/// stack instead of in a coroutine of its own: the running task is set around it, and a
/// `suspend` inside it suspends the loop's coroutine (whose yielder is `yielder`) back to the
/// worker thread. Returns what the step returned; if it suspended meanwhile, it returns only
/// once the fiber has been resumed and its step has ended, with the loop's stack now the
/// fiber's (see `worker`).
#[inline(always)]
pub(crate) fn run_on_loop_stack(
    task: &Task,
    yielder: crate::switch::LoopYielder,
    step: impl FnOnce() -> Option<Next>,
) -> Option<Next> {
    crate::switch::enter_loop_stack(yielder, task as *const Task as usize);
    CURRENT.with(|c| c.set(task as *const Task));
    let next = step();
    CURRENT.with(|c| c.set(std::ptr::null()));
    crate::switch::loop_step_returned();
    next
}

/// The worker thread's stack again, after a loop coroutine suspended in a step it ran (see
/// [`run_on_loop_stack`]): no task runs.
#[inline]
pub(crate) fn left_loop_stack() {
    CURRENT.with(|c| c.set(std::ptr::null()));
}

/// How a resumed fiber stopped.
pub(crate) enum Resumed {
    /// It parked or yielded.
    Suspended,
    /// It finished.
    Finished,
    /// Its stack is free: it waits without one and runs this body when woken (see
    /// [`Step`](crate::fiber::Step)).
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
    let result = crate::switch::resume(co, task as *const Task as usize, &task.stack_limit);
    CURRENT.with(|c| c.set(std::ptr::null()));
    match result {
        CoroutineResult::Yield(()) => Resumed::Suspended,
        CoroutineResult::Return(None) => Resumed::Finished,
        CoroutineResult::Return(Some(next)) => Resumed::Waiting(next),
    }
}
