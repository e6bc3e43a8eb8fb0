//! Yielding, and running a burst of work on a stack the worker lends ([`on_shared_stack`]).

use crate::sched::{current_ptr, suspend, with_current, with_local, Task};
use crate::worker;
use corosensei::stack::DefaultStack;
use std::sync::atomic::Ordering::Relaxed;
use std::thread;

/// Lets the other runnable fibers of this worker run before the caller continues.
///
/// Outside a fiber it yields the OS thread.
#[inline(always)]
pub fn yield_now() {
    let Some(key) = with_current(|t| t.map(|t| t.key())) else {
        thread::yield_now();
        return;
    };
    with_local(|l| l.queue.borrow_mut().push_back(key));
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
