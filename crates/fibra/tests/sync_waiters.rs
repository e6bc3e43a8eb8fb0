//! Waiter lists of the sync primitives: a spurious wake-up (std's `Thread::unpark` can cause
//! one at any time for a waiting thread) must not leave a duplicate entry that a later release
//! wakes instead of a real waiter.

mod util;

use fibra::sync::{mpsc, Mutex};
use std::sync::Arc;
use std::time::Duration;

/// Gives the other threads time to reach their wait (sleeping is not asserted on: a short
/// pause only makes the scenario less likely to be exercised, never makes it fail).
fn pause() {
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn a_spuriously_woken_mutex_waiter_does_not_steal_the_next_wake_up() {
    util::within("mutex waiters", || {
        let m = Arc::new(Mutex::new(0u32));
        let held = m.lock();
        let m1 = m.clone();
        let first = std::thread::spawn(move || *m1.lock() += 1);
        pause();
        // A spurious wake-up: the first waiter loops and queues itself again.
        first.thread().unpark();
        pause();
        let m2 = m.clone();
        let second = std::thread::spawn(move || *m2.lock() += 10);
        pause();
        drop(held);
        first.join().unwrap();
        second.join().unwrap();
        assert_eq!(*m.lock(), 11);
    });
}

#[test]
fn a_spuriously_woken_sender_does_not_steal_the_next_wake_up() {
    util::within("bounded channel senders", || {
        let (tx, rx) = mpsc::sync_channel::<u32>(1);
        tx.send(0).unwrap(); // full
        let tx1 = tx.clone();
        let first = std::thread::spawn(move || tx1.send(1).unwrap());
        pause();
        first.thread().unpark();
        pause();
        let second = std::thread::spawn(move || tx.send(2).unwrap());
        pause();
        let mut got: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
        first.join().unwrap();
        second.join().unwrap();
        got.sort();
        assert_eq!(got, [0, 1, 2]);
    });
}

#[test]
fn fibers_and_threads_contending_with_spurious_wake_ups() {
    util::within("mixed contention", || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        let m = Arc::new(Mutex::new(0u64));
        let m2 = m.clone();
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        let waker = {
            let ts: Vec<_> = threads.iter().map(|t| t.thread().clone()).collect();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    ts.iter().for_each(|t| t.unpark());
                    std::thread::yield_now();
                }
            })
        };
        rt.block_on(move || {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    let m = m2.clone();
                    fibra::spawn(move || {
                        for _ in 0..200 {
                            *m.lock() += 1;
                            fibra::yield_now();
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        });
        threads.into_iter().for_each(|t| t.join().unwrap());
        waker.join().unwrap();
        assert_eq!(*m.lock(), 11 * 200);
    });
}
