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
//! what it streams, and ends its response when the flag is set. An HTTP/2 connection's
//! streamed bodies each get a `GoingAway` of their own from the connection's
//! [`GoingAwayList`], which the connection sets when it sends its GOAWAY.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

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

/// The `GoingAway`s of an HTTP/2 connection's streamed bodies: each registers when its body
/// starts streaming, and the connection sets them all when it goes away (a stream that
/// registers after that is set at once). Shared with the streams' fibers.
#[derive(Debug, Default)]
pub(crate) struct GoingAwayList {
    inner: Mutex<ListState>,
}

#[derive(Debug, Default)]
struct ListState {
    set: bool,
    /// The streams' signals; those whose body has ended are pruned as new ones register.
    streams: Vec<Weak<GoingAway>>,
}

impl GoingAwayList {
    fn lock(&self) -> std::sync::MutexGuard<'_, ListState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A signal for one streamed body, set when the connection goes away.
    pub(crate) fn register(&self) -> Arc<GoingAway> {
        let g = Arc::new(GoingAway::default());
        let mut st = self.lock();
        if st.set {
            drop(st);
            g.set();
            return g;
        }
        st.streams.retain(|w| w.strong_count() > 0);
        st.streams.push(Arc::downgrade(&g));
        g
    }

    /// The connection goes away: sets every registered signal (and those to come).
    pub(crate) fn set_all(&self) {
        let streams = {
            let mut st = self.lock();
            st.set = true;
            std::mem::take(&mut st.streams)
        };
        for g in streams.iter().filter_map(Weak::upgrade) {
            g.set();
        }
    }
}
