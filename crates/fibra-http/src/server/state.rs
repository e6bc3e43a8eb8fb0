//! The server's shared state: the connection count, the table of open connections (each with
//! the handle that shuts it down and its [`ConnState`]), the shutdown flag, and the signal
//! that the server thread has finished.

use std::collections::HashMap;
use std::io;
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::transport::{ConnState, ShutdownHandle};

/// A connection known to the server: the handle that shuts it down (so shutdown can wake it),
/// with the server's bookkeeping of it ([`ConnState`]: whether it is idle between requests).
/// The bookkeeping lives in the handle's own allocation when the handle has room for it
/// ([`Tcp`](crate::Tcp)'s and [`Unix`](crate::Unix)'s have), else in a [`Tracked`].
pub(super) type ConnEntry = Arc<dyn ShutdownHandle>;

/// The entry of a connection whose shutdown handle keeps no [`ConnState`], or that has no
/// handle (shutdown then cannot wake it).
struct Tracked {
    handle: Option<Arc<dyn ShutdownHandle>>,
    state: ConnState,
}

impl ShutdownHandle for Tracked {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match &self.handle {
            Some(h) => h.shutdown(how),
            None => Ok(()),
        }
    }
    fn conn_state(&self) -> Option<&ConnState> {
        Some(&self.state)
    }
}

/// The entry for a new connection with shutdown handle `handle`.
pub(super) fn conn_entry(handle: Option<Arc<dyn ShutdownHandle>>) -> ConnEntry {
    match handle {
        Some(h) if h.conn_state().is_some() => h,
        handle => Arc::new(Tracked {
            handle,
            state: ConnState::default(),
        }),
    }
}

/// The bookkeeping of a connection's entry (`conn_entry` made sure it has some).
pub(super) fn state_of(entry: &dyn ShutdownHandle) -> &ConnState {
    entry
        .conn_state()
        .expect("a connection entry keeps a ConnState")
}

/// State shared by the accept loops, the connections and the handle.
#[derive(Debug)]
pub(super) struct State {
    pub(super) shutting_down: AtomicBool,
    pub(super) active: AtomicUsize,
    pub(super) next_id: AtomicU64,
    pub(super) conns: Mutex<HashMap<u64, ConnEntry>>,
    /// Woken when a connection ends (a slot under `max_connections` frees up).
    pub(super) slot_freed: fibra::sync::Notify,
    /// Set when the server's main fiber has finished (see [`State::finish`]).
    done: AtomicBool,
    /// Wakes a fiber or thread waiting in [`State::wait_done`]; each passes it on to the next.
    done_notify: fibra::sync::Notify,
}

impl State {
    pub(super) fn new() -> State {
        State {
            shutting_down: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
            slot_freed: fibra::sync::Notify::new(),
            done: AtomicBool::new(false),
            done_notify: fibra::sync::Notify::new(),
        }
    }

    /// Says that the server has stopped: every [`wait_done`](Self::wait_done) returns.
    pub(super) fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.done_notify.notify_one();
    }

    /// Waits until [`finish`](Self::finish); parks only the calling fiber when called from
    /// one, so the server may run on the caller's own worker.
    pub(super) fn wait_done(&self) {
        // `notify_one` keeps a permit when nobody waits yet, so a `finish` between the load
        // and the wait is not lost; each waiter that leaves wakes the next one.
        while !self.done.load(Ordering::SeqCst) {
            self.done_notify.wait();
        }
        self.done_notify.notify_one();
    }

    pub(super) fn each_conn(&self, f: impl Fn(&dyn ShutdownHandle, &ConnState)) {
        let conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        for c in conns.values() {
            f(&**c, state_of(&**c));
        }
    }
}
