//! `Builder::run`: a runtime whose worker 0 is the calling thread. Its root fiber runs there,
//! other workers still get threads, a panic comes back to the caller, and fibers left when
//! the root returns are cancelled (their destructors run) before `run` returns.

mod util;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use util::DropCounter;

#[test]
fn one_worker_is_the_calling_thread() {
    let caller = std::thread::current().id();
    let (on, index) = fibra::Runtime::builder()
        .workers(1)
        .run(|| (std::thread::current().id(), fibra::current_worker()))
        .unwrap();
    assert_eq!(on, caller);
    assert_eq!(index, Some(0));
    // The thread is a plain one again: a second runtime can run on it.
    let v = fibra::Runtime::builder().workers(1).run(|| 5).unwrap();
    assert_eq!(v, 5);
}

#[test]
fn the_other_workers_get_threads_of_their_own() {
    let caller = std::thread::current().id();
    let seen = fibra::Runtime::builder()
        .workers(3)
        .run(|| {
            let handles: Vec<_> = (0..3)
                .map(|i| {
                    fibra::fiber::Builder::new()
                        .worker(i)
                        .spawn(move || (fibra::current_worker(), std::thread::current().id()))
                        .unwrap()
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
        .unwrap();
    assert_eq!(seen[0], (Some(0), caller));
    for (i, (index, thread)) in seen.iter().enumerate().skip(1) {
        assert_eq!(*index, Some(i));
        assert_ne!(*thread, caller);
    }
}

#[test]
fn sockets_work_on_the_calling_thread() {
    let echoed = fibra::Runtime::builder()
        .workers(1)
        .run(|| {
            use std::io::{Read, Write};
            let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = fibra::spawn(move || {
                let (mut s, _) = listener.accept().unwrap();
                let mut buf = [0u8; 5];
                s.read_exact(&mut buf).unwrap();
                s.write_all(&buf).unwrap();
            });
            let mut c = fibra::net::TcpStream::connect(addr).unwrap();
            c.write_all(b"hello").unwrap();
            let mut back = [0u8; 5];
            c.read_exact(&mut back).unwrap();
            server.join().unwrap();
            back
        })
        .unwrap();
    assert_eq!(&echoed, b"hello");
}

#[test]
fn fibers_left_behind_are_cancelled_before_run_returns() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    fibra::Runtime::builder()
        .workers(2)
        .run(move || {
            for i in 0..4 {
                let c = DropCounter(d.clone());
                fibra::fiber::Builder::new()
                    .worker(i)
                    .spawn(move || {
                        let _c = c;
                        fibra::time::sleep(Duration::from_secs(3600));
                    })
                    .unwrap();
            }
            fibra::yield_now();
        })
        .unwrap();
    assert_eq!(dropped.load(Ordering::SeqCst), 4);
}

#[test]
fn a_panic_of_the_root_fiber_comes_back_to_the_caller() {
    let caught = std::panic::catch_unwind(|| {
        fibra::Runtime::builder()
            .workers(2)
            .run(|| -> u32 { panic!("root failed") })
    });
    let payload = caught.expect_err("the panic is resumed");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"root failed"));
}

#[test]
fn run_refuses_a_worker_thread() {
    let refused = fibra::Runtime::builder()
        .workers(1)
        .run(|| std::panic::catch_unwind(|| fibra::Runtime::builder().workers(1).run(|| ())))
        .unwrap();
    assert!(refused.is_err());
}
