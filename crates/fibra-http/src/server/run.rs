//! The running server: the root fiber (make the acceptors, start the accept loops, wait for
//! the stop command, shut down) and the accept loops, with the connection limit.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handle::Stop;
use super::state::{conn_entry, state_of, ConnEntry, State};
use super::Listen;
use crate::acceptor::Acceptor;
use crate::conn::{serve_steps, ConnCtl, Owner};
use crate::service::Service;
use crate::settings::{ServerError, ServerErrorKind, Settings};
use crate::transport::{is_resource_error, Transport};

/// How often a parked accept loop looks at the shutdown flag and the connection limit.
const ACCEPT_POLL: Duration = Duration::from_millis(200);
/// Pause after `EMFILE`/`ENFILE`/`ENOBUFS`/`ENOMEM` in accept before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The makers of a server's acceptors: the main one's and those added beside it.
pub(super) struct Acceptors<A> {
    pub(super) listen: Listen<A>,
    pub(super) more: Vec<Listen<Box<dyn AnyAcceptor>>>,
}

/// An acceptor served beside the main one, whatever its type: its accept loop serves through
/// `dyn Service` (the main acceptor's loop calls the service directly).
pub(super) trait AnyAcceptor: Send {
    /// [`Acceptor::set_accept_timeout`].
    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// [`Acceptor::local_addr`].
    fn local_addr(&self) -> Option<SocketAddr>;
    /// Spawns its accept loop on worker `worker`.
    fn spawn_loop(
        self: Box<Self>,
        worker: usize,
        settings: Arc<Settings>,
        service: Arc<dyn Service + Send + Sync>,
        state: Arc<State>,
    ) -> io::Result<fibra::fiber::JoinHandle<()>>;
}

impl<A: Acceptor> AnyAcceptor for A {
    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        Acceptor::set_accept_timeout(self, timeout)
    }
    fn local_addr(&self) -> Option<SocketAddr> {
        Acceptor::local_addr(self)
    }
    fn spawn_loop(
        self: Box<Self>,
        worker: usize,
        settings: Arc<Settings>,
        service: Arc<dyn Service + Send + Sync>,
        state: Arc<State>,
    ) -> io::Result<fibra::fiber::JoinHandle<()>> {
        spawn_accept_loop(worker, *self, settings, service, state)
    }
}

/// Spawns the accept loop of `acceptor` on worker `worker`.
fn spawn_accept_loop<A, H>(
    worker: usize,
    acceptor: A,
    settings: Arc<Settings>,
    service: Arc<H>,
    state: Arc<State>,
) -> io::Result<fibra::fiber::JoinHandle<()>>
where
    A: Acceptor,
    H: Service + Send + Sync + ?Sized + 'static,
{
    fibra::fiber::Builder::new()
        .name(format!("accept-{worker}"))
        .worker(worker)
        .spawn(move || accept_loop(worker, acceptor, settings, service, state))
}

/// Makes the acceptors of every worker with `listen`, each with the server's accept timeout.
fn make_acceptors<A>(
    listen: &mut Listen<A>,
    workers: usize,
    set_timeout: impl Fn(&A) -> io::Result<()>,
) -> io::Result<Vec<A>> {
    (0..workers)
        .map(|i| listen(i, workers).and_then(|a| set_timeout(&a).map(|()| a)))
        .collect()
}

/// The address an acceptor reports, or the unspecified one (a Unix-domain socket).
fn bound_addr(addr: Option<SocketAddr>) -> SocketAddr {
    addr.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
}

