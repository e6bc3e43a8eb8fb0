//! [`ServerHandle`], what `Server::serve` returns: the bound addresses, the connection count,
//! graceful shutdown and drain.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::state::State;

/// A running server. Dropping the handle leaves the server running (like a detached thread).
#[derive(Debug)]
pub struct ServerHandle {
    /// The main acceptor's address first, then those added with `Server::also_*`.
    pub(super) local_addrs: Vec<SocketAddr>,
    pub(super) state: Arc<State>,
    pub(super) cmd: fibra::sync::mpsc::Sender<Stop>,
    pub(super) runner: Option<Runner>,
}

/// What runs a server's main fiber: a thread of its own with its own runtime, or a fiber of
/// the runtime that called `Server::serve` (see there).
#[derive(Debug)]
pub(super) enum Runner {
    /// The thread whose runtime the server made.
    Thread(std::thread::JoinHandle<()>),
    /// The main fiber, on the caller's runtime.
    Fiber(fibra::JoinHandle<()>),
}

/// The number of open connections of a running server (see
/// [`ServerHandle::connection_count`]); cheap to clone.
#[derive(Debug, Clone)]
pub struct ConnectionCount(Arc<State>);

impl ConnectionCount {
    /// Number of open connections now.
    pub fn get(&self) -> usize {
        self.0.active.load(Ordering::Relaxed)
    }

    /// Number of open connections idle now: waiting for their next request with nothing
    /// buffered (such a connection holds no fiber stack). Counted when asked, by looking at
    /// every connection: nothing is counted on the request path.
    pub fn idle(&self) -> usize {
        let idle = std::cell::Cell::new(0);
        self.0.each_conn(|_, st| {
            if st.idle.load(Ordering::Relaxed) {
                idle.set(idle.get() + 1);
            }
        });
        idle.get()
    }
}

/// How to stop: leave idle connections open for `idle_grace` (see [`ServerHandle::drain`]),
/// force-close what is left after `grace`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stop {
    pub(super) idle_grace: Duration,
    pub(super) grace: Duration,
}

impl ServerHandle {
    /// The address the server listens on (with the real port when bound to port 0); the
    /// unspecified address `0.0.0.0:0` for an acceptor without an IP address (a Unix-domain
    /// socket). With acceptors added by `Server::also_*`, the main one's: see
    /// [`local_addrs`](Self::local_addrs).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addrs[0]
    }

    /// The address of each acceptor: the main one first, then those added with
    /// [`Server::also_bind`](super::Server::also_bind) and the like, in the order they were
    /// added (the unspecified address for one without an IP address).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Number of open connections.
    pub fn connections(&self) -> usize {
        self.state.active.load(Ordering::Relaxed)
    }

    /// A handle that reads [`connections`](Self::connections) from anywhere (a metrics
    /// endpoint in the server's own handler, say).
    pub fn connection_count(&self) -> ConnectionCount {
        ConnectionCount(self.state.clone())
    }

    /// Graceful shutdown: stop accepting, close idle keep-alive connections at once, let
    /// requests in flight finish (their responses carry `Connection: close`), and force-close
    /// whatever is left after `grace`. Blocks until the server has stopped; may be called from
    /// any thread, also while another thread is in [`join`](Self::join).
    pub fn shutdown(&self, grace: Duration) {
        self.stop(Stop {
            idle_grace: Duration::ZERO,
            grace,
        })
    }

    /// Graceful shutdown for a handover (a new process already accepts on the same
    /// listening sockets): stop accepting, let requests in flight finish, answer the next
    /// request of each keep-alive connection with `Connection: close` — its client then
    /// reconnects, to the new process — and only close connections still idle after
    /// `idle_grace`; force-close whatever is left after `grace`. Closing an idle
    /// connection at once, as [`shutdown`](Self::shutdown) does, races a client that is
    /// sending its next request on it. Blocks until the server has stopped.
    pub fn drain(&self, idle_grace: Duration, grace: Duration) {
        self.stop(Stop { idle_grace, grace })
    }

    /// Starts a drain without waiting for it: from now on the server accepts no connection
    /// and answers each request with `Connection: close` (closing the connection after it),
    /// while idle connections stay open; [`drain`](Self::drain) (or
    /// [`shutdown`](Self::shutdown)) then finishes it. For a handover that must be under way
    /// before anything else says so (a health check turning 503, say).
    pub fn begin_drain(&self) {
        self.state.shutting_down.store(true, Ordering::SeqCst);
        self.state.slot_freed.notify_all();
    }

    fn stop(&self, stop: Stop) {
        let _ = self.cmd.send(stop);
        self.state.wait_done();
    }

    /// Blocks until the server has stopped (after a [`shutdown`](Self::shutdown) from
    /// elsewhere). From a fiber, only that fiber waits.
    pub fn join(mut self) {
        match self.runner.take() {
            Some(Runner::Thread(t)) => {
                let _ = t.join();
            }
            Some(Runner::Fiber(f)) => {
                let _ = f.join();
            }
            None => {}
        }
    }
}
