//! The runtime: worker threads, their configuration, `block_on` and shutdown.

use crate::fiber::{self, JoinHandle};
use crate::sched::{self, RtShared};
use crate::worker;
use std::io;
use std::sync::atomic::Ordering::SeqCst;
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
        let mut polls = Vec::with_capacity(self.workers);
        let mut shared = Vec::with_capacity(self.workers);
        for _ in 0..self.workers {
            let (poll, ws) = worker::new_poller()?;
            polls.push(poll);
            shared.push(ws);
        }
        let rt = Arc::new(RtShared::new(shared, self.stack_size, self.max_idle_stacks));
        let mut threads = Vec::with_capacity(self.workers);
        for (i, poll) in polls.into_iter().enumerate() {
            let rt2 = rt.clone();
            let spawned = thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || worker::run(i, rt2, poll));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    let partial = Runtime {
                        shared: rt,
                        threads,
                    };
                    drop(partial);
                    return Err(e);
                }
            }
        }
        Ok(Runtime {
            shared: rt,
            threads,
        })
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
        self.shared.shut_down();
        for w in &self.shared.workers {
            // An empty message list still wakes the poller; the flag does the rest.
            w.sleeping.store(false, SeqCst);
            let _ = w.driver.wake();
        }
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
