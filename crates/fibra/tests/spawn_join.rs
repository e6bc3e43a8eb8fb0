//! Spawning, joining and panic propagation.

mod util;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use util::DropCounter;

#[test]
fn join_returns_the_value() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let v = rt.block_on(|| {
        let hs: Vec<_> = (0..100u64).map(|i| fibra::spawn(move || i * 2)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(v, 9900);
}

#[test]
fn panic_surfaces_in_join_and_stays_in_its_fiber() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let survivors = Arc::new(AtomicUsize::new(0));
    let s2 = survivors.clone();
    let msg = rt.block_on(move || {
        let bad = fibra::spawn(|| -> u32 { panic!("boom in fiber") });
        let good: Vec<_> = (0..10)
            .map(|_| {
                let s = s2.clone();
                fibra::spawn(move || {
                    fibra::yield_now();
                    s.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let err = bad.join().unwrap_err();
        for g in good {
            g.join().unwrap();
        }
        err.downcast_ref::<&str>().map(|s| s.to_string())
    });
    assert_eq!(msg.as_deref(), Some("boom in fiber"));
    assert_eq!(survivors.load(Ordering::SeqCst), 10);
}

#[test]
fn block_on_resumes_a_root_panic() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(|| panic!("root failed"));
    }));
    assert!(r.is_err());
    // The runtime still works afterwards.
    assert_eq!(rt.block_on(|| 5), 5);
}

#[test]
fn join_from_a_plain_thread() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let h = rt.spawn(|| {
        fibra::time::sleep(std::time::Duration::from_millis(10));
        "done"
    });
    assert!(!fibra::in_fiber());
    assert_eq!(h.join().unwrap(), "done");
}

#[test]
fn spawn_outside_a_runtime_is_an_error() {
    let err = fibra::fiber::Builder::new().spawn(|| ()).unwrap_err();
    assert!(err.to_string().contains("outside a fibra runtime"));
}

#[test]
fn builder_pins_to_a_worker() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let workers = rt.block_on(|| {
        (0..4)
            .map(|i| {
                fibra::fiber::Builder::new()
                    .name(format!("pinned-{i}"))
                    .worker(1)
                    .spawn(|| {
                        let before = fibra::current_worker();
                        fibra::yield_now();
                        fibra::time::sleep(std::time::Duration::from_millis(1));
                        (before, fibra::current_worker())
                    })
                    .unwrap()
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (before, after) in workers {
        assert_eq!(before, Some(1));
        assert_eq!(after, Some(1), "a started fiber never migrates");
    }
}

#[test]
fn dropping_the_runtime_cancels_parked_fibers_and_runs_destructors() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let d2 = dropped.clone();
    rt.block_on(move || {
        for _ in 0..20 {
            let flag = DropCounter(d2.clone());
            fibra::spawn(move || {
                let _flag = flag;
                // Parks forever: nothing ever sends.
                let (_tx, rx) = fibra::sync::oneshot::channel::<()>();
                let _ = rx.recv();
            });
        }
        fibra::time::sleep(std::time::Duration::from_millis(20));
    });
    drop(rt);
    assert_eq!(dropped.load(Ordering::SeqCst), 20);
}

#[test]
fn many_fibers_reuse_stacks() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let n = rt.block_on(|| {
        let mut total = 0;
        for _ in 0..5 {
            let hs: Vec<_> = (0..10_000).map(|i| fibra::spawn(move || i % 3)).collect();
            total += hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>();
        }
        total
    });
    assert_eq!(n, 5 * (0..10_000).map(|i| i % 3).sum::<usize>());
}

#[test]
fn a_spawn_racing_shutdown_is_reported_as_cancelled() {
    // A plain thread keeps spawning while the runtime is dropped: every handle must resolve
    // (value or Cancelled) instead of hanging.
    let rt = std::sync::Arc::new(fibra::Runtime::builder().workers(2).build().unwrap());
    let handles: Vec<_> = (0..200).map(|i| rt.spawn(move || i)).collect();
    drop(std::sync::Arc::try_unwrap(rt).unwrap());
    let (mut done, mut cancelled) = (0, 0);
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(v) => {
                assert_eq!(v, i);
                done += 1;
            }
            Err(p) => {
                assert!(p.downcast_ref::<fibra::Cancelled>().is_some());
                cancelled += 1;
            }
        }
    }
    assert_eq!(done + cancelled, 200);
}
