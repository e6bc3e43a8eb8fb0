//! Fibers waiting for socket readiness: the reactor's per-socket state with fibers as its
//! waiters, and the blocking wait.

use super::cancel::shutting_down;
use super::task::{park_fiber, Task};
use crate::reactor::{self, Dir, Identity};
use std::io;
use std::sync::Arc;

/// Readiness and waiting fibers of one registered socket (see [`reactor::IoState`]).
pub(crate) type IoState = reactor::IoState<Arc<Task>>;

impl Identity for Arc<Task> {
    fn identity(&self) -> usize {
        Arc::as_ptr(self) as usize
    }
}

/// Parks fiber `task` (the caller) until `dir` of `state` is ready or tick `deadline` (0:
/// none) passes. In a fiber being cancelled it fails at once instead.
pub(crate) fn wait_io(state: &IoState, task: &Task, dir: Dir, deadline: u64) -> io::Result<()> {
    if task.is_cancelled() {
        return Err(shutting_down());
    }
    if !state.add_waiter(dir, task.waiter_id(), || task.arc()) {
        return Ok(());
    }
    let timed_out = park_fiber(task, deadline);
    state.after_wait_of(task.waiter_id(), dir, timed_out)
}
