//! The runtime: worker threads, their configuration, `block_on` and shutdown.

use crate::driver::Driver;
use crate::fiber::{self, JoinHandle};
use crate::sched::{self, RtShared};
use crate::worker;
use std::io;
use std::sync::Arc;
use std::thread;

/// Default usable stack size of a fiber: 256 KiB.
///
/// Only touched pages become resident, so the cost of a parked fiber is the few pages it used
/// (typically 8–12 KiB), while debug builds and deep-ish library calls (serde, regex, TLS) fit.
pub const DEFAULT_STACK_SIZE: usize = 256 * 1024;

/// Default number of idle stacks each worker keeps for reuse.
pub const DEFAULT_MAX_IDLE_STACKS: usize = 4096;

/// Configures a [`Runtime`].
///
/// ```
/// let rt = fibra::Runtime::builder().workers(1).stack_size(64 * 1024).build().unwrap();
/// assert_eq!(rt.block_on(|| 6 * 7), 42);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    workers: usize,
    stack_size: usize,
    max_idle_stacks: usize,
    name: String,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: thread::available_parallelism().map_or(1, |n| n.get()),
            stack_size: DEFAULT_STACK_SIZE,
            max_idle_stacks: DEFAULT_MAX_IDLE_STACKS,
            name: "fibra-worker".into(),
        }
    }
}

impl Builder {
    /// A builder with one worker per core and [`DEFAULT_STACK_SIZE`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker threads (at least 1). Default: the number of cores.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Usable stack size of each fiber in bytes (a guard page is added). Default 256 KiB.
    /// Each worker's loop runs on a stack of this size too, and a woken fiber made of steps
    /// (see [`Step`](crate::fiber::Step)) runs its next step on that stack, below about a
    /// kilobyte of the loop's frames.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// How many finished fibers' stacks each worker keeps for reuse. Default 4096.
    pub fn max_idle_stacks(mut self, n: usize) -> Self {
        self.max_idle_stacks = n;
        self
    }

    /// Name prefix of the worker threads. Default `fibra-worker`.
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Starts the worker threads.
    pub fn build(self) -> io::Result<Runtime> {
        Ok(self.start(0)?.0)
    }

    /// Runs `f` as the root fiber of a new runtime whose worker 0 is the calling thread
    /// (workers 1.. get threads of their own, as [`build`](Self::build) makes them), and
    /// returns `f`'s value once it has returned and the runtime has shut down: fibers still
    /// alive then are cancelled, as when a [`Runtime`] is dropped. If `f` panics, the panic is
    /// resumed on the caller once the runtime has shut down.
    ///
    /// A one-worker runtime made this way is the calling thread alone: a process that has no
    /// other thread keeps a descriptor table of its own, which the kernel's descriptor
    /// look-up in every system call on a socket takes without atomic reference counts.
    ///
    /// ```
    /// let v = fibra::Runtime::builder()
    ///     .workers(1)
    ///     .run(|| fibra::spawn(|| 6 * 7).join().unwrap())
    ///     .unwrap();
    /// assert_eq!(v, 42);
    /// ```
    ///
    /// # Errors
    /// What [`build`](Self::build) reports: a poller or a worker thread that could not be made.
    ///
    /// # Panics
    /// Panics if called on a fibra worker thread (from a fiber, or a runtime's own thread).
    pub fn run<F, T>(self, f: F) -> io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        assert!(
            sched::try_with_local(|_| ()).is_none(),
            "Builder::run called on a fibra worker thread; use fibra::spawn and join instead"
        );
        let (rt, mut caller) = self.start(1)?;
        let driver = caller.pop().expect("start(1) keeps worker 0's poller");
        // Created out here, so that it stops the runtime also if the fiber's body is dropped
        // without running (a stack that could not be had).
        let stop = StopWhenDropped(rt.shared.clone());
        let handle = fiber::spawn_in(&rt.shared, Some("root".into()), Some(0), move || {
            let _stop = stop;
            f()
        });
        worker::run(0, rt.shared.clone(), driver);
        // Joins workers 1.., then reports what was never started as cancelled.
        drop(rt);
        match handle.join() {
            Ok(v) => Ok(v),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }

