//! `Notify`: wake one or all waiting fibers, with a stored permit like tokio's.
//!
//! # Waiter protocol
//! Waiters queue in a [`WaitList`] (see its protocol): `wait` registers once per call (a
//! spurious wake-up finds its entry still queued), `notify_one` pops the oldest entry and
//! `notify_all` drains them, and a waiter whose entry was popped was notified. A waiter leaves
//! its entry on every exit; one that unwinds after it was notified passes the notification on
//! to the next waiter.

use super::lock;
use super::wait_list::{Place, WaitList};
use crate::sched::{is_cancelled, park_until, Waiter};
use std::sync::Mutex;
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
pub(crate) struct NotifyState {
    permit: bool,
    waiters: WaitList<Waiter>,
}

/// The wait list of a [`NotifyState`].
fn waiters_of(st: &mut NotifyState) -> &mut WaitList<Waiter> {
    &mut st.waiters
}

/// A waiter's place in a [`Notify`] (see [`Notify::place`]).
pub(crate) type NotifyPlace<'a> =
    Place<'a, NotifyState, fn(&mut NotifyState) -> &mut WaitList<Waiter>>;

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
            let w = st.waiters.pop_front();
            st.permit |= w.is_none();
            w
        };
        if let Some(w) = woken {
            w.wake();
        }
    }

    /// Wakes every current waiter.
    pub fn notify_all(&self) {
        let all: Vec<Waiter> = lock(&self.state).waiters.drain().collect();
        for w in all {
            w.wake();
        }
    }

    /// Waits for a notification. In a fiber being cancelled (its runtime is shutting down)
    /// it returns at once.
    pub fn wait(&self) {
        self.wait_deadline(None);
    }

    /// Waits at most `timeout`; returns whether it was notified. A timeout too long for an
    /// `Instant` (`Duration::MAX`) waits forever, as with std's timed waits.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.wait_deadline(crate::time::deadline_after(timeout))
    }

    /// A waiter's place in this `Notify`, for a wait on it and something else at once
    /// (see [`Notify::take_or_register`]). Dropping it leaves, passing on a notification it
    /// received but did not take.
    pub(crate) fn place(&self) -> NotifyPlace<'_> {
        Place::new(&self.state, waiters_of)
    }

    /// Under the lock: takes the notification `place` received, or a stored permit, and
    /// leaves (true); otherwise registers `place` for the next notification (false), which
    /// wakes the calling fiber or thread.
    pub(crate) fn take_or_register(&self, place: &mut NotifyPlace<'_>) -> bool {
        let mut st = lock(&self.state);
        if place.was_woken(&mut st) || std::mem::take(&mut st.permit) {
            place.leave_served(&mut st);
            return true;
        }
        place.register(&mut st);
        false
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> bool {
        let mut place = Place::new(&self.state, |st: &mut NotifyState| &mut st.waiters);
        let mut timed_out = false;
        loop {
            {
                let mut st = lock(&self.state);
                // Popped by `notify_one`/`notify_all`: notified.
                if place.was_woken(&mut st) {
                    place.leave_served(&mut st);
                    return true;
                }
                if st.permit {
                    st.permit = false;
                    place.leave_served(&mut st);
                    return true;
                }
                if timed_out || is_cancelled() {
                    place.leave_served(&mut st);
                    return false;
                }
                place.register(&mut st);
            }
            timed_out = park_until(deadline);
        }
    }
}
