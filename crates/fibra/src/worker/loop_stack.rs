//! The worker loop in a coroutine of its own, and a woken fiber's next step run on that
//! coroutine's stack (see [`Worker::run_loops`]).

use super::{report, with, FiberState, Worker};
use crate::sched::{self, Next, Task};
use crate::switch::LoopYielder;
use corosensei::stack::Stack;
use corosensei::CoroutineResult;
use std::cell::Cell;
use std::sync::atomic::AtomicUsize;

/// What a worker loop running in a coroutine knows of itself.
pub(super) struct LoopCtx {
    /// The coroutine's yielder: a step run on the loop's stack suspends through it.
    yielder: LoopYielder,
    /// `limit` of the coroutine's stack (for the overflow handler, as a fiber's).
    pub(super) stack_limit: usize,
    /// Set by the worker thread once a step run on this loop's stack blocked: the stack (and
    /// the coroutine) are that fiber's from then on, and this loop is over.
    taken: Cell<bool>,
    /// What that step returned, once it has ended: the coroutine's result.
    outcome: Cell<Option<Next>>,
}

/// How a worker loop ended.
pub(super) enum LoopExit {
    /// The runtime shut down.
    Shutdown,
    /// A fiber's step that had blocked on the loop's stack has ended: the loop's coroutine,
    /// now that fiber's, returns what the step returned (`LoopCtx::outcome`).
    Taken,
}

impl Worker {
    /// The next step of fiber `key` (its task at `task`), run on the stack of the loop whose
    /// context is `ctx`, without a coroutine of its own: a wake-up of a fiber made of steps
    /// costs no stack switch. If the step blocks, the loop's coroutine suspends to the worker
    /// thread, which makes it the fiber's ([`Worker::run_loops`]) and starts a new loop; once
    /// the fiber has been resumed and the step has ended, this keeps its outcome in `ctx` and
    /// returns true: the coroutine returns it.
    pub(super) fn run_step_on_loop_stack(
        &self,
        key: usize,
        task: *const Task,
        next: Next,
        ctx: &LoopCtx,
    ) -> bool {
        self.running.set(true);
        self.on_loop_stack.set(Some((key, ctx as *const LoopCtx)));
        // SAFETY: the slot holding the task's `Arc` is not removed while `running` is set
        // (nor while it is taken over: its state is then the coroutine running this), so the
        // task outlives the step.
        let after = sched::run_on_loop_stack(unsafe { &*task }, ctx.yielder, || next.run());
        if ctx.taken.get() {
            // The fiber's coroutine now: whoever resumed it does the bookkeeping.
            ctx.outcome.set(after);
            return true;
        }
        self.on_loop_stack.set(None);
        self.running.set(false);
        let mut fibers = self.fibers.borrow_mut();
        match after {
            Some(next) => {
                let empty = std::mem::replace(&mut fibers[key].state, FiberState::Waiting(next));
                // `Empty` holds nothing: no need to call its destructor.
                std::mem::forget(empty);
            }
            None => {
                let slot = fibers.remove(key);
                drop(fibers);
                slot.task.mark_done();
                self.local.timers.borrow_mut().cancel(&slot.task);
            }
        }
        self.insert_deferred();
        false
    }

    /// The worker thread's part: runs the worker loop in a coroutine on a pooled stack, so
    /// that the loop can run a waiting fiber's next step right on its own stack. When such a
    /// step blocks, the loop's coroutine suspends back here: it becomes that fiber's
    /// coroutine (suspended in its step, as if it had its own), and a new loop coroutine
    /// takes over. Returns at runtime shutdown. Without a stack for a loop coroutine (out of
    /// memory or mappings), the loop runs on this thread's stack and every fiber in a
    /// coroutine of its own, as before.
    pub(super) fn run_loops(&self) {
        loop {
            let stack = match self.stacks.borrow_mut().get() {
                Ok(stack) => stack,
                Err(e) => {
                    report(format_args!(
                        "fibra: cannot allocate a stack for the worker loop ({e}); fibers \
                         made of steps get stacks of their own"
                    ));
                    self.run_loop(None);
                    return;
                }
            };
            let limit = stack.limit().get();
            let mut co = crate::switch::make_loop_coroutine(stack, move |yielder| {
                with(|w| w.loop_coroutine(yielder, limit))
            });
            // ASan names the loop by its stack, as a fiber by its task.
            let result = crate::switch::resume(&mut co, limit, &AtomicUsize::new(limit));
            match result {
                CoroutineResult::Yield(()) => {
                    let Some((key, ctx)) = self.on_loop_stack.take() else {
                        panic!("fibra: the worker loop suspended outside a fiber's step");
                    };
                    // SAFETY: `ctx` lives in the frame of the loop coroutine, which is
                    // suspended (not dropped): it stays until the coroutine ends.
                    unsafe { (*ctx).taken.set(true) };
                    sched::left_loop_stack();
                    self.running.set(false);
                    let mut fibers = self.fibers.borrow_mut();
                    fibers[key].state = FiberState::Suspended(co);
                    fibers[key].blocked = super::BLOCKED_STEPS;
                    drop(fibers);
                    self.insert_deferred();
                }
                CoroutineResult::Return(_) => {
                    if let Some(payload) = self.loop_panic.take() {
                        std::panic::resume_unwind(payload);
                    }
                    return;
                }
            }
        }
    }

    /// The body of a loop coroutine: the loop, until the runtime shuts down (returns to the
    /// worker thread) or the coroutine is a fiber's and its step has ended (returns the step's
    /// outcome to the loop that resumed it).
    fn loop_coroutine(&self, yielder: LoopYielder, stack_limit: usize) -> (Option<Next>, bool) {
        let ctx = LoopCtx {
            yielder,
            stack_limit,
            taken: Cell::new(false),
            outcome: Cell::new(None),
        };
        let exit =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_loop(Some(&ctx))));
        match exit {
            Ok(LoopExit::Shutdown) => (None, true),
            Ok(LoopExit::Taken) => (ctx.outcome.take(), false),
            Err(payload) => {
                self.loop_panic.set(Some(payload));
                (None, !ctx.taken.get())
            }
        }
    }
}
