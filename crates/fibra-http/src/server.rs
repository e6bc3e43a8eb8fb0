//! `Server`: the builder, the per-worker accept loops, the connection limit and graceful
//! shutdown — for connections from any [`Acceptor`].
//!
//! Each worker gets its own acceptor and one accept fiber pinned to it; a connection's fiber
//! (a fiber made of steps running the connection loop, see [`crate::conn`]) is pinned to the
//! worker that accepted it. For TCP ([`Server::bind`]) the workers share one listening socket,
//! each through its own descriptor registered with its own poller (see [`crate::listen`]): a
//! second server on the same address then fails with "address in use". With
//! [`Server::bind_reuse_port`] each worker binds its own socket (`SO_REUSEPORT`) and the
//! kernel balances new connections over them by 4-tuple hash.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::acceptor::{Acceptor, TcpAcceptor};
use crate::access_log::AccessLogSink;
use crate::conn::{serve_steps, ConnCtl, Owner};
use crate::listen::TcpListeners;
use crate::service::Service;
use crate::settings::{ErrorHook, ServerError, ServerErrorKind, Settings};
use crate::tls::TlsAcceptor;
use crate::transport::{is_resource_error, ConnState, ShutdownHandle, Transport};

/// How often a parked accept loop looks at the shutdown flag and the connection limit.
const ACCEPT_POLL: Duration = Duration::from_millis(200);
/// Pause after `EMFILE`/`ENFILE`/`ENOBUFS`/`ENOMEM` in accept before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A connection known to the server: the handle that shuts it down (so shutdown can wake it),
/// with the server's bookkeeping of it ([`ConnState`]: whether it is idle between requests).
/// The bookkeeping lives in the handle's own allocation when the handle has room for it
/// ([`Tcp`](crate::Tcp)'s and [`Unix`](crate::Unix)'s have), else in a [`Tracked`].
type ConnEntry = Arc<dyn ShutdownHandle>;

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
fn conn_entry(handle: Option<Arc<dyn ShutdownHandle>>) -> ConnEntry {
    match handle {
        Some(h) if h.conn_state().is_some() => h,
        handle => Arc::new(Tracked {
            handle,
            state: ConnState::default(),
        }),
    }
}

/// The bookkeeping of a connection's entry (`conn_entry` made sure it has some).
fn state_of(entry: &dyn ShutdownHandle) -> &ConnState {
    entry
        .conn_state()
        .expect("a connection entry keeps a ConnState")
}

/// State shared by the accept loops, the connections and the handle.
#[derive(Debug)]
struct State {
    shutting_down: AtomicBool,
    active: AtomicUsize,
    next_id: AtomicU64,
    conns: Mutex<HashMap<u64, ConnEntry>>,
    /// Woken when a connection ends (a slot under `max_connections` frees up).
    slot_freed: fibra::sync::Notify,
    /// Set when the server thread has finished.
    done: Mutex<bool>,
    done_cv: Condvar,
}

impl State {
    fn each_conn(&self, f: impl Fn(&dyn ShutdownHandle, &ConnState)) {
        let conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        for c in conns.values() {
            f(&**c, state_of(&**c));
        }
    }
}

/// Makes the acceptor of worker `i` of `n` (on the server's runtime).
pub(crate) type Listen<A> = Box<dyn FnMut(usize, usize) -> io::Result<A> + Send>;

/// Builder for an HTTP/1.1 server. See the crate docs for an example.
///
/// [`Server::bind`] serves TCP; [`Server::with_acceptor`] serves connections from any
/// [`Acceptor`] (e.g. a Unix-domain socket, [`crate::UnixAcceptor`]). Either way every
/// connection runs the same loop, with the same settings and limits, idle connections holding
/// no stack (when the transport can wait without one), and the same graceful shutdown.
pub struct Server<A: Acceptor = TcpAcceptor> {
    listen: io::Result<Listen<A>>,
    workers: Option<usize>,
    stack_size: Option<usize>,
    settings: Settings,
}

impl<A: Acceptor> fmt::Debug for Server<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("workers", &self.workers)
            .field("stack_size", &self.stack_size)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.settings.$name = value;
            self
        }
    )*};
}

impl Server {
    /// A server that will listen on `addr` (the first address it resolves to). Use port 0 for
    /// an ephemeral port and read it back with [`ServerHandle::local_addr`].
    ///
    /// The workers share one listening socket ([`crate::listen::listen_tcp`]), made when the
    /// server starts, with `TCP_NODELAY` on its connections: if another socket already
    /// listens on the address, [`serve`](Self::serve) fails with `AddrInUse` naming it.
    pub fn bind(addr: impl ToSocketAddrs) -> Server {
        Server::bind_tcp(addr, false)
    }

