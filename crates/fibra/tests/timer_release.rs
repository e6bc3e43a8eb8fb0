//! A fiber that parks with a long timeout and is woken early must not stay alive until the
//! deadline: 200,000 fibers that each wait 60 s on a `Notify`, are notified at once and finish
//! may leave only a few MiB behind them, not their tasks.
//! (Alone in its binary: it measures the process's resident memory.)

use fibra::sync::Notify;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Fibers waiting at once: each maps a stack (two mappings, and vm.max_map_count may be
/// 65,530).
const BATCH: usize = 1_000;
const BATCHES: usize = 200;
/// Long enough that no timer comes due while the test runs.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Bound on the growth of resident memory over the 200,000 fibers. While timer entries kept
/// finished fibers' tasks (128 bytes, and a 16-byte entry each) it grew by 27 MiB; now it does
/// not grow.
const MAX_GROWTH: usize = 16 << 20;

/// Resident memory of this process, in bytes.
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * usize::try_from(page).unwrap()
}

/// Runs `BATCH` fibers that each park in `wait_timeout(TIMEOUT)`, then notifies them all and
/// waits until they are finished.
///
/// Deterministic on one worker: a fiber counts itself and parks without yielding in between, so
/// once the count is complete every fiber of the batch is parked with its timer armed.
fn batch() {
    let notify = Arc::new(Notify::new());
    let waiting = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..BATCH)
        .map(|_| {
            let notify = notify.clone();
            let waiting = waiting.clone();
            fibra::spawn(move || {
                waiting.fetch_add(1, Ordering::SeqCst);
                notify.wait_timeout(TIMEOUT)
            })
        })
        .collect();
    let mut yields = 0;
    while waiting.load(Ordering::SeqCst) < BATCH {
        yields += 1;
        assert!(yields < 1_000_000, "fibers did not start");
        fibra::yield_now();
    }
    notify.notify_all();
    for h in handles {
        assert!(
            h.join().unwrap(),
            "a fiber timed out instead of being notified"
        );
    }
}

#[test]
#[cfg_attr(
    fibra_asan,
    ignore = "ASan's quarantine keeps freed memory resident (up to 256 MiB): RSS measures ASan \
              there; LeakSanitizer checks in that build that nothing is leaked"
)]
fn finished_fibers_are_not_kept_by_their_timers() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let (before, after) = rt.block_on(|| {
        // Warm up: stack pool, allocator, the heap's and the slab's capacity.
        for _ in 0..5 {
            batch();
        }
        let before = resident();
        for _ in 0..BATCHES {
            batch();
        }
        (before, resident())
    });
    let growth = after.saturating_sub(before);
    eprintln!(
        "resident: {} KiB before, {} KiB after {} fibers: {} KiB more",
        before >> 10,
        after >> 10,
        BATCH * BATCHES,
        growth >> 10
    );
    assert!(
        growth < MAX_GROWTH,
        "resident memory grew by {} KiB over {} fibers that finished early",
        growth >> 10,
        BATCH * BATCHES
    );
}
