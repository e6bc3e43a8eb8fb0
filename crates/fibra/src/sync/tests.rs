//! The sync primitives between plain threads: no runtime, no context switch, so these run
//! under Miri too (CI's Miri job), which checks the waiter protocols' unsafe parts (the mpsc
//! receiver's registration without a reference count) and their data races.

use super::{mpsc, oneshot, Mutex, Notify, WaitGroup};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Iterations per thread: small, since Miri runs these about a thousand times slower.
const N: usize = 20;

#[test]
fn mutex_counts_under_contention_and_spurious_wake_ups() {
    let m = Arc::new(Mutex::new(0usize));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..N {
                    *m.lock() += 1;
                    thread::yield_now();
                }
            })
        })
        .collect();
    for t in &threads {
        t.thread().unpark(); // spurious wake-ups while they may be waiting
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*m.lock(), 3 * N);
    assert!(m.try_lock().is_some());
}

#[test]
fn bounded_channel_parks_senders_and_delivers_everything() {
    let (tx, rx) = mpsc::sync_channel::<usize>(1);
    let senders: Vec<_> = (0..3)
        .map(|k| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..N {
                    tx.send(k * N + i).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for s in &senders {
        s.thread().unpark();
    }
    let mut got: Vec<usize> = rx.iter().collect();
    for s in senders {
        s.join().unwrap();
    }
    got.sort_unstable();
    assert_eq!(got, (0..3 * N).collect::<Vec<_>>());
}

#[test]
fn a_receiver_waiting_in_another_thread_sees_the_last_sender_go() {
    let (tx, rx) = mpsc::channel::<u8>();
    let r = thread::spawn(move || (rx.recv(), rx.recv()));
    tx.send(1).unwrap();
    thread::yield_now();
    drop(tx);
    assert_eq!(r.join().unwrap(), (Ok(1), Err(mpsc::RecvError)));
}

#[test]
fn receiver_timeouts_and_a_dropped_receiver() {
    let (tx, rx) = mpsc::channel::<u8>();
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(1)),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    tx.send(3).unwrap();
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(3));
    drop(rx);
    assert_eq!(tx.send(4), Err(mpsc::SendError(4)));
}

#[test]
fn a_full_channel_wakes_its_senders_when_the_receiver_goes() {
    let (tx, rx) = mpsc::sync_channel::<u8>(1);
    tx.send(0).unwrap();
    let blocked = thread::spawn(move || tx.send(1));
    thread::yield_now();
    drop(rx);
    assert_eq!(blocked.join().unwrap(), Err(mpsc::SendError(1)));
}

#[test]
fn notify_one_all_and_the_stored_permit() {
    let n = Arc::new(Notify::new());
    n.notify_one();
    n.wait(); // the permit
    assert!(!n.wait_timeout(Duration::from_millis(1)));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let n = n.clone();
            thread::spawn(move || n.wait_timeout(Duration::MAX))
        })
        .collect();
    // Each wait ends through a permit or a notification: keep notifying until all are done.
    while !waiters.iter().all(|w| w.is_finished()) {
        n.notify_all();
        n.notify_one();
        thread::yield_now();
    }
    assert!(waiters.into_iter().all(|w| w.join().unwrap()));
}

#[test]
fn wait_group_and_oneshot_between_threads() {
    let wg = WaitGroup::new();
    let (tx, rx) = oneshot::channel::<usize>();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let wg = wg.clone();
            thread::spawn(move || drop(wg))
        })
        .collect();
    wg.wait();
    let t = thread::spawn(move || tx.send(7));
    assert_eq!(rx.recv(), Ok(7));
    t.join().unwrap().unwrap();
    for w in workers {
        w.join().unwrap();
    }
    let (tx, rx) = oneshot::channel::<u8>();
    drop(tx);
    assert_eq!(rx.recv(), Err(oneshot::RecvError));
}
