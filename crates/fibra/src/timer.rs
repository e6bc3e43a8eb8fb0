//! Per-worker timers: a coarse millisecond clock and a lazily re-armed deadline heap.
//!
//! Arming a timeout must cost no syscall and no allocation on hot paths (Warp's timeout manager:
//! "tickling" a connection is one memory write). Each fiber has one `deadline` word. Parking with
//! a deadline stores it; a heap entry is pushed only when the fiber has no entry queued at or
//! before that deadline. When an entry comes due, the fiber's current deadline decides: expired
//! (wake it, timed out), later (push the entry again for the new deadline), or none (drop it).
//! A connection that parks for every request with the same idle timeout therefore pushes about
//! one entry per timeout period, not one per request.
//!
//! An entry holds its fiber's task. So that a fiber woken early and finished is not kept alive
//! until its deadline, its worker cancels its timer when it finishes ([`TimerHeap::cancel`]),
//! and the heap is compacted once enough of it is such garbage (see [`TimerHeap`]; the heap
//! itself, a plain data structure tested without a runtime, is in `timer/heap.rs`; it is
//! generic over the task type, which the task layer (`sched`) plugs in).

mod heap;

pub(crate) use heap::{TimerHeap, TimerTask};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Nanoseconds on the monotonic clock, the one `Instant` reads on Linux.
///
/// Read directly because a park with a timeout reads the clock every time: through `Instant`
/// (a checked `timespec` subtraction, then a `Duration`) the read and the conversion to ticks
/// cost about four times the clock itself.
fn clock_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; `CLOCK_MONOTONIC` exists on every Linux,
    // so the call cannot fail (and `ts` stays zero if it somehow did).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The process-wide origin of millisecond ticks, in [`clock_ns`] nanoseconds, a millisecond
/// before the first use. Tick 0 means "no deadline".
fn origin_ns() -> u64 {
    static ORIGIN: OnceLock<u64> = OnceLock::new();
    *ORIGIN.get_or_init(|| clock_ns().saturating_sub(1_000_000))
}

/// The current tick, rounded up (as [`ticks_at`] rounds).
pub(crate) fn ticks_now() -> u64 {
    let origin = origin_ns();
    clock_ns().saturating_sub(origin).div_ceil(1_000_000).max(1)
}

/// The ticks that have fully passed, rounded down: what the workers fire timers at. With
/// deadlines rounded up ([`ticks_at`], [`ticks_after`]) and the clock rounded down here, a
/// deadline is reached only once its instant has passed; comparing two rounded-up values
/// would fire up to a tick early.
pub(crate) fn ticks_passed() -> u64 {
    clock_ns().saturating_sub(origin_ns()) / 1_000_000
}

/// Converts an instant to ticks, rounding up so a timer never fires early.
///
/// `at` is placed relative to the current instant on the tick clock; the clock is read after
/// `Instant::now()`, so a deadline can come out a little later, never earlier.
pub(crate) fn ticks_at(at: Instant) -> u64 {
    let now = Instant::now();
    let origin = origin_ns();
    let now_ns = clock_ns().saturating_sub(origin);
    let at_ns = if at >= now {
        now_ns.saturating_add(u64::try_from((at - now).as_nanos()).unwrap_or(u64::MAX))
    } else {
        now_ns.saturating_sub(u64::try_from((now - at).as_nanos()).unwrap_or(u64::MAX))
    };
    at_ns.div_ceil(1_000_000).max(1)
}

/// `d` in whole milliseconds, rounded up, in 64-bit arithmetic (`as_nanos` is a `u128`, and
/// dividing one is a library call on every park with a timeout).
fn ceil_ms(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1000)
        .saturating_add(u64::from(d.subsec_nanos().div_ceil(1_000_000)))
}

/// The tick `d` from now. Reads the real clock: the worker's cached one may be a little behind,
/// and a timeout must never fire early.
pub(crate) fn ticks_after(d: Duration) -> u64 {
    let ms = ceil_ms(d).min(u64::MAX / 2);
    ticks_now().saturating_add(ms.max(1))
}

#[cfg(test)]
mod tests {
    use super::{ceil_ms, ticks_after, ticks_at, ticks_now, ticks_passed};
    use std::time::{Duration, Instant};

    #[test]
    fn instants_and_durations_map_to_the_same_ticks() {
        let before = ticks_now();
        let at = Instant::now() + Duration::from_secs(5);
        let via_instant = ticks_at(at);
        let via_duration = ticks_after(Duration::from_secs(5));
        // Both are 5,000 ticks after a "now" read between `before` and the end of this test,
        // and never before the instant they stand for.
        assert!(via_instant >= before + 5_000, "{via_instant} vs {before}");
        assert!(
            via_duration >= via_instant,
            "{via_duration} < {via_instant}"
        );
        let after = ticks_now();
        assert!(via_duration <= after + 5_001, "{via_duration} vs {after}");
        // An instant in the past is a tick that has come already.
        assert!(ticks_at(Instant::now() - Duration::from_millis(20)) <= ticks_now());
        assert!(ticks_now() >= 1);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads the real clock in a loop
    fn a_deadline_is_reached_only_after_its_duration() {
        for _ in 0..20 {
            let start = Instant::now();
            let deadline = ticks_after(Duration::from_millis(1));
            // Bounded: the deadline is at most 3 ms away.
            while ticks_passed() < deadline {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "the clock stalled"
                );
            }
            assert!(
                start.elapsed() >= Duration::from_millis(1),
                "{:?}",
                start.elapsed()
            );
        }
    }

    #[test]
    fn milliseconds_round_up_like_the_u128_division() {
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(999_999),
            Duration::from_millis(1),
            Duration::from_nanos(1_000_001),
            Duration::new(5, 0),
            Duration::new(5, 1),
            Duration::new(86_400 * 365, 999_999_999),
        ] {
            let want = u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap();
            assert_eq!(ceil_ms(d), want, "{d:?}");
        }
        assert_eq!(ceil_ms(Duration::MAX), u64::MAX);
    }
}
