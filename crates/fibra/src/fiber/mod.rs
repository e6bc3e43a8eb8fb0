//! Fibers: spawning and joining, yielding, shared stacks and fibers made of steps.
//!
//! A fiber is a `corosensei` coroutine on a pooled stack. It is created lazily, when it first
//! runs on its home worker, so spawning is an allocation and a queue push. Once started it never
//! migrates (moving a running stack between threads is unsound in Rust: a fiber may hold an
//! `Rc`, a thread-local borrow or a `MutexGuard`; see the crate docs and `docs/ARCHITECTURE.md`).
//!
//! The module is split by job:
//! - `task`: the task record every part of the runtime shares, the park/unpark protocol and
//!   the waiters that synchronisation primitives keep;
//! - `cancel`: cancellation at runtime shutdown ([`Cancelled`]);
//! - `switch`: context switching (creating, resuming and suspending coroutines, yielding and
//!   [`on_shared_stack`]);
//! - `spawn`: [`spawn()`], [`Builder`] and [`JoinHandle`];
//! - `steps`: fibers made of steps ([`Step`], [`Wait`], [`Resume`]).

mod cancel;
mod spawn;
mod steps;
mod switch;
mod task;
#[cfg(test)]
mod tests;

pub use cancel::Cancelled;
pub use spawn::{spawn, Builder, JoinHandle};
pub use steps::{Resume, Step, Wait};
pub use switch::{on_shared_stack, yield_now};
pub use task::in_fiber;

pub(crate) use cancel::{
    end_unstarted, is_cancelled, mark_cancelled, set_cancelling, shutting_down,
};
pub(crate) use spawn::spawn_in;
pub(crate) use steps::Next;
pub(crate) use switch::{make_coroutine, resume, Body, FiberCoroutine, Resumed};
pub(crate) use task::{
    current_ptr, park_fiber, park_until, unpark, with_current, LocalWaiter, Task, Waiter,
};
