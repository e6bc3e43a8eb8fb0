//! [`RedialBackoff`]: how often to dial a peer again after it stopped answering, shared by
//! every worker that dials it.
//!
//! A client that re-dials a down peer on every request (a proxy's upstream, a database pool)
//! turns one outage into tens of thousands of refused connects a second: each costs a socket,
//! a port and a system call or three, and on loopback one of them eventually connects to
//! itself. With a backoff, once a dial failed the next ones are not tried for a short delay
//! that doubles with each failure in a row (up to a maximum); callers in that window fail at
//! once (a proxy answers 502, a pool 503) instead of dialling. When the delay has passed, one
//! caller — the first to ask — dials as a probe while the others keep failing fast; its
//! success ends the backoff for all. So a peer that comes back is used again within the
//! maximum delay, and a long outage costs a few dials a second.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// See the module docs. Lock-free: a dial that is permitted costs one atomic load.
#[derive(Debug)]
pub struct RedialBackoff {
    /// Failed dials in a row (0: the peer is up, dial freely).
    failures: AtomicU32,
    /// When the next probe may dial, in milliseconds on [`clock_ms`]'s clock.
    next_ms: AtomicU64,
    initial_ms: u64,
    max_ms: u64,
}

/// Milliseconds since the first call in this process (a monotonic clock an atomic can hold).
fn clock_ms() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    // One ms past the base, so that 0 never reads as "now" for a fresh backoff.
    crate::time::now()
        .saturating_duration_since(base)
        .as_millis() as u64
        + 1
}

impl RedialBackoff {
    /// A backoff that waits `initial` after the first failure, twice as long after each
    /// further failure in a row, at most `max`.
    pub fn new(initial: Duration, max: Duration) -> RedialBackoff {
        let initial_ms = (initial.as_millis() as u64).max(1);
        RedialBackoff {
            failures: AtomicU32::new(0),
            next_ms: AtomicU64::new(0),
            initial_ms,
            max_ms: (max.as_millis() as u64).max(initial_ms),
        }
    }

    /// Whether to dial now: `Ok` when the peer is not known to be down, or when this caller
    /// is the probe that tries it again (then it must report [`failed`](Self::failed) or
    /// [`succeeded`](Self::succeeded)); otherwise `Err` with how long until the next probe.
    pub fn permit(&self) -> Result<(), Duration> {
        if self.failures.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        self.permit_at(clock_ms())
    }

    /// [`permit`](Self::permit) at time `now` (ms).
    fn permit_at(&self, now: u64) -> Result<(), Duration> {
        let failures = self.failures.load(Ordering::Relaxed);
        if failures == 0 {
            return Ok(());
        }
        let next = self.next_ms.load(Ordering::Relaxed);
        if now < next {
            return Err(Duration::from_millis(next - now));
        }
        // The first caller past the time takes the probe; the others see the peer down for
        // as long again (if the probe never reports, another one goes after that).
        let hold = self.delay_ms(failures);
        match self
            .next_ms
            .compare_exchange(next, now + hold, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Ok(()),
            Err(_) => Err(Duration::from_millis(hold)),
        }
    }

    /// A dial failed: the peer is down for the next delay. Returns that delay.
    pub fn failed(&self) -> Duration {
        self.failed_at(clock_ms())
    }

    /// [`failed`](Self::failed) at time `now` (ms).
    fn failed_at(&self, now: u64) -> Duration {
        let failures = self
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let delay = self.delay_ms(failures);
        self.next_ms.store(now + delay, Ordering::Relaxed);
        Duration::from_millis(delay)
    }

    /// A dial succeeded: the peer is up, dial freely.
    pub fn succeeded(&self) {
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
        }
    }

    /// Failed dials in a row (0 while the peer is up).
    pub fn failures(&self) -> u32 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The delay after `failures` failures in a row.
    fn delay_ms(&self, failures: u32) -> u64 {
        let doublings = failures.saturating_sub(1).min(32);
        self.initial_ms
            .saturating_mul(1u64 << doublings)
            .min(self.max_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn permits_until_a_failure_then_doubles_up_to_the_maximum() {
        let b = RedialBackoff::new(ms(10), ms(35));
        assert_eq!(b.permit_at(100), Ok(()));
        assert_eq!(b.failed_at(100), ms(10));
        assert_eq!(
            b.permit_at(104),
            Err(ms(6)),
            "down until the delay has passed"
        );
        assert_eq!(b.failed_at(110), ms(20));
        assert_eq!(b.failed_at(130), ms(35), "capped");
        assert_eq!(b.failed_at(165), ms(35));
        assert_eq!(b.failures(), 4);
        b.succeeded();
        assert_eq!(b.failures(), 0);
        assert_eq!(b.permit_at(166), Ok(()));
    }

    #[test]
    fn one_probe_when_the_delay_has_passed() {
        let b = RedialBackoff::new(ms(10), ms(40));
        b.failed_at(100);
        b.failed_at(100); // two in a row: 20 ms
        assert_eq!(b.permit_at(120), Ok(()), "the first caller probes");
        assert_eq!(
            b.permit_at(120),
            Err(ms(20)),
            "the others fail fast meanwhile"
        );
        assert_eq!(b.permit_at(139), Err(ms(1)));
        // A probe that never reported: another one after the hold.
        assert_eq!(b.permit_at(140), Ok(()));
        assert_eq!(b.failed_at(141), ms(40), "the probe failed: doubled");
        assert!(b.permit_at(180).is_err());
        assert_eq!(b.permit_at(181), Ok(()));
        b.succeeded();
        assert_eq!(b.permit_at(181), Ok(()));
        assert_eq!(b.permit_at(181), Ok(()), "up: everyone dials");
    }

    #[test]
    fn the_clock_is_usable_off_fibers() {
        let b = RedialBackoff::new(ms(60_000), ms(60_000));
        assert_eq!(b.permit(), Ok(()));
        b.failed();
        assert!(b.permit().is_err());
    }
}
