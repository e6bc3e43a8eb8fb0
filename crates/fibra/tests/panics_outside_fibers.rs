//! User code that the runtime runs outside the fiber that owned it — dropping a detached
//! fiber's result, a destructor run by a cancelled fiber's unwind — never unwinds a worker:
//! its panic reaches the fiber's `JoinHandle`, or is reported as std reports a thread's panic,
//! and the worker keeps running.

mod util;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A value whose destructor panics.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("PanicsOnDrop dropped");
        }
    }
}

#[test]
fn a_detached_fibers_result_that_panics_on_drop_does_not_kill_the_worker() {
    let rt = Arc::new(fibra::Runtime::builder().workers(1).build().unwrap());
    let rt2 = rt.clone();
    let answer = util::within("the worker after a panicking result", move || {
        rt2.block_on(|| {
            for _ in 0..10 {
                drop(fibra::spawn(|| PanicsOnDrop));
            }
            // The detached fibers run and finish; their results are dropped meanwhile.
            for _ in 0..10 {
                fibra::yield_now();
            }
        });
        // The one worker must still be alive to run this.
        rt2.block_on(|| fibra::spawn(|| 6 * 7).join().unwrap())
    });
    assert_eq!(answer, 42);
}

#[test]
fn a_joined_fibers_result_that_panics_on_drop_panics_in_the_joiner() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let caught = rt.block_on(|| {
        let h = fibra::spawn(|| PanicsOnDrop);
        let value = h.join().unwrap();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value))).is_err()
    });
    assert!(caught);
}

#[test]
fn a_handle_dropped_after_the_fiber_finished_drops_the_result_in_the_dropper() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let caught = rt.block_on(|| {
        let h = fibra::spawn(|| PanicsOnDrop);
        while !h.is_finished() {
            fibra::yield_now();
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(h))).is_err()
    });
    assert!(caught);
}

#[test]
fn a_panic_in_a_destructor_during_cancellation_is_reported() {
    if util::child_role().as_deref() == Some("panicking-destructor") {
        let dropped = Arc::new(AtomicUsize::new(0));
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        let d = dropped.clone();
        rt.block_on(move || {
            struct Boom(Arc<AtomicUsize>);
            impl Drop for Boom {
                fn drop(&mut self) {
                    self.0.fetch_add(1, Ordering::SeqCst);
                    panic!("boom in a destructor during cancellation");
                }
            }
            fibra::fiber::Builder::new()
                .name("doomed")
                .spawn(move || {
                    let _b = Boom(d);
                    let (_tx, rx) = fibra::sync::oneshot::channel::<()>();
                    let _ = rx.recv();
                })
                .unwrap();
            fibra::time::sleep(std::time::Duration::from_millis(20));
        });
        drop(rt);
        println!("destructors run: {}", dropped.load(Ordering::SeqCst));
        return;
    }
    let out = util::run_child(
        "a_panic_in_a_destructor_during_cancellation_is_reported",
        "panicking-destructor",
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "child status {:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    assert!(
        stderr.contains("boom in a destructor during cancellation"),
        "the panic left no trace; stderr: {stderr}"
    );
}
