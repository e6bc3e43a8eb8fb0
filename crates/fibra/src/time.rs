//! Sleeping and the cached coarse clock.
//!
//! Inside a fiber, time comes from the worker's clock, refreshed once per scheduler round, and
//! a sleep is a parked fiber plus (at most) one timer-heap entry. Outside fibers these functions
//! fall back to `std`.

use crate::sched::{self as fiber, try_with_local};
use std::time::{Duration, Instant};

/// The current time: the worker's cached clock inside a fiber (refreshed every scheduler
/// round, so cheap and coarse), `Instant::now()` elsewhere.
pub fn now() -> Instant {
    try_with_local(|l| l.now.get()).unwrap_or_else(Instant::now)
}

/// Puts the current fiber (or thread) to sleep for at least `dur`.
///
/// ```
/// use std::time::{Duration, Instant};
/// fibra::run(|| {
///     let start = Instant::now();
///     fibra::time::sleep(Duration::from_millis(5));
///     assert!(start.elapsed() >= Duration::from_millis(5));
/// });
/// ```
///
/// A duration too long for an `Instant` (`Duration::MAX`) sleeps forever, as with std. In a
/// fiber being cancelled (its runtime is shutting down) it returns at once.
pub fn sleep(dur: Duration) {
    match Instant::now().checked_add(dur) {
        Some(deadline) => sleep_until(deadline),
        None => {
            while !fiber::is_cancelled() {
                fiber::park_until(None);
            }
        }
    }
}

/// Puts the current fiber (or thread) to sleep until `deadline`. In a fiber being cancelled
/// it returns at once.
pub fn sleep_until(deadline: Instant) {
    // `park_until` parks the fiber on its worker's timer heap (or the thread with
    // `park_timeout`); it may wake early, so check the real clock each time.
    while Instant::now() < deadline && !fiber::is_cancelled() {
        fiber::park_until(Some(deadline));
    }
}

/// A deadline helper: the instant `dur` from now (on the coarse clock). A duration too long
/// for an `Instant` gives one about a century away, which no wait reaches.
pub fn deadline_in(dur: Duration) -> Instant {
    saturating_add(now(), dur)
}

/// `at + dur`, or an instant about a century after `at` if the sum does not fit.
pub(crate) fn saturating_add(at: Instant, dur: Duration) -> Instant {
    at.checked_add(dur)
        .unwrap_or_else(|| at + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// The deadline `dur` from now, `None` ("forever") if it does not fit in an `Instant`.
pub(crate) fn deadline_after(dur: Duration) -> Option<Instant> {
    Instant::now().checked_add(dur)
}

/// Time left until `deadline`, or `None` if it has passed.
pub fn remaining(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(now());
    (!left.is_zero()).then_some(left)
}
