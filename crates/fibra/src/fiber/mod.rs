//! Fibers: spawning and joining, yielding, shared stacks and fibers made of steps.
//!
//! A fiber is a `corosensei` coroutine on a pooled stack. It is created lazily, when it first
//! runs on its home worker, so spawning is an allocation and a queue push. Once started it never
//! migrates (moving a running stack between threads is unsound in Rust: a fiber may hold an
//! `Rc`, a thread-local borrow or a `MutexGuard`; see the crate docs and `docs/ARCHITECTURE.md`).
//!
//! This module is the public face of fibers: [`spawn()`], [`Builder`] and [`JoinHandle`] are
//! here (`spawn.rs`), as are [`yield_now`] and [`on_shared_stack`] (`shared_stack.rs`). What
//! a fiber is to the runtime — the task record, parking, cancellation and the steps of a
//! stackless fiber ([`Step`], [`Wait`], [`Resume`]) — lives in the task layer below the
//! scheduler, and is re-exported here under the same paths.

mod shared_stack;
mod spawn;

pub use crate::sched::{in_fiber, Cancelled, Resume, Step, Wait};
pub use shared_stack::{on_shared_stack, yield_now};
pub use spawn::{spawn, Builder, JoinHandle};

pub(crate) use spawn::spawn_in;
