//! Runtime shutdown cancels the fibers still alive: each unwinds once, with a `Cancelled`
//! payload, and what its destructors do during that unwind is ordinary behaviour — blocking
//! calls return instead of unwinding again, registrations left by the unwound fiber are gone.

mod util;

use fibra::sync::{mpsc, Mutex, Notify};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Parks the calling fiber until the runtime is dropped.
fn park_forever() {
    let (_tx, rx) = fibra::sync::oneshot::channel::<()>();
    let _ = rx.recv();
}

/// Lets every fiber spawned so far reach its first park.
fn settle() {
    fibra::time::sleep(Duration::from_millis(20));
}

#[test]
fn a_receiver_unwound_out_of_recv_leaves_no_waiter_behind() {
    // The receiver outlives its fiber (it lives in a std mutex), so nothing drops it during
    // the unwind; the last sender is dropped after the runtime is gone.
    let shared_rx: Arc<std::sync::Mutex<Option<mpsc::Receiver<u32>>>> = Arc::default();
    let (tx, rx) = mpsc::channel::<u32>();
    *shared_rx.lock().unwrap() = Some(rx);
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let rx2 = shared_rx.clone();
    rt.block_on(move || {
        fibra::spawn(move || {
            let guard = rx2.lock().unwrap();
            let _ = guard.as_ref().unwrap().recv();
        });
        settle();
    });
    drop(rt);
    // The fiber and its task are gone; waking its registration would touch freed memory.
    drop(tx);
    let rx = shared_rx
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap();
    assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));
}

#[test]
fn destructors_that_block_during_cancellation_run_to_completion() {
    if util::child_role().as_deref() == Some("blocking-destructors") {
        blocking_destructors_child();
        return;
    }
    // A second cancellation raised inside a running destructor used to abort the process, so
    // the scenario runs in a child.
    let out = util::run_child(
        "destructors_that_block_during_cancellation_run_to_completion",
        "blocking-destructors",
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    assert!(
        stdout.contains("all destructors finished: 4"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
}

fn blocking_destructors_child() {
    struct OnDrop<F: FnMut()>(F);
    impl<F: FnMut()> Drop for OnDrop<F> {
        fn drop(&mut self) {
            (self.0)();
        }
    }
    let finished = Arc::new(AtomicUsize::new(0));
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let f = finished.clone();
    rt.block_on(move || {
        // 1. A destructor that sleeps: returns at once.
        let f1 = f.clone();
        fibra::spawn(move || {
            let _d = OnDrop(move || {
                fibra::time::sleep(Duration::from_secs(3600));
                f1.fetch_add(1, Ordering::SeqCst);
            });
            park_forever();
        });
        // 2. A destructor that waits on a Notify nobody notifies: returns at once.
        let f2 = f.clone();
        fibra::spawn(move || {
            let n = Notify::new();
            let _d = OnDrop(move || {
                n.wait();
                f2.fetch_add(1, Ordering::SeqCst);
            });
            park_forever();
        });
        // 3. A destructor that writes to a socket whose peer never reads: the write that
        //    would wait fails instead.
        let f3 = f.clone();
        fibra::spawn(move || {
            let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client =
                fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (_server, _) = listener.accept().unwrap();
            let _d = OnDrop(move || {
                let chunk = vec![0u8; 1 << 20];
                let mut failed = false;
                for _ in 0..64 {
                    if client.write_all(&chunk).is_err() {
                        failed = true;
                        break;
                    }
                }
                assert!(failed, "64 MiB went into a socket nobody reads");
                f3.fetch_add(1, Ordering::SeqCst);
            });
            park_forever();
        });
        // 4. A destructor that locks a fibra mutex held by another cancelled fiber: it waits
        //    for the lock, which the holder's own unwind releases.
        let m = Arc::new(Mutex::new(0u32));
        let holder = m.clone();
        fibra::spawn(move || {
            let _held = holder.lock();
            park_forever();
        });
        settle();
        let f4 = f.clone();
        fibra::spawn(move || {
            let _d = OnDrop(move || {
                *m.lock() += 1;
                f4.fetch_add(1, Ordering::SeqCst);
            });
            park_forever();
        });
        settle();
    });
    drop(rt);
    println!(
        "all destructors finished: {}",
        finished.load(Ordering::SeqCst)
    );
}