    /// [`bind`](Self::bind), but each worker binds a socket of its own with `SO_REUSEPORT`,
    /// and the kernel spreads new connections over them by their addresses. Any process of
    /// the same user may then bind the address too and take a share of the connections (to
    /// start a new server version next to the old one, say); a server started by mistake on
    /// the same port does as well, silently.
    pub fn bind_reuse_port(addr: impl ToSocketAddrs) -> Server {
        Server::bind_tcp(addr, true)
    }

    fn bind_tcp(addr: impl ToSocketAddrs, reuse_port: bool) -> Server {
        let addr = addr.to_socket_addrs().and_then(|mut a| {
            a.next()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))
        });
        Server::with_listen(addr.map(|addr| {
            let mut listeners = TcpListeners::new(addr, reuse_port);
            Box::new(move |_worker: usize, _workers: usize| {
                Ok(TcpAcceptor::from_listener(listeners.next()?))
            }) as Listen<TcpAcceptor>
        }))
    }
}

impl<A: Acceptor> Server<A> {
    /// A server that takes its connections from the acceptors `listen` makes: it is called
    /// once per worker, with the worker's index, on the server's runtime when
    /// [`serve`](Self::serve) starts. Return a new acceptor per worker, or clones of one
    /// shared acceptor (as [`crate::UnixAcceptor`] allows). An error stops `serve`.
    pub fn with_acceptor(
        mut listen: impl FnMut(usize) -> io::Result<A> + Send + 'static,
    ) -> Server<A> {
        Server::with_listen(Ok(Box::new(move |worker, _| listen(worker))))
    }

    pub(crate) fn with_listen(listen: io::Result<Listen<A>>) -> Server<A> {
        Server {
            listen,
            workers: None,
            stack_size: None,
            settings: Settings::default(),
        }
    }

    /// Serves HTTPS: every worker's acceptor is wrapped in a [`TlsAcceptor`] with `config`
    /// (e.g. from [`crate::tls::server_config_from_pem`]). See [`crate::tls`].
    pub fn tls(self, config: Arc<rustls::ServerConfig>) -> Server<TlsAcceptor<A>> {
        self.wrap_tls(move |inner| TlsAcceptor::new(inner, config.clone()))
    }

    /// Serves HTTPS with the configuration `choose` picks for each ClientHello (e.g.
    /// [`crate::tls::choose_config_with_resolver`], which prefers AES-128-GCM as Go does):
    /// every worker's acceptor is wrapped in [`TlsAcceptor::choosing`].
    pub fn tls_choosing(self, choose: Arc<crate::tls::ChooseConfig>) -> Server<TlsAcceptor<A>> {
        self.wrap_tls(move |inner| TlsAcceptor::choosing(inner, choose.clone()))
    }

    /// Wraps every worker's acceptor with `wrap`, keeping the other settings.
    fn wrap_tls(
        self,
        wrap: impl Fn(A) -> TlsAcceptor<A> + Send + 'static,
    ) -> Server<TlsAcceptor<A>> {
        self.wrap_acceptor(wrap)
    }

    /// Wraps every worker's acceptor with `wrap` (a transport over the acceptor's, such as
    /// TLS or the PROXY protocol), keeping the other settings.
    pub(crate) fn wrap_acceptor<B: Acceptor>(
        self,
        wrap: impl Fn(A) -> B + Send + 'static,
    ) -> Server<B> {
        let listen = self.listen.map(|mut listen| {
            Box::new(move |worker, workers| Ok(wrap(listen(worker, workers)?))) as Listen<B>
        });
        Server {
            listen,
            workers: self.workers,
            stack_size: self.stack_size,
            settings: self.settings,
        }
    }

