//! Multi-producer, single-consumer channels with `std::sync::mpsc`'s API and error types:
//! [`channel`] (unbounded) and [`sync_channel`] (bounded; senders park while it is full).
//!
//! ```
//! use fibra::sync::mpsc;
//! let got = fibra::run(|| {
//!     let (tx, rx) = mpsc::sync_channel(2);
//!     for i in 0..4 {
//!         let tx = tx.clone();
//!         fibra::spawn(move || tx.send(i).unwrap());
//!     }
//!     drop(tx);
//!     let mut v: Vec<i32> = rx.iter().collect();
//!     v.sort();
//!     v
//! });
//! assert_eq!(got, vec![0, 1, 2, 3]);
//! ```
//!
//! As with std, a [`Receiver`] can move to another fiber or thread but is not `Sync`: one
//! receiver waits at a time.
//!
//! ```compile_fail
//! fn shared<T: Sync>(_: &T) {}
//! let (_tx, rx) = fibra::sync::mpsc::channel::<u8>();
//! shared(&rx); // error: `Receiver` is not `Sync`
//! ```
//!
//! # Waiter protocol
//! - The receiver parks in `recv` with a reference-count-free registration (`State::receiver`,
//!   a raw task pointer), set under the channel lock just before it parks. Whoever wakes it
//!   (a send, the last sender's drop) takes the registration under the same lock. The
//!   receiver clears it under the lock at the start of each turn and before it returns, and a
//!   guard clears it if the receiver unwinds out of its wait (a cancelled fiber), so it never
//!   outlives the parked fiber. Dropping the receiver clears it too, and a sender wakes it only
//!   while the receiver is alive.
//! - Senders of a full bounded channel wait in a `WaitList` (its protocol is in
//!   `sync/wait_list.rs`): a received message pops and wakes the oldest; a sender leaves its
//!   entry on every exit, passing on a wake-up it does not use; dropping the receiver wakes
//!   them all.

use super::lock;
use super::wait_list::{Place, WaitList};
use crate::sched::{park_until, LocalWaiter, Waiter};
use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

struct State<T> {
    queue: VecDeque<T>,
    /// `None` for unbounded channels.
    cap: Option<usize>,
    /// The receiver while it is parked in `recv`. Woken under the lock and removed by `recv`
    /// (under the lock) before it returns, so it needs no reference count.
    receiver: Option<LocalWaiter>,
    senders_waiting: WaitList<Waiter>,
    senders: usize,
    receiver_alive: bool,
}

impl<T> State<T> {
    fn is_full(&self) -> bool {
        self.cap.is_some_and(|cap| self.queue.len() >= cap.max(1))
    }

    /// Queues `value` and wakes the receiver if it waits.
    fn push(&mut self, value: T) {
        self.queue.push_back(value);
        if let Some(r) = self.receiver.take() {
            // SAFETY: woken under the lock its registration is guarded by.
            unsafe { r.wake() };
        }
    }
}

struct Chan<T> {
    state: Mutex<State<T>>,
}

impl<T> Chan<T> {
    fn new(cap: Option<usize>) -> Arc<Self> {
        Arc::new(Chan {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                cap,
                receiver: None,
                senders_waiting: WaitList::default(),
                senders: 1,
                receiver_alive: true,
            }),
        })
    }

    /// Pushes `value`, parking while the channel is full if `block`.
    #[inline]
    fn send(&self, value: T, block: bool) -> Result<(), TrySendError<T>> {
        {
            let mut st = lock(&self.state);
            if !st.receiver_alive {
                return Err(TrySendError::Disconnected(value));
            }
            if !st.is_full() {
                st.push(value);
                return Ok(());
            }
            if !block {
                return Err(TrySendError::Full(value));
            }
        }
        self.send_when_room(value)
    }

    /// `send` on a full bounded channel: waits in `senders_waiting` until there is room.
    #[cold]
    fn send_when_room(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut place = Place::new(&self.state, |st: &mut State<T>| &mut st.senders_waiting);
        loop {
            {
                let mut st = lock(&self.state);
                if !st.receiver_alive {
                    let _ = place.leave_unserved(&mut st);
                    return Err(TrySendError::Disconnected(value));
                }
                if !st.is_full() {
                    place.leave_served(&mut st);
                    st.push(value);
                    return Ok(());
                }
                place.register(&mut st);
            }
            park_until(None);
        }
    }

    #[inline(always)]
    fn recv(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        let mut timed_out = false;
        let mut parked = ParkedReceiver {
            chan: self,
            armed: false,
        };
        loop {
            {
                let mut st = lock(&self.state);
                // Whatever woke us, our registration (if any is left) ends here.
                st.receiver = None;
                if let Some(v) = take_waking_sender(st.queue.pop_front(), &mut st) {
                    return Ok(v);
                }
                if st.senders == 0 {
                    return Err(RecvTimeoutError::Disconnected);
                }
                if timed_out {
                    return Err(RecvTimeoutError::Timeout);
                }
                st.receiver = Some(LocalWaiter::current());
            }
            parked.armed = true;
            timed_out = park_until(deadline);
            parked.armed = false;
        }
    }
}

