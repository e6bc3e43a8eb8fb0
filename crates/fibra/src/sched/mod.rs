//! The task layer: what a fiber is to the rest of the runtime, and how it waits and wakes.
//!
//! - `task`: the task record ([`Task`]), the park/unpark protocol and the waiters that
//!   synchronisation primitives keep ([`Waiter`], [`LocalWaiter`]);
//! - `cancel`: cancellation at runtime shutdown ([`Cancelled`]);
//! - `switch`: the running task around each context switch, and cancellation after it;
//! - `steps`: fibers made of steps ([`Step`], [`Wait`], [`Resume`]);
//! - `io`: a fiber waiting for socket readiness on the reactor;
//! - `shared`: what a runtime's threads share ([`RtShared`], each worker's inbox) and the
//!   worker's context ([`Local`]) through which parking and waking reach the scheduler.
//!
//! This layer sits above the stacks and context switching (`stack`, `switch`, `asan`,
//! `overflow`) and the readiness backend and timers (`driver`, `reactor`, `timer`), and below
//! the scheduler (`worker`) and the public API: it names neither. The scheduler plugs in
//! through [`Local`], a thread-local context it publishes for its loop; the stack layer's
//! overflow handler learns about the running fiber through
//! [`RunningFiber`](crate::overflow::RunningFiber), which [`Task`] implements.

mod cancel;
mod io;
mod shared;
mod steps;
mod switch;
mod task;
#[cfg(test)]
mod tests;

pub use cancel::Cancelled;
pub use steps::{Resume, Step, Wait};
pub use task::in_fiber;

pub(crate) use cancel::{end_unstarted, is_cancelled, mark_cancelled, set_cancelling};
pub(crate) use io::{wait_io, IoState};
pub(crate) use shared::{
    current_rt, enter, enter_blocking, is_home, leave, try_with_local, with_local, Local, Message,
    RtShared, WorkerShared,
};
pub(crate) use steps::{drive_steps, Next};
pub(crate) use switch::{
    left_loop_stack, make_coroutine, resume, run_on_loop_stack, suspend, Body, FiberCoroutine,
    Resumed,
};
pub(crate) use task::{
    current_ptr, park_until, unpark_on, with_current, LocalWaiter, Task, Timers, Waiter,
};
