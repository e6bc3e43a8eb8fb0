//! `Notify`: wake one or all waiting fibers, with a stored permit like tokio's.

use super::lock;
use crate::fiber::{park_until, Waiter};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Wakes waiting fibers or threads.
///
/// `notify_one` wakes one waiter, or, if none waits, stores a permit that the next `wait`
/// consumes at once. `notify_all` wakes every current waiter and stores nothing.
///
/// ```
/// use std::sync::Arc;
/// fibra::run(|| {
///     let n = Arc::new(fibra::sync::Notify::new());
///     let n2 = n.clone();
///     let h = fibra::spawn(move || n2.wait());
///     n.notify_one();
///     h.join().unwrap();
/// });
/// ```
#[derive(Default)]
pub struct Notify {
    state: Mutex<NotifyState>,
}

#[derive(Default)]
struct NotifyState {
    permit: bool,
    waiters: VecDeque<(Waiter, Arc<AtomicBool>)>,
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notify")
    }
}

impl Notify {
    /// A new `Notify` with no permit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wakes one waiter, or stores a permit for the next `wait`.
    pub fn notify_one(&self) {
        let woken = {
            let mut st = lock(&self.state);
            match st.waiters.pop_front() {
                Some((w, flag)) => {
                    flag.store(true, Ordering::Release);
                    Some(w)
                }
                None => {
                    st.permit = true;
                    None
                }
            }
        };
        if let Some(w) = woken {
            w.wake();
        }
    }

    /// Wakes every current waiter.
    pub fn notify_all(&self) {
        let all = std::mem::take(&mut lock(&self.state).waiters);
        for (w, flag) in all {
            flag.store(true, Ordering::Release);
            w.wake();
        }
    }

    /// Waits for a notification.
    pub fn wait(&self) {
        self.wait_deadline(None);
    }

    /// Waits at most `timeout`; returns whether it was notified.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.wait_deadline(Some(Instant::now() + timeout))
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> bool {
        let flag = {
            let mut st = lock(&self.state);
            if st.permit {
                st.permit = false;
                return true;
            }
            let flag = Arc::new(AtomicBool::new(false));
            st.waiters.push_back((Waiter::current(), flag.clone()));
            flag
        };
        loop {
            let timed_out = park_until(deadline);
            if flag.load(Ordering::Acquire) {
                return true;
            }
            if timed_out {
                let mut st = lock(&self.state);
                if flag.load(Ordering::Acquire) {
                    return true;
                }
                st.waiters.retain(|(_, f)| !Arc::ptr_eq(f, &flag));
                return false;
            }
        }
    }
}
