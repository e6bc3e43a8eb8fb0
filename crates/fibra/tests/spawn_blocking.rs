//! `spawn_blocking` runs on a helper thread while the calling fiber parks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn blocking_work_runs_elsewhere_and_the_worker_keeps_running() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let t2 = ticks.clone();
    let (worker_thread, helper_thread, ticks_during) = rt.block_on(move || {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let t3 = t2.clone();
        let ticker = fibra::spawn(move || {
            while !s2.load(Ordering::SeqCst) {
                t3.fetch_add(1, Ordering::SeqCst);
                fibra::time::sleep(Duration::from_millis(1));
            }
        });
        let me = std::thread::current().id();
        let before = t2.load(Ordering::SeqCst);
        let helper = fibra::task::spawn_blocking(|| {
            // A blocking call: would freeze the worker if run on it.
            std::thread::sleep(Duration::from_millis(100));
            std::thread::current().id()
        });
        let during = t2.load(Ordering::SeqCst) - before;
        stop.store(true, Ordering::SeqCst);
        ticker.join().unwrap();
        (me, helper, during)
    });
    assert_ne!(worker_thread, helper_thread);
    assert!(ticks_during > 0, "the worker was blocked");
    assert!(ticks.load(Ordering::SeqCst) > 0);
}

#[test]
fn blocking_panic_resumes_in_the_fiber() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let r = rt.block_on(|| {
        fibra::spawn(|| fibra::task::spawn_blocking(|| -> u8 { panic!("blocking boom") })).join()
    });
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"blocking boom"));
}

#[test]
fn many_concurrent_blocking_calls() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let total = rt.block_on(|| {
        let hs: Vec<_> = (0..64u64)
            .map(|i| {
                fibra::spawn(move || {
                    fibra::task::spawn_blocking(move || {
                        std::thread::sleep(Duration::from_millis(5));
                        i
                    })
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(total, (0..64).sum::<u64>());
}

#[test]
fn a_blocking_closure_can_spawn_fibers_on_the_runtime() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let (sum, on_worker) = rt.block_on(|| {
        fibra::task::spawn_blocking(|| {
            // A helper thread, not a worker: the fibers go to the runtime that called us.
            let hs: Vec<_> = (1..=4u64)
                .map(|i| fibra::spawn(move || (i, fibra::current_worker().is_some())))
                .collect();
            hs.into_iter().fold((0, true), |(sum, all), h| {
                let (i, on) = h.join().unwrap();
                (sum + i, all && on)
            })
        })
    });
    assert_eq!(sum, 10);
    assert!(on_worker);
}
