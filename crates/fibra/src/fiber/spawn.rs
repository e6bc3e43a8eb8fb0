//! Spawning and joining: [`spawn`], [`Builder`] and [`JoinHandle`].

use crate::sched::{current_rt, drive_steps, with_current, Body, Cancelled, RtShared, Step, Task};
use crate::worker;
use std::any::Any;
use std::io;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::thread;

/// A handle to join a fiber, like [`std::thread::JoinHandle`].
///
/// Dropping it detaches the fiber.
pub struct JoinHandle<T> {
    task: Arc<Task>,
    _result: PhantomData<fn() -> T>,
}

impl<T: 'static> JoinHandle<T> {
    /// Waits for the fiber to finish and returns its result, or the payload of its panic
    /// ([`Cancelled`] if its runtime shut down before it finished).
    ///
    /// Called from a fiber, only that fiber parks; from a thread, the thread blocks.
    pub fn join(self) -> thread::Result<T> {
        match self.task.wait_outcome() {
            Some(Ok(value)) => Ok(*value
                .downcast::<T>()
                .expect("a fiber's result has the JoinHandle's type")),
            Some(Err(payload)) => Err(payload),
            None => Err(Box::new(Cancelled)),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // After a `join` the value is taken already, and this finds nothing to drop.
        self.task.detach();
    }
}

impl<T> JoinHandle<T> {
    /// Whether the fiber has finished.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// The fiber's unique id.
    pub fn id(&self) -> u64 {
        self.task.id
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.task.id)
            .finish()
    }
}

/// Fiber factory with options, like [`std::thread::Builder`].
///
/// ```
/// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
/// let v = rt.block_on(|| {
///     let h = fibra::fiber::Builder::new().name("adder").worker(1).spawn(|| 40 + 2).unwrap();
///     h.join().unwrap()
/// });
/// assert_eq!(v, 42);
/// ```
#[derive(Debug, Default)]
pub struct Builder {
    name: Option<String>,
    worker: Option<usize>,
}

impl Builder {
    /// A builder with no name, placed round-robin.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the fiber (shown in stack-overflow messages).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Places the fiber on worker `index` (modulo the worker count).
    pub fn worker(mut self, index: usize) -> Self {
        self.worker = Some(index);
        self
    }

    /// Spawns the fiber on the current runtime.
    ///
    /// Fails with `io::ErrorKind::Other` when called outside a fibra runtime.
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Ok(spawn_in(&current_runtime()?, self.name, self.worker, f))
    }

    /// Spawns a fiber made of steps (see [`Step`]): `f` runs first, and each step it (or a
    /// later one) returns says whether the fiber is done or what it waits for next, holding no
    /// stack meanwhile. The handle's `join` returns once a step returns [`Step::done`], or
    /// with the payload of a step that panicked.
    ///
    /// Fails with `io::ErrorKind::Other` when called outside a fibra runtime.
    pub fn spawn_steps<F>(self, f: F) -> io::Result<JoinHandle<()>>
    where
        F: FnOnce() -> Step + Send + 'static,
    {
        let body: Body = Box::new(move || drive_steps(move |_| f()));
        Ok(submit_body(
            &current_runtime()?,
            self.name,
            self.worker,
            body,
        ))
    }
}

/// The runtime of the calling thread, or the error `Builder`'s spawns report outside one.
fn current_runtime() -> io::Result<Arc<RtShared>> {
    current_rt().ok_or_else(|| {
        io::Error::other("fibra::spawn called outside a fibra runtime (use Runtime::block_on)")
    })
}

/// Spawns a fiber on the current runtime, like [`std::thread::spawn`].
///
/// The fiber is placed round-robin on a worker and stays there once it starts.
///
/// # Panics
/// Panics when called outside a fibra runtime.
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).unwrap_or_else(|e| panic!("{e}"))
}

/// Spawns a fiber on runtime `rt`.
pub(crate) fn spawn_in<F, T>(
    rt: &Arc<RtShared>,
    name: Option<String>,
    worker: Option<usize>,
    f: F,
) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let body: Body = Box::new(move || {
        let result = panic::catch_unwind(AssertUnwindSafe(f))
            .map(|value| Box::new(value) as Box<dyn Any + Send>);
        // The body runs inside its own fiber, so the current task is this fiber's.
        with_current(|task| {
            if let Some(task) = task {
                task.complete(Some(result));
            }
        });
        None
    });
    submit_body(rt, name, worker, body)
}

/// Creates the task for `body` on runtime `rt` (on worker `worker`, or round-robin) and hands
/// it to its home worker.
fn submit_body<T>(
    rt: &Arc<RtShared>,
    name: Option<String>,
    worker: Option<usize>,
    body: Body,
) -> JoinHandle<T> {
    let home = match worker {
        Some(i) => i % rt.workers.len(),
        None => rt.next_worker(),
    };
    let task = Arc::new(Task::new(rt.next_id(), name, home, rt.clone()));
    let handle = JoinHandle {
        task: task.clone(),
        _result: PhantomData,
    };
    worker::submit(task, body);
    handle
}
