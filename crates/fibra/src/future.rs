//! Futures on fibers: [`block_on`] runs an `async` computation to completion on the calling
//! fiber (or thread), parking it while the future is pending.
//!
//! # Waker protocol
//! The waker holds the caller as a `Waiter` (the fiber's task, or the OS thread outside a
//! fiber). `wake` unparks it with the park protocol's token (`sched/task.rs`): a wake-up that
//! arrives before the caller parks makes that park return at once, so none is lost, and a
//! wake-up from another thread reaches the fiber through its home worker's inbox. The caller
//! polls, parks when the future is pending, and polls again on every return from the park
//! (spurious returns included), so waking more often than needed is harmless.

use crate::sched::{park_until, Waiter};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// The waker of one [`block_on`] call: wakes the fiber or thread that called it.
struct FiberWaker(Waiter);

impl Wake for FiberWaker {
    fn wake(self: Arc<Self>) {
        self.0.clone().wake();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.clone().wake();
    }
}

/// Runs `future` to completion on the calling fiber and returns its output.
///
/// While the future is pending the fiber parks (its worker runs other fibers) until the
/// future's waker is called, from any thread: a waker called from another worker or a plain
/// thread (a callback, a helper thread, another runtime) wakes the fiber through its home
/// worker. Outside a fiber the calling thread blocks instead, as with
/// `futures::executor::block_on`.
///
/// This is the bridge for async-only clients: give them sockets that implement the async I/O
/// traits over `fibra::net` and drive their futures here. No async runtime is needed, but a
/// future that relies on one (tokio's timers or sockets, `tokio::spawn`) must be given one.
///
/// Like a lock, `block_on` waits until the future completes, also in a fiber that is being
/// cancelled at runtime shutdown.
///
/// ```
/// use std::future::poll_fn;
/// use std::task::Poll;
///
/// fibra::run(|| {
///     // A future woken from another thread: a oneshot channel filled by a plain thread.
///     let (tx, rx) = std::sync::mpsc::channel::<u32>();
///     let waker_slot = std::sync::Arc::new(std::sync::Mutex::new(None::<std::task::Waker>));
///     let slot = waker_slot.clone();
///     std::thread::spawn(move || {
///         tx.send(42).unwrap();
///         if let Some(w) = slot.lock().unwrap().take() {
///             w.wake();
///         }
///     });
///     let got = fibra::block_on(poll_fn(|cx| {
///         *waker_slot.lock().unwrap() = Some(cx.waker().clone());
///         match rx.try_recv() {
///             Ok(v) => Poll::Ready(v),
///             Err(_) => Poll::Pending,
///         }
///     }));
///     assert_eq!(got, 42);
///     assert_eq!(fibra::block_on(async { 1 + 1 }), 2);
/// });
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(FiberWaker(Waiter::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        park_until(None);
    }
}
