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
#[cfg(test)]
fn ticks_now() -> u64 {
    let origin = origin_ns();
    clock_ns().saturating_sub(origin).div_ceil(1_000_000).max(1)
}

/// The ticks that have fully passed, rounded down: what the workers fire timers at. With
/// deadlines rounded up ([`ticks_at`], [`ticks_after`]) and the clock rounded down here, a
/// deadline is reached only once its instant has passed; comparing two rounded-up values
/// would fire up to a tick early.
pub(crate) fn ticks_passed() -> u64 {
    ticks_passed_at(clock_ns())
}

/// [`ticks_passed`] at `ns`, a reading of [`clock_ns`] made earlier.
fn ticks_passed_at(ns: u64) -> u64 {
    ns.saturating_sub(origin_ns()) / 1_000_000
}

/// The worker's clock for one scheduler round, from a single read of the monotonic clock:
/// the ticks that have passed ([`ticks_passed`]) and the `Instant` (derived from the same
/// read, so the round costs one clock read instead of two).
pub(crate) fn round_clock() -> (u64, Instant) {
    let ns = clock_ns();
    (ticks_passed_at(ns), instant_at(ns))
}

/// The `Instant` of a [`clock_ns`] reading `ns`: a process-wide pair of readings of both
/// clocks, the `Instant` taken first, plus the nanoseconds since. Both read
/// `CLOCK_MONOTONIC`, so the result is at most the time between the pair's two reads (well
/// under a microsecond) earlier than `Instant::now()` would have been at `ns`, and never
/// later.
fn instant_at(ns: u64) -> Instant {
    static BASE: OnceLock<(Instant, u64)> = OnceLock::new();
    let &(at, base_ns) = BASE.get_or_init(|| {
        let at = Instant::now();
        (at, clock_ns())
    });
    at + Duration::from_nanos(ns.saturating_sub(base_ns))
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

/// The tick `ns` nanoseconds from now (a socket keeps its timeouts in nanoseconds). Reads
/// the real clock: the worker's cached one may be a little behind, and a timeout must never
/// fire early. One rounding up, of the sum: the deadline's tick is the first one that has
/// fully passed only after the instant it stands for.
pub(crate) fn ticks_after(ns: u64) -> u64 {
    let now = clock_ns().saturating_sub(origin_ns());
    now.saturating_add(ns).div_ceil(1_000_000).max(1)
}

#[cfg(test)]
mod tests {
    use super::{round_clock, ticks_after, ticks_at, ticks_now, ticks_passed};
    use std::time::{Duration, Instant};

    #[test]
    fn instants_and_durations_map_to_the_same_ticks() {
        let before = ticks_now();
        let at = Instant::now() + Duration::from_secs(5);
        let via_instant = ticks_at(at);
        let via_duration = ticks_after(5_000_000_000);
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
    fn a_deadline_in_nanoseconds_is_reached_only_after_them() {
        for ns in [1, 999_999, 1_000_000, 1_000_001, 2_500_000] {
            let start = Instant::now();
            let deadline = ticks_after(ns);
            // Bounded: the deadline is at most 4 ms away.
            while ticks_passed() < deadline {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "the clock stalled"
                );
            }
            assert!(start.elapsed() >= Duration::from_nanos(ns));
        }
        // Saturates rather than wrapping.
        assert!(ticks_after(u64::MAX) >= u64::MAX / 1_000_000);
    }

    #[test]
    fn the_round_clock_reads_both_clocks_at_one_instant() {
        for _ in 0..100 {
            let (ticks_before, before) = (ticks_passed(), Instant::now());
            let (ticks, at) = round_clock();
            let (after, ticks_after_it) = (Instant::now(), ticks_passed());
            // The derived instant is never later than the real clock at the read, and earlier
            // only by the time between the two reads of the process-wide base pair.
            assert!(at <= after, "{at:?} after {after:?}");
            assert!(
                at + Duration::from_millis(1) >= before,
                "{at:?} far before {before:?}"
            );
            assert!((ticks_before..=ticks_after_it).contains(&ticks));
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads the real clock in a loop
    fn a_deadline_is_reached_only_after_its_duration() {
        for _ in 0..20 {
            let start = Instant::now();
            let deadline = ticks_after(1_000_000);
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
}
