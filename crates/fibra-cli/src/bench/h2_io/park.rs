//! Polling the `h2` crate's futures from a fiber (`fibra bench --h2`'s client): a [`Parker`]
//! is a waker that notifies a [`Notify`], which the fiber waits on between polls.
//!
//! Wakers are cloned into the connection's shared state and woken by whichever fiber makes
//! progress (the owner fiber reading frames, a stream fiber sending), possibly on another
//! thread: `Notify` stores a permit when nobody waits, so a wake-up between a poll and the
//! wait is not lost.

use std::sync::Arc;
use std::task::{Wake, Waker};

use fibra::sync::Notify;

/// The waker's target.
struct Woken(Arc<Notify>);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.notify_one();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.notify_one();
    }
}

/// A waker and the [`Notify`] it wakes. One per fiber that polls.
pub struct Parker {
    woken: Arc<Woken>,
    waker: Waker,
}

impl Default for Parker {
    fn default() -> Self {
        Parker::new()
    }
}

impl Parker {
    /// A parker with a `Notify` of its own.
    pub fn new() -> Parker {
        Parker::with_notify(Arc::new(Notify::new()))
    }

    /// A parker whose waker notifies `notify`, which others may notify too (graceful
    /// shutdown's `GoingAway`).
    pub fn with_notify(notify: Arc<Notify>) -> Parker {
        let woken = Arc::new(Woken(notify));
        let waker = Waker::from(woken.clone());
        Parker { woken, waker }
    }

    /// The waker to poll with.
    pub fn waker(&self) -> &Waker {
        &self.waker
    }

    /// What the waker notifies.
    pub fn notify(&self) -> &Notify {
        &self.woken.0
    }
}
