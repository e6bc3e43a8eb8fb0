//! A fiber still blocked when its runtime's shutdown gives up on it (it caught `Cancelled`
//! and waits on a channel whose sender a plain thread keeps) is leaked with its task and
//! stack instead of being dropped, and the runtime still shuts down. Under CI's
//! AddressSanitizer job this also checks that LeakSanitizer is told about such a fiber: what
//! it still holds is not reported as leaked.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_fiber_that_never_ends_is_leaked_and_shutdown_completes() {
    let (tx, rx) = fibra::sync::mpsc::channel::<()>();
    let cancelled = Arc::new(AtomicBool::new(false));
    let c = cancelled.clone();
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(move || {
        fibra::spawn(move || {
            // Heap state on the fiber's stack, leaked with it.
            let mut held = vec![String::from("held by a fiber that never ends")];
            if catch_unwind(AssertUnwindSafe(|| rx.recv())).is_err() {
                c.store(true, Ordering::SeqCst);
                held.push(String::from("still held after Cancelled"));
            }
            // A channel wait goes on waiting in a cancelled fiber; nobody sends.
            let _ = rx.recv();
            drop(held);
        });
        fibra::time::sleep(Duration::from_millis(20));
    });
    drop(rt);
    assert!(
        cancelled.load(Ordering::SeqCst),
        "the fiber was not cancelled"
    );
    // The receiver's registration still names the leaked fiber's task: waking it is harmless.
    drop(tx);
}
