//! `WaitGroup`: wait until a set of fibers has finished (crossbeam's shape).
//!
//! # Waiter protocol
//! `wait` registers in a [`WaitList`] once (a spurious wake-up finds its entry still queued);
//! the drop of the last member drains the list and wakes everyone; a waiter leaves its entry
//! on every exit, including an unwind. In a fiber being cancelled, `wait` still waits: the
//! other members are dropped as their fibers unwind.

use super::lock;
use super::wait_list::{Place, WaitList};
use crate::sched::{park_until, Waiter};
use std::sync::{Arc, Mutex};

/// Each clone is one member; dropping a clone says that member is done; `wait` blocks until
/// every other member is done.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
/// let n = fibra::run(|| {
///     let wg = fibra::sync::WaitGroup::new();
///     let count = Arc::new(AtomicUsize::new(0));
///     for _ in 0..10 {
///         let (wg, count) = (wg.clone(), count.clone());
///         fibra::spawn(move || { count.fetch_add(1, Ordering::SeqCst); drop(wg); });
///     }
///     wg.wait();
///     count.load(Ordering::SeqCst)
/// });
/// assert_eq!(n, 10);
/// ```
pub struct WaitGroup {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    count: usize,
    waiters: WaitList<Waiter>,
}

impl Default for WaitGroup {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitGroup {
    /// A group with one member (this handle).
    pub fn new() -> Self {
        WaitGroup {
            inner: Arc::new(Mutex::new(Inner {
                count: 1,
                waiters: WaitList::default(),
            })),
        }
    }

    /// Leaves the group and waits until every other member has left.
    pub fn wait(self) {
        let inner = self.inner.clone();
        drop(self);
        let mut place = Place::new(&*inner, |st: &mut Inner| &mut st.waiters);
        loop {
            {
                let mut st = lock(&inner);
                if st.count == 0 {
                    place.leave_served(&mut st);
                    return;
                }
                place.register(&mut st);
            }
            park_until(None);
        }
    }
}

impl Clone for WaitGroup {
    fn clone(&self) -> Self {
        lock(&self.inner).count += 1;
        WaitGroup {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for WaitGroup {
    fn drop(&mut self) {
        let waiters = {
            let mut st = lock(&self.inner);
            st.count -= 1;
            if st.count == 0 {
                st.waiters.drain().collect()
            } else {
                Vec::new()
            }
        };
        for w in waiters {
            w.wake();
        }
    }
}

impl std::fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitGroup")
            .field("count", &lock(&self.inner).count)
            .finish()
    }
}