/// The root fiber: bind, start the accept loops, wait for the shutdown command, shut down.
pub(super) fn run_server<A, H>(
    acceptors: Acceptors<A>,
    workers: usize,
    settings: Arc<Settings>,
    service: Arc<H>,
    state: Arc<State>,
    cmd_rx: fibra::sync::mpsc::Receiver<Stop>,
    ready_tx: fibra::sync::oneshot::Sender<io::Result<Vec<SocketAddr>>>,
) where
    A: Acceptor,
    H: Service + Send + Sync + 'static,
{
    struct DoneGuard(Arc<State>);
    impl Drop for DoneGuard {
        fn drop(&mut self) {
            self.0.finish();
        }
    }
    let _done = DoneGuard(state.clone());
    let Acceptors { mut listen, more } = acceptors;
    let timeout = Some(ACCEPT_POLL);
    let main = make_acceptors(&mut listen, workers, |a| a.set_accept_timeout(timeout));
    let added: io::Result<Vec<Vec<Box<dyn AnyAcceptor>>>> = more
        .into_iter()
        .map(|mut listen| make_acceptors(&mut listen, workers, |a| a.set_accept_timeout(timeout)))
        .collect();
    let (main, added) = match (main, added) {
        (Ok(main), Ok(added)) => (main, added),
        (Err(e), _) | (_, Err(e)) => {
            let _ = ready_tx.send(Err(e));
            return;
        }
    };
    // What made the acceptors may hold one too (clones of a shared one): drop it, so the
    // accept loops are the last holders and stopping them closes the listeners.
    drop(listen);
    let mut bound = vec![bound_addr(main.first().and_then(|a| a.local_addr()))];
    bound.extend(
        added
            .iter()
            .map(|group| bound_addr(group.first().and_then(|a| a.local_addr()))),
    );
    let mut accept_loops = Vec::with_capacity(workers * (1 + added.len()));
    let dyn_service: Arc<dyn Service + Send + Sync> = service.clone();
    let spawned = main
        .into_iter()
        .enumerate()
        .map(|(i, a)| spawn_accept_loop(i, a, settings.clone(), service.clone(), state.clone()))
        .chain(added.into_iter().enumerate().flat_map(|(k, group)| {
            // Each added acceptor's connections know its index (`Request::listener`).
            let settings = Arc::new(Settings {
                listener: k + 1,
                ..Settings::clone(&settings)
            });
            let (service, state) = (&dyn_service, &state);
            group.into_iter().enumerate().map(move |(i, a)| {
                a.spawn_loop(i, settings.clone(), service.clone(), state.clone())
            })
        }));
    for h in spawned {
        match h {
            Ok(h) => accept_loops.push(h),
            Err(e) => {
                state.shutting_down.store(true, Ordering::SeqCst);
                let _ = ready_tx.send(Err(e));
                return;
            }
        }
    }
    let _ = ready_tx.send(Ok(bound));
    let Stop { idle_grace, grace } = cmd_rx.recv().unwrap_or(Stop {
        idle_grace: Duration::ZERO,
        grace: Duration::ZERO,
    });

    // Stop accepting; wake idle connections (they see the flag and close). Connections set
    // their idle flag with relaxed stores, so one that went idle just as the flag was set may
    // be seen idle only by a later look: look again on every round of the wait.
    state.shutting_down.store(true, Ordering::SeqCst);
    state.slot_freed.notify_all();
    let close_idle = || {
        state.each_conn(|c, st| {
            if st.idle.load(Ordering::Relaxed) && !st.woken.swap(true, Ordering::Relaxed) {
                let _ = c.shutdown(Shutdown::Read);
            }
            // An upgraded connection (a WebSocket) closes itself (1001), reading on for the
            // peer's answer.
            if let Some(going_away) = st.going_away.get() {
                going_away.set();
            }
        })
    };
    // A grace too long for an `Instant` (`Duration::MAX`) waits as long as connections last.
    let start = Instant::now();
    let idle_deadline = start.checked_add(idle_grace);
    let idle_over = || idle_deadline.is_some_and(|d| Instant::now() >= d);
    if idle_over() {
        close_idle();
    }
    let deadline = start.checked_add(grace.max(idle_grace));
    while state.active.load(Ordering::SeqCst) > 0 && deadline.is_none_or(|d| Instant::now() < d) {
        fibra::time::sleep(Duration::from_millis(5));
        if idle_over() {
            close_idle();
        }
    }
    // Force-close what is left, and give those fibers a moment to unwind on their own.
    state.each_conn(|c, _| {
        let _ = c.shutdown(Shutdown::Both);
    });
    let deadline = Instant::now() + Duration::from_secs(1);
    while state.active.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        fibra::time::sleep(Duration::from_millis(5));
    }
    for h in accept_loops {
        let _ = h.join();
    }
}

