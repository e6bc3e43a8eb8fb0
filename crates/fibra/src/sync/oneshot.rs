//! A channel for exactly one value.
//!
//! ```
//! fibra::run(|| {
//!     let (tx, rx) = fibra::sync::oneshot::channel();
//!     fibra::spawn(move || tx.send(7).unwrap());
//!     assert_eq!(rx.recv(), Ok(7));
//! });
//! ```
//!
//! # Waiter protocol
//! One receiver waits at a time (the [`Receiver`] is not `Sync`): it stores itself as the
//! waiter under the lock before parking; `send` and the sender's drop take and wake it; a
//! receiver that times out clears it. The waiter holds a reference count, so one left behind
//! by an unwound receiver only costs a spurious wake-up.

use super::lock;
use crate::sched::{park_until, Waiter};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use std::sync::mpsc::{RecvError, RecvTimeoutError};

struct State<T> {
    value: Option<T>,
    waiter: Option<Waiter>,
    sender_alive: bool,
    receiver_alive: bool,
}

/// Sends the value. Dropping it unsent makes `recv` fail.
pub struct Sender<T> {
    inner: Arc<Mutex<State<T>>>,
}

/// Receives the value. `Send` but not `Sync`: one fiber waits on it at a time.
pub struct Receiver<T> {
    inner: Arc<Mutex<State<T>>>,
    _not_sync: PhantomData<Cell<()>>,
}

/// Creates a one-shot channel.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Mutex::new(State {
        value: None,
        waiter: None,
        sender_alive: true,
        receiver_alive: true,
    }));
    (
        Sender {
            inner: inner.clone(),
        },
        Receiver {
            inner,
            _not_sync: PhantomData,
        },
    )
}

impl<T> Sender<T> {
    /// Sends `value`; gives it back if the receiver is gone.
    pub fn send(self, value: T) -> Result<(), T> {
        let waiter = {
            let mut st = lock(&self.inner);
            if !st.receiver_alive {
                return Err(value);
            }
            st.value = Some(value);
            st.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waiter = {
            let mut st = lock(&self.inner);
            st.sender_alive = false;
            st.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// Waits for the value; fails if the sender was dropped without sending.
    pub fn recv(self) -> Result<T, RecvError> {
        self.recv_deadline(None).map_err(|_| RecvError)
    }

    /// Waits for the value at most until `deadline`.
    pub fn recv_deadline(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        loop {
            {
                let mut st = lock(&self.inner);
                if let Some(v) = st.value.take() {
                    return Ok(v);
                }
                if !st.sender_alive {
                    return Err(RecvTimeoutError::Disconnected);
                }
                st.waiter = Some(Waiter::current());
            }
            if park_until(deadline) {
                let mut st = lock(&self.inner);
                if let Some(v) = st.value.take() {
                    return Ok(v);
                }
                st.waiter = None;
                return Err(RecvTimeoutError::Timeout);
            }
        }
    }

    /// Takes the value if it has been sent.
    pub fn try_recv(&self) -> Option<T> {
        lock(&self.inner).value.take()
    }

    /// Whether a value was sent or the sender is gone (so `recv` would not wait).
    pub fn is_ready(&self) -> bool {
        let st = lock(&self.inner);
        st.value.is_some() || !st.sender_alive
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        lock(&self.inner).receiver_alive = false;
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("oneshot::Sender")
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("oneshot::Receiver")
    }
}