    /// Number of worker threads (default: one per core).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n.max(1));
        self
    }

    /// Stack size of each connection's fiber (default: fibra's default).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Replaces all settings at once.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Calls `f` for every handler panic, rejected request and failed `accept`, instead of
    /// logging them. See [`Settings::on_error`] and [`ServerError`].
    pub fn on_error(mut self, f: impl Fn(&ServerError) + Send + Sync + 'static) -> Self {
        self.settings.on_error = Some(ErrorHook::new(f));
        self
    }

    /// Sends one entry per answered request to `sink` (e.g. a
    /// [`crate::files::AccessLog`]). See [`Settings::access_log_sink`].
    pub fn access_log_sink(mut self, sink: impl AccessLogSink) -> Self {
        self.settings.access_log_sink = Some(Arc::new(sink));
        self
    }

    setters! {
        /// See [`Settings::header_timeout`].
        header_timeout: Duration,
        /// See [`Settings::body_read_timeout`].
        body_read_timeout: Duration,
        /// See [`Settings::idle_timeout`].
        idle_timeout: Duration,
        /// See [`Settings::write_timeout`].
        write_timeout: Duration,
        /// See [`Settings::max_head_bytes`].
        max_head_bytes: usize,
        /// See [`Settings::max_headers`].
        max_headers: usize,
        /// See [`Settings::max_body_bytes`].
        max_body_bytes: u64,
        /// See [`Settings::max_connections`].
        max_connections: usize,
        /// See [`Settings::keep_alive`].
        keep_alive: bool,
        /// See [`Settings::server_header`].
        server_header: Option<String>,
        /// See [`Settings::access_log`].
        access_log: bool,
    }

    /// Starts serving on a background thread that owns a fibra runtime; returns once the
    /// listeners are bound.
    pub fn serve<H>(self, handler: H) -> io::Result<ServerHandle>
    where
        H: Service + Send + Sync + 'static,
    {
        let listen = self.listen?;
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let mut rt = fibra::Runtime::builder()
            .workers(workers)
            .thread_name("fibra-http");
        if let Some(s) = self.stack_size {
            rt = rt.stack_size(s);
        }
        let rt = rt.build()?;
        let state = Arc::new(State {
            shutting_down: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
            slot_freed: fibra::sync::Notify::new(),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
        });
        let (cmd_tx, cmd_rx) = fibra::sync::mpsc::channel::<Stop>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<SocketAddr>>();
        let settings = Arc::new(self.settings);
        let handler = Arc::new(handler);
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name("fibra-http-server".into())
            .spawn(move || {
                rt.block_on(move || {
                    run_server(
                        listen,
                        workers,
                        settings,
                        handler,
                        st.clone(),
                        cmd_rx,
                        ready_tx,
                    )
                });
                drop(rt);
            })?;
        let local_addr = match ready_rx.recv() {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => return Err(io::Error::other("server thread died during startup")),
        };
        Ok(ServerHandle {
            local_addr,
            state,
            cmd: cmd_tx,
            thread: Some(thread),
        })
    }

    /// [`serve`](Self::serve), then block until the server is shut down.
    pub fn run<H>(self, handler: H) -> io::Result<()>
    where
        H: Service + Send + Sync + 'static,
    {
        self.serve(handler)?.join();
        Ok(())
    }
}

/// A running server. Dropping the handle leaves the server running (like a detached thread).
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    state: Arc<State>,
    cmd: fibra::sync::mpsc::Sender<Stop>,
    thread: Option<std::thread::JoinHandle<()>>,
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
struct Stop {
    idle_grace: Duration,
    grace: Duration,
}

impl ServerHandle {
    /// The address the server listens on (with the real port when bound to port 0); the
    /// unspecified address `0.0.0.0:0` for an acceptor without an IP address (a Unix-domain
    /// socket).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
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

    fn stop(&self, stop: Stop) {
        let _ = self.cmd.send(stop);
        let mut done = self.state.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = self
                .state
                .done_cv
                .wait(done)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks until the server has stopped (after a [`shutdown`](Self::shutdown) from
    /// elsewhere).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The root fiber: bind, start the accept loops, wait for the shutdown command, shut down.
fn run_server<A, H>(
    mut listen: Listen<A>,
    workers: usize,
    settings: Arc<Settings>,
    handler: Arc<H>,
    state: Arc<State>,
    cmd_rx: fibra::sync::mpsc::Receiver<Stop>,
    ready_tx: std::sync::mpsc::Sender<io::Result<SocketAddr>>,
) where
    A: Acceptor,
    H: Service + Send + Sync + 'static,
{
    struct DoneGuard(Arc<State>);
    impl Drop for DoneGuard {
        fn drop(&mut self) {
            *self.0.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.0.done_cv.notify_all();
        }
    }
    let _done = DoneGuard(state.clone());
    let mut acceptors = Vec::with_capacity(workers);
    for i in 0..workers {
        match listen(i, workers).and_then(|a| a.set_accept_timeout(Some(ACCEPT_POLL)).map(|()| a)) {
            Ok(a) => acceptors.push(a),
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        }
    }
    // What made the acceptors may hold one too (clones of a shared one): drop it, so the
    // accept loops are the last holders and stopping them closes the listeners.
    drop(listen);
    // An acceptor without an IP address (a Unix-domain socket) reports the unspecified one.
    let bound = acceptors
        .first()
        .and_then(|a| a.local_addr())
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    let mut accept_loops = Vec::with_capacity(workers);
    for (i, acceptor) in acceptors.into_iter().enumerate() {
        let (settings, handler, st) = (settings.clone(), handler.clone(), state.clone());
        let h = fibra::fiber::Builder::new()
            .name(format!("accept-{i}"))
            .worker(i)
            .spawn(move || accept_loop(i, acceptor, settings, handler, st));
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
    while state.active.load(Ordering::SeqCst) > 0 && deadline.map_or(true, |d| Instant::now() < d) {
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
        ConnCtl {
            idle: &state_of(&*self.entry).idle,
            shutting_down: &self.guard.state.shutting_down,
            h2: self.h2,
            going_away: Some(&state_of(&*self.entry).going_away),
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
    H: Service + Send + Sync + 'static,
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
