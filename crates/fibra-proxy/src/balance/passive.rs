//! Passive health: the failures of real requests counted against an upstream, as nginx's
//! `max_fails` and `fail_timeout` count them. `max_fails` failures within `fail_timeout` of
//! the first take the upstream out for `fail_timeout`; a response resets the count.
//!
//! Lock-free on the request path: whether an upstream is out is one atomic load (and a look
//! at the clock only while it is marked), a success one load (and a store if failures were
//! counted). The counting is not exact under races between workers (two failures at once
//! may both start a window), which only shifts when an upstream goes out by a failure.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::PassiveHealth;

/// Milliseconds since the first call in this process, never 0 (a monotonic clock an atomic
/// can hold; 0 means "not marked").
pub(crate) fn clock_ms() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    fibra::time::now()
        .saturating_duration_since(base)
        .as_millis() as u64
        + 1
}

fn millis(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// One upstream's failures.
#[derive(Debug, Default)]
pub(crate) struct PassiveState {
    /// Failures counted in the current window.
    fails: AtomicU32,
    /// When the current window began (the first failure counted in it), on [`clock_ms`].
    since_ms: AtomicU64,
    /// Until when the upstream is out, on [`clock_ms`]; 0: it is not.
    down_until_ms: AtomicU64,
    /// What took it out last (written only then, read for [`crate::Proxy::upstream_states`]).
    why: Mutex<String>,
}

impl PassiveState {
    /// How long the upstream stays out, if it is out.
    pub(crate) fn down_for(&self) -> Option<Duration> {
        let until = self.down_until_ms.load(Ordering::Relaxed);
        if until == 0 {
            return None;
        }
        let now = clock_ms();
        (until > now).then(|| Duration::from_millis(until - now))
    }

    /// Whether the upstream may be chosen. Looks at the clock only while it is marked out;
    /// the first to find the time passed unmarks it.
    pub(crate) fn is_up(&self) -> bool {
        let until = self.down_until_ms.load(Ordering::Relaxed);
        if until == 0 {
            return true;
        }
        if until > clock_ms() {
            return false;
        }
        let _ = self
            .down_until_ms
            .compare_exchange(until, 0, Ordering::Relaxed, Ordering::Relaxed);
        true
    }

    /// A response came: the failures so far are forgiven.
    pub(crate) fn succeeded(&self) {
        if self.fails.load(Ordering::Relaxed) != 0 {
            self.fails.store(0, Ordering::Relaxed);
        }
    }

    /// A request failed (`why` says how, asked only when this takes the upstream out).
    /// Returns how many failures took it out, if this one did.
    pub(crate) fn failed(
        &self,
        health: &PassiveHealth,
        why: impl FnOnce() -> String,
    ) -> Option<u32> {
        if health.max_fails == 0 {
            return None;
        }
        let now = clock_ms();
        // Already out: requests in flight when it went out fail too; they neither put it out
        // again (pushing its return further) nor log it again.
        if now < self.down_until_ms.load(Ordering::Relaxed) {
            return None;
        }
        let window = millis(health.fail_timeout);
        let fails = self.fails.load(Ordering::Relaxed);
        let since = self.since_ms.load(Ordering::Relaxed);
        let n = if fails == 0 || now.saturating_sub(since) >= window {
            self.since_ms.store(now, Ordering::Relaxed);
            self.fails.store(1, Ordering::Relaxed);
            1
        } else {
            self.fails.fetch_add(1, Ordering::Relaxed).saturating_add(1)
        };
        if n < health.max_fails {
            return None;
        }
        self.fails.store(0, Ordering::Relaxed);
        *self.why.lock().unwrap_or_else(|e| e.into_inner()) = why();
        self.down_until_ms
            .store(now.saturating_add(window.max(1)), Ordering::Relaxed);
        Some(n)
    }

    /// An active check found the upstream up: it is in again, its failures forgiven.
    pub(crate) fn clear(&self) {
        self.fails.store(0, Ordering::Relaxed);
        self.down_until_ms.store(0, Ordering::Relaxed);
    }

    /// What took the upstream out last.
    pub(crate) fn why(&self) -> String {
        self.why.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(max_fails: u32, secs: u64) -> PassiveHealth {
        PassiveHealth {
            max_fails,
            fail_timeout: Duration::from_secs(secs),
        }
    }

    #[test]
    fn max_fails_within_the_window_take_it_out() {
        let s = PassiveState::default();
        let h = health(3, 600);
        assert!(s.is_up());
        assert_eq!(s.failed(&h, || "a".into()), None);
        assert_eq!(s.failed(&h, || "b".into()), None);
        assert!(s.is_up());
        assert_eq!(s.failed(&h, || "refused".into()), Some(3));
        assert!(!s.is_up());
        assert_eq!(s.why(), "refused");
        assert!(s.down_for().unwrap() > Duration::from_secs(590));
        // More failures while out (requests that were in flight) change nothing.
        assert_eq!(s.failed(&h, || "later".into()), None);
        assert_eq!(s.why(), "refused");
        s.clear();
        assert!(s.is_up());
        assert_eq!(s.down_for(), None);
    }

    #[test]
    fn a_success_resets_the_count() {
        let s = PassiveState::default();
        let h = health(2, 600);
        assert_eq!(s.failed(&h, String::new), None);
        s.succeeded();
        assert_eq!(s.failed(&h, String::new), None);
        assert!(s.is_up());
        assert_eq!(s.failed(&h, String::new), Some(2));
    }

    #[test]
    fn max_fails_0_is_off_and_a_zero_timeout_is_out_for_no_time() {
        let s = PassiveState::default();
        for _ in 0..10 {
            assert_eq!(s.failed(&health(0, 600), || unreachable!()), None);
        }
        assert!(s.is_up());
        // Out for a millisecond only; the clock has moved on within the poll.
        assert_eq!(s.failed(&health(1, 0), String::new), Some(1));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !s.is_up() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
