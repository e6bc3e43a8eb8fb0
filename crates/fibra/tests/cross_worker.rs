//! Channel, mutex, notify and wait-group wake-ups across workers and threads, under contention.

use fibra::sync::{mpsc, Mutex, Notify, WaitGroup};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn mutex_contended_by_fibers_on_two_workers_and_threads() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let m = Arc::new(Mutex::new(0u64));
    let m_threads = m.clone();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let m = m_threads.clone();
            std::thread::spawn(move || {
                for _ in 0..2_000 {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    let m2 = m.clone();
    rt.block_on(move || {
        let hs: Vec<_> = (0..16)
            .map(|i| {
                let m = m2.clone();
                fibra::fiber::Builder::new()
                    .worker(i % 2)
                    .spawn(move || {
                        for j in 0..2_000 {
                            let mut g = m.lock();
                            let before = *g;
                            if j % 64 == 0 {
                                // Hold the lock across a park: others must queue, not spin.
                                fibra::yield_now();
                            }
                            *g = before + 1;
                        }
                    })
                    .unwrap()
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*m.lock(), 16 * 2_000 + 2 * 2_000);
}

#[test]
fn bounded_channel_between_workers_parks_both_sides() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let (count, sum) = rt.block_on(|| {
        let (tx, rx) = mpsc::sync_channel::<u64>(4);
        let producers: Vec<_> = (0..8u64)
            .map(|p| {
                let tx = tx.clone();
                fibra::fiber::Builder::new()
                    .worker(1)
                    .spawn(move || {
                        for i in 0..5_000u64 {
                            tx.send(p * 1_000_000 + i).unwrap();
                        }
                    })
                    .unwrap()
            })
            .collect();
        drop(tx);
        let mut count = 0u64;
        let mut sum = 0u64;
        for v in rx.iter() {
            count += 1;
            sum += v;
        }
        for p in producers {
            p.join().unwrap();
        }
        (count, sum)
    });
    let expect: u64 = (0..8u64)
        .map(|p| (0..5_000u64).map(|i| p * 1_000_000 + i).sum::<u64>())
        .sum();
    assert_eq!(count, 40_000);
    assert_eq!(sum, expect);
}

#[test]
fn unbounded_channel_from_a_thread_to_a_fiber() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let (tx, rx) = mpsc::channel::<u32>();
    let h = rt.spawn(move || rx.iter().map(u64::from).sum::<u64>());
    let t = std::thread::spawn(move || {
        for i in 0..10_000 {
            tx.send(i).unwrap();
        }
    });
    t.join().unwrap();
    assert_eq!(h.join().unwrap(), (0..10_000u64).sum::<u64>());
}

#[test]
fn recv_timeout_and_disconnect() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    rt.block_on(|| {
        let (tx, rx) = mpsc::channel::<u8>();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(20)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        let h = fibra::fiber::Builder::new()
            .worker(1)
            .spawn(move || {
                fibra::time::sleep(Duration::from_millis(10));
                tx.send(9).unwrap();
            })
            .unwrap();
        assert_eq!(rx.recv(), Ok(9));
        h.join().unwrap();
        assert_eq!(rx.recv(), Err(mpsc::RecvError));
    });
}

/// Receivers that give up (timeout) and end while a sender on the other worker is sending to
/// them: the send must never touch a receiver that has left, and no message may be lost.
#[test]
fn receivers_timing_out_while_senders_on_another_worker_send() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let (received, left) = rt.block_on(|| {
        let mut received = 0u32;
        let mut left = 0u32;
        for round in 0..300u32 {
            let (tx, rx) = mpsc::channel::<u32>();
            let receiver = fibra::fiber::Builder::new()
                .worker(0)
                .spawn(move || {
                    // Alternate between giving up at once and waiting a little.
                    let wait = Duration::from_micros(u64::from(round % 3) * 500);
                    let got = rx.recv_timeout(wait).ok();
                    (got, rx)
                })
                .unwrap();
            let sender = fibra::fiber::Builder::new()
                .worker(1)
                .spawn(move || {
                    for _ in 0..(round % 4) {
                        fibra::yield_now();
                    }
                    tx.send(round).unwrap();
                })
                .unwrap();
            sender.join().unwrap();
            let (got, rx) = receiver.join().unwrap();
            match got {
                Some(v) => {
                    assert_eq!(v, round);
                    received += 1;
                }
                None => {
                    assert_eq!(rx.try_recv(), Ok(round), "a timed-out message stays queued");
                    left += 1;
                }
            }
        }
        (received, left)
    });
    assert_eq!(received + left, 300);
}
#[test]
fn notify_and_waitgroup_across_workers() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let woke = rt.block_on(|| {
        let n = Arc::new(Notify::new());
        let wg = WaitGroup::new();
        let waiters: Vec<_> = (0..10)
            .map(|i| {
                let (n, wg) = (n.clone(), wg.clone());
                fibra::fiber::Builder::new()
                    .worker(i % 2)
                    .spawn(move || {
                        drop(wg);
                        n.wait_timeout(Duration::from_secs(60))
                    })
                    .unwrap()
            })
            .collect();
        wg.wait();
        // Each notify_one wakes one waiter or leaves a permit for one about to wait.
        for _ in 0..10 {
            n.notify_one();
        }
        waiters
            .into_iter()
            .filter(|_| true)
            .map(|h| h.join().unwrap())
            .filter(|&b| b)
            .count()
    });
    assert_eq!(woke, 10);
}

#[test]
fn notify_wait_timeout_expires() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let got = rt.block_on(|| Notify::new().wait_timeout(Duration::from_millis(20)));
    assert!(!got);
}
