//! [`GoingAway`]: how graceful shutdown tells an upgraded connection (a WebSocket), or a
//! streamed body that waits between writes, to end.
//!
//! An HTTP connection between requests is closed by shutting its reading side; an upgraded
//! one is never idle in that sense, and shutting its reading side would cut off the peer's
//! answer to a closing handshake. So the server sets the connection's `GoingAway` instead:
//! a flag, and a notification that wakes the connection's fiber from its wait for input
//! ([`crate::Upgraded`]'s reads, or the wait of a [`crate::ws::Connection`], whose outbox
//! queue shares the same [`Notify`]). The fiber then sends its close (`1001` for a
//! WebSocket) and reads on until the peer answers or the grace period ends.
//!
//! A streamed HTTP/1.1 body (server-sent events) gets the same signal through its
//! [`crate::BodyWriter`] (`is_going_away`, `going_away_notify`): it waits on the `Notify` for
//! what it streams, and ends its response when the flag is set.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fibra::sync::Notify;

/// The server's word to one upgraded connection that it is shutting down. See the module
/// docs.
#[derive(Debug, Default)]
pub(crate) struct GoingAway {
    set: AtomicBool,
    /// The connection's fiber waits on it for input or this (and, split, for queued output).
    notify: Arc<Notify>,
}

impl GoingAway {
    /// Sets the flag and wakes the connection's fiber (a permit if it is not waiting). Only
    /// the first call wakes.
    pub(crate) fn set(&self) {
        if !self.set.swap(true, Ordering::SeqCst) {
            self.notify.notify_one();
        }
    }

    /// Whether the server is shutting down.
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// What the connection's fiber waits on.
    pub(crate) fn notify(&self) -> &Arc<Notify> {
        &self.notify
    }
}