/// Decrements the connection count and unregisters the connection, also when the fiber is
/// unwound by cancellation.
struct ConnGuard {
    state: Arc<State>,
    id: u64,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.state
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        self.state.active.fetch_sub(1, Ordering::SeqCst);
        self.state.slot_freed.notify_one();
    }
}

/// What a connection's steps keep of the server: its entry (the idle flag) and the guard that
/// unregisters it.
struct ConnOwner {
    entry: ConnEntry,
    guard: ConnGuard,
    /// `Settings::http2`.
    h2: bool,
}

impl Owner for ConnOwner {
    fn ctl(&self) -> ConnCtl<'_> {
        // One look through the entry's handle (a virtual call) for both of its flags.
        let conn = state_of(&*self.entry);
        ConnCtl {
            idle: &conn.idle,
            shutting_down: &self.guard.state.shutting_down,
            h2: self.h2,
            going_away: Some(&conn.going_away),
        }
    }
}

fn accept_loop<A, H>(
    worker: usize,
    acceptor: A,
    settings: Arc<Settings>,
    handler: Arc<H>,
    state: Arc<State>,
) where
    A: Acceptor,
    H: Service + Send + Sync + ?Sized + 'static,
{
    let mut last_warning: Option<Instant> = None;
    while !state.shutting_down.load(Ordering::SeqCst) {
        if state.active.load(Ordering::SeqCst) >= settings.max_connections {
            // Leave new connections in the backlog until a slot frees up.
            state.slot_freed.wait_timeout(ACCEPT_POLL);
            continue;
        }
        let io = match acceptor.accept() {
            Ok(c) => c,
            Err(e) if is_benign(&e) => continue,
            Err(e) => {
                let resource = is_resource_error(&e);
                let quiet = last_warning.is_some_and(|t| t.elapsed() < Duration::from_secs(1));
                if settings.on_error.is_some() {
                    settings.report(ServerError::new(None, ServerErrorKind::Accept(e)));
                } else if !quiet {
                    last_warning = Some(Instant::now());
                    let on = acceptor.local_addr().map(|a| format!(" on {a}"));
                    log::warn!("accept{} failed: {e}", on.unwrap_or_default());
                }
                // Out of descriptors or memory: the pending connection stays in the backlog,
                // so the listener stays readable and an immediate retry would spin. Wait.
                fibra::time::sleep(if resource {
                    ACCEPT_BACKOFF
                } else {
                    Duration::from_millis(1)
                });
                continue;
            }
        };
        // Another worker may have taken the last slot since the check above: then hold this
        // connection (unserved) until a slot frees up, so the limit holds over all workers.
        while !take_slot(&state.active, settings.max_connections) {
            if state.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            state.slot_freed.wait_timeout(ACCEPT_POLL);
        }
        let entry = conn_entry(io.shutdown_handle());
        let id = state.next_id.fetch_add(1, Ordering::Relaxed);
        state
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, entry.clone());
        let guard = ConnGuard {
            state: state.clone(),
            id,
        };
        let owner = ConnOwner {
            entry,
            guard,
            h2: settings.http2,
        };
        let (settings, handler) = (settings.clone(), handler.clone());
        let spawned = fibra::fiber::Builder::new()
            .worker(worker)
            .spawn_steps(move || serve_steps(io, settings, handler, owner));
        if let Err(e) = spawned {
            log::warn!("cannot spawn a connection fiber: {e}");
            fibra::time::sleep(ACCEPT_BACKOFF);
        }
    }
}

/// Counts one more connection in `active` unless it is already at `max`.
fn take_slot(active: &AtomicUsize, max: usize) -> bool {
    active
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// Errors that need no report and no pause: the accept timeout (so the loop can look at the
/// shutdown flag) and a client that gave up before we accepted.
fn is_benign(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::Interrupted
    )
}