/// Clears the receiver's registration if it unwinds out of its wait (the only exit that
/// skips the clearing at the top of `recv`'s loop).
struct ParkedReceiver<'a, T> {
    chan: &'a Chan<T>,
    armed: bool,
}

impl<T> Drop for ParkedReceiver<'_, T> {
    fn drop(&mut self) {
        if self.armed {
            lock(&self.chan.state).receiver = None;
        }
    }
}

/// After taking `value` off the queue, wakes one sender waiting for room (the wake-up may be
/// spurious for an unbounded channel, which has none waiting).
fn take_waking_sender<T>(value: Option<T>, st: &mut State<T>) -> Option<T> {
    if value.is_some() {
        if let Some(s) = st.senders_waiting.pop_front() {
            s.wake();
        }
    }
    value
}

/// The sending half of an unbounded channel.
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The sending half of a bounded channel.
pub struct SyncSender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving half. Like std's, it is `Send` but not `Sync`.
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
    /// Not `Sync`: two fibers in `recv` at once would share the one receiver registration.
    _not_sync: PhantomData<Cell<()>>,
}

/// An unbounded channel: `send` never waits.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let chan = Chan::new(None);
    (Sender { chan: chan.clone() }, Receiver::new(chan))
}

/// A bounded channel holding at most `bound` messages (at least 1): `send` parks while full.
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let chan = Chan::new(Some(bound));
    (SyncSender { chan: chan.clone() }, Receiver::new(chan))
}

impl<T> Sender<T> {
    /// Sends `value`; fails (giving it back) if the receiver is gone.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.chan.send(value, true).map_err(|e| match e {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => SendError(v),
        })
    }
}

impl<T> SyncSender<T> {
    /// Sends `value`, parking while the channel is full.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.chan.send(value, true).map_err(|e| match e {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => SendError(v),
        })
    }

    /// Sends `value` only if there is room now.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.send(value, false)
    }
}

fn add_sender<T>(chan: &Arc<Chan<T>>) -> Arc<Chan<T>> {
    lock(&chan.state).senders += 1;
    chan.clone()
}

fn drop_sender<T>(chan: &Chan<T>) {
    let mut st = lock(&chan.state);
    st.senders -= 1;
    if st.senders == 0 && st.receiver_alive {
        if let Some(r) = st.receiver.take() {
            // SAFETY: woken under the lock its registration is guarded by.
            unsafe { r.wake() };
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            chan: add_sender(&self.chan),
        }
    }
}

impl<T> Clone for SyncSender<T> {
    fn clone(&self) -> Self {
        SyncSender {
            chan: add_sender(&self.chan),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        drop_sender(&self.chan);
    }
}

impl<T> Drop for SyncSender<T> {
    fn drop(&mut self) {
        drop_sender(&self.chan);
    }
}

impl<T> Receiver<T> {
    fn new(chan: Arc<Chan<T>>) -> Self {
        Receiver {
            chan,
            _not_sync: PhantomData,
        }
    }

    /// Waits for a message; fails once every sender is gone and the queue is empty.
    #[inline]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.chan.recv(None).map_err(|_| RecvError)
    }

    /// Waits for a message at most `timeout`.
    ///
    /// A timeout too long for an `Instant` (`Duration::MAX`) waits forever, as with std.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.chan.recv(crate::time::deadline_after(timeout))
    }

    /// Takes a message if one is queued.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut st = lock(&self.chan.state);
        match take_waking_sender(st.queue.pop_front(), &mut st) {
            Some(v) => Ok(v),
            None if st.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// An iterator that receives until every sender is gone.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.recv().ok())
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let waiting = {
            let mut st = lock(&self.chan.state);
            st.receiver_alive = false;
            st.receiver = None;
            st.senders_waiting.drain().collect::<Vec<_>>()
        };
        for w in waiting {
            w.wake();
        }
    }
}

macro_rules! debug_named {
    ($($t:ident),*) => {$(
        impl<T> std::fmt::Debug for $t<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(concat!("mpsc::", stringify!($t)))
            }
        }
    )*};
}
debug_named!(Sender, SyncSender, Receiver);