    /// Makes the pollers of every worker and starts threads for workers `first..`; returns
    /// the pollers of workers `0..first`, whose loops the caller runs.
    fn start(self, first: usize) -> io::Result<(Runtime, Vec<Driver>)> {
        let mut polls = Vec::with_capacity(self.workers);
        let mut shared = Vec::with_capacity(self.workers);
        for _ in 0..self.workers {
            let (poll, ws) = worker::new_poller()?;
            polls.push(poll);
            shared.push(ws);
        }
        let rt = Arc::new(RtShared::new(shared, self.stack_size, self.max_idle_stacks));
        let threaded = polls.split_off(first.min(polls.len()));
        let mut runtime = Runtime {
            shared: rt,
            threads: Vec::with_capacity(threaded.len()),
        };
        for (i, poll) in (first..).zip(threaded) {
            let rt2 = runtime.shared.clone();
            // On an error, dropping `runtime` stops and joins the threads started so far.
            let spawned = thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || worker::run(i, rt2, poll))?;
            runtime.threads.push(spawned);
        }
        Ok((runtime, polls))
    }
}

/// Held by the root fiber of [`Builder::run`]: when it ends (or its body is dropped unrun),
/// the runtime shuts down, and the calling thread's worker loop returns.
struct StopWhenDropped(Arc<RtShared>);

impl Drop for StopWhenDropped {
    fn drop(&mut self) {
        self.0.stop_workers();
    }
}

/// A set of worker threads running fibers.
///
/// Dropping the runtime stops its workers: fibers still alive are cancelled — resumed once more
/// and unwound with a [`Cancelled`](crate::Cancelled) payload so their destructors run — and
/// the threads are joined.
///
/// ```
/// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
/// let sum = rt.block_on(|| {
///     let hs: Vec<_> = (0..10u64).map(|i| fibra::spawn(move || i * i)).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
/// });
/// assert_eq!(sum, 285);
/// ```
pub struct Runtime {
    shared: Arc<RtShared>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.shared.workers.len())
            .finish()
    }
}

impl Runtime {
    /// A runtime with one worker per core.
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    /// A [`Builder`].
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    /// Spawns a fiber from outside (or inside) the runtime.
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        fiber::spawn_in(&self.shared, None, None, f)
    }

    /// Runs `f` as a root fiber on worker 0 and blocks the calling thread until it returns.
    ///
    /// Returns `f`'s value; if `f` panics, the panic is resumed on the caller. Other fibers keep
    /// running after it returns, until the runtime is dropped.
    ///
    /// # Panics
    /// Panics if called from inside a fiber (that would block a worker thread).
    pub fn block_on<F, T>(&self, f: F) -> T
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        assert!(
            !fiber::in_fiber(),
            "Runtime::block_on called inside a fiber; use fibra::spawn and join instead"
        );
        let handle = fiber::spawn_in(&self.shared, Some("root".into()), Some(0), f);
        match handle.join() {
            Ok(v) => v,
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shared.stop_workers();
        let me = thread::current().id();
        let mut all_joined = true;
        for t in self.threads.drain(..) {
            if t.thread().id() != me {
                let _ = t.join();
            } else {
                all_joined = false;
            }
        }
        if all_joined {
            // Messages that arrived after the workers' last look: fibers that never started
            // are reported to their joiners as cancelled.
            for w in &self.shared.workers {
                w.discard_inbox();
            }
        }
    }
}

/// Runs `f` on a new runtime with one worker per core and returns its value.
///
/// Fibers still running when `f` returns are cancelled when the runtime is dropped.
///
/// ```
/// let v = fibra::run(|| fibra::spawn(|| "hi").join().unwrap());
/// assert_eq!(v, "hi");
/// ```
pub fn run<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Runtime::new()
        .expect("fibra: cannot start the runtime")
        .block_on(f)
}

/// The index of the worker running the caller, if it runs on one.
pub fn current_worker() -> Option<usize> {
    sched::try_with_local(|l| l.index)
}

/// How many workers the runtime running the caller has, if it runs on one: the indices
/// [`fiber::Builder::worker`](crate::fiber::Builder::worker) places fibers on are `0..` it.
pub fn current_worker_count() -> Option<usize> {
    sched::try_with_local(|l| l.rt.workers.len())
}
