//! Blocking offload: run blocking code on a helper thread pool while the calling fiber parks.

use crate::fiber;
use crate::sync::oneshot;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

/// Most helper threads alive at once; further jobs queue.
const MAX_THREADS: usize = 256;
/// A helper thread with no work for this long exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Pool {
    state: Mutex<PoolState>,
    cond: Condvar,
}

struct PoolState {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        state: Mutex::new(PoolState {
            jobs: VecDeque::new(),
            threads: 0,
            idle: 0,
        }),
        cond: Condvar::new(),
    })
}

fn helper_loop() {
    let pool = pool();
    let mut st = pool.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(job) = st.jobs.pop_front() {
            drop(st);
            job();
            st = pool.state.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        st.idle += 1;
        let (next, timeout) = pool
            .cond
            .wait_timeout(st, IDLE_EXIT)
            .unwrap_or_else(|e| e.into_inner());
        st = next;
        st.idle -= 1;
        if timeout.timed_out() && st.jobs.is_empty() {
            st.threads -= 1;
            return;
        }
    }
}

fn submit(job: Job) {
    let pool = pool();
    let mut st = pool.state.lock().unwrap_or_else(|e| e.into_inner());
    st.jobs.push_back(job);
    if st.idle > 0 {
        pool.cond.notify_one();
    } else if st.threads < MAX_THREADS {
        st.threads += 1;
        drop(st);
        let spawned = thread::Builder::new()
            .name("fibra-blocking".into())
            .spawn(helper_loop);
        if spawned.is_err() {
            pool.state.lock().unwrap_or_else(|e| e.into_inner()).threads -= 1;
        }
    }
}

/// Runs `f` on a helper thread and parks the calling fiber until it returns its value.
///
/// Use it for blocking system calls and CPU-heavy work that would otherwise stall every fiber
/// of the worker. Outside a fiber, `f` simply runs on the calling thread. If `f` panics, the
/// panic is resumed in the caller. Inside `f`, [`fibra::spawn`](crate::spawn) spawns onto the
/// caller's runtime, and the runtime's sockets and sync primitives block the helper thread.
///
/// ```
/// let len = fibra::run(|| {
///     fibra::task::spawn_blocking(|| std::fs::read_to_string("Cargo.toml").map(|s| s.len()))
/// });
/// assert!(len.unwrap() > 0);
/// ```
pub fn spawn_blocking<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if !fiber::in_fiber() {
        return f();
    }
    let (tx, rx) = oneshot::channel();
    let rt = crate::sched::current_rt();
    submit(Box::new(move || {
        let _context = rt.map(crate::sched::enter_blocking);
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    }));
    match rx.recv() {
        Ok(Ok(v)) => v,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("fibra: blocking task was dropped without running"),
    }
}
