//! `fibra::block_on`: futures completed on a fiber, woken from the same worker, from another
//! worker's fiber, from a plain thread, and outside any fiber.

use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

/// A one-value slot whose reader is a future: `set` stores the value and wakes the reader.
#[derive(Default)]
struct Slot {
    inner: Mutex<(Option<u64>, Option<Waker>)>,
}

impl Slot {
    fn set(&self, v: u64) {
        let waker = {
            let mut g = self.inner.lock().unwrap();
            g.0 = Some(v);
            g.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn get(&self) -> impl std::future::Future<Output = u64> + '_ {
        poll_fn(move |cx| {
            let mut g = self.inner.lock().unwrap();
            match g.0.take() {
                Some(v) => Poll::Ready(v),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

#[test]
fn ready_future_returns_at_once() {
    fibra::run(|| assert_eq!(fibra::block_on(async { 7 }), 7));
}

#[test]
fn woken_by_a_fiber_on_another_worker() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    rt.block_on(|| {
        for round in 0..200u64 {
            let slot = Arc::new(Slot::default());
            let s = slot.clone();
            let setter = fibra::fiber::Builder::new()
                .worker(1)
                .spawn(move || s.set(round))
                .unwrap();
            assert_eq!(fibra::block_on(slot.get()), round);
            setter.join().unwrap();
        }
    });
}

#[test]
fn woken_by_a_plain_thread() {
    fibra::run(|| {
        for round in 0..200u64 {
            let slot = Arc::new(Slot::default());
            let s = slot.clone();
            let t = std::thread::spawn(move || s.set(round));
            assert_eq!(fibra::block_on(slot.get()), round);
            t.join().unwrap();
        }
    });
}

#[test]
fn other_fibers_run_while_one_waits() {
    fibra::run(|| {
        let slot = Arc::new(Slot::default());
        let s = slot.clone();
        // Same worker: the setter can only run if block_on parked the fiber.
        let setter = fibra::spawn(move || s.set(5));
        assert_eq!(fibra::block_on(slot.get()), 5);
        setter.join().unwrap();
    });
}

#[test]
fn outside_a_fiber_the_thread_blocks() {
    let slot = Arc::new(Slot::default());
    let s = slot.clone();
    let t = std::thread::spawn(move || s.set(9));
    assert_eq!(fibra::block_on(slot.get()), 9);
    t.join().unwrap();
}
