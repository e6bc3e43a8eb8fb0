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

mod handle;
mod run;
mod state;

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

pub use handle::{ConnectionCount, ServerHandle};
use handle::{Runner, Stop};
use run::run_server;
use state::State;

use crate::acceptor::{Acceptor, TcpAcceptor};
use crate::access_log::AccessLogSink;
use crate::listen::TcpListeners;
use crate::service::Service;
use crate::settings::{ErrorHook, ServerError, Settings};
use crate::tls::TlsAcceptor;

/// Makes the acceptor of worker `i` of `n` (on the server's runtime).
pub(crate) type Listen<A> = Box<dyn FnMut(usize, usize) -> io::Result<A> + Send>;
/// The same for an acceptor served beside the main one, its type erased.
type AnyListen = Listen<Box<dyn run::AnyAcceptor>>;

/// Builder for an HTTP/1.1 server. See the crate docs for an example.
///
/// [`Server::bind`] serves TCP; [`Server::with_acceptor`] serves connections from any
/// [`Acceptor`] (e.g. a Unix-domain socket, [`crate::UnixAcceptor`]). Either way every
/// connection runs the same loop, with the same settings and limits, idle connections holding
/// no stack (when the transport can wait without one), and the same graceful shutdown.
pub struct Server<A: Acceptor = TcpAcceptor> {
    listen: io::Result<Listen<A>>,
    /// Acceptors served beside the main one (`also_*`), in the order they were added.
    more: Vec<io::Result<AnyListen>>,
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
        Server::with_listen(tcp_listen(addr, reuse_port))
    }
}

/// The maker of TCP acceptors on `addr` (its first address), one per worker: descriptors of
/// one shared socket, or sockets of their own with `SO_REUSEPORT`.
fn tcp_listen(addr: impl ToSocketAddrs, reuse_port: bool) -> io::Result<Listen<TcpAcceptor>> {
    let addr = addr.to_socket_addrs().and_then(|mut a| {
        a.next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))
    })?;
    let mut listeners = TcpListeners::new(addr, reuse_port);
    Ok(Box::new(move |_worker: usize, _workers: usize| {
        Ok(TcpAcceptor::from_listener(listeners.next()?))
    }))
}

impl<A: Acceptor> Server<TlsAcceptor<A>> {
    /// Closes connections whose TLS handshake agrees on `hook`'s ALPN protocol instead of
    /// serving them as HTTP, telling the hook (ACME's `tls-alpn-01`: see
    /// [`AlpnHook`](crate::tls::AlpnHook) and [`TlsAcceptor::alpn_hook`]).
    pub fn alpn_hook(self, hook: crate::tls::AlpnHook) -> Server<TlsAcceptor<A>> {
        let hook = Arc::new(hook);
        self.wrap_acceptor(move |a: TlsAcceptor<A>| a.alpn_hook(hook.clone()))
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
            more: Vec::new(),
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
            more: self.more,
            workers: self.workers,
            stack_size: self.stack_size,
            settings: self.settings,
        }
    }

    /// Also serves the connections of the acceptors `listen` makes (called once per worker,
    /// as for [`with_acceptor`](Server::with_acceptor)), beside the main acceptor: the same
    /// service, settings, connection limit and graceful shutdown, on the same runtime. Any
    /// acceptor type: plain TCP on another address, TLS, a Unix-domain socket.
    /// [`tls`](Self::tls) and [`proxy_protocol`](Self::proxy_protocol) wrap the main acceptor
    /// only; wrap an added one yourself. Its address is in [`ServerHandle::local_addrs`].
    pub fn also_acceptor<B: Acceptor>(
        mut self,
        mut listen: impl FnMut(usize) -> io::Result<B> + Send + 'static,
    ) -> Self {
        self.more.push(Ok(Box::new(move |worker, _| {
            listen(worker).map(|a| Box::new(a) as Box<dyn run::AnyAcceptor>)
        })));
        self
    }

    /// Also serves plain HTTP on `addr` (its workers share one listening socket, as
    /// [`Server::bind`]'s). See [`also_acceptor`](Self::also_acceptor).
    pub fn also_bind(mut self, addr: impl ToSocketAddrs) -> Self {
        self.more.push(tcp_listen(addr, false).map(|mut listen| {
            Box::new(move |worker, workers| {
                listen(worker, workers).map(|a| Box::new(a) as Box<dyn run::AnyAcceptor>)
            }) as AnyListen
        }));
        self
    }

    /// Also serves HTTPS on `addr` with `config` (see [`crate::tls`]). See
    /// [`also_acceptor`](Self::also_acceptor).
    pub fn also_tls(mut self, addr: impl ToSocketAddrs, config: Arc<rustls::ServerConfig>) -> Self {
        self.more.push(tcp_listen(addr, false).map(|mut listen| {
            Box::new(move |worker, workers| {
                let tls = TlsAcceptor::new(listen(worker, workers)?, config.clone());
                Ok(Box::new(tls) as Box<dyn run::AnyAcceptor>)
            }) as AnyListen
        }));
        self
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

    /// The settings as they stand: for a server of another transport beside this one
    /// (HTTP/3 over QUIC) that is to answer as this one does.
    pub fn current_settings(&self) -> &Settings {
        &self.settings
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
    /// [`AccessLog`](crate::access_log::AccessLog)). See [`Settings::access_log_sink`].
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
        /// See [`Settings::alt_svc`].
        alt_svc: Option<http::HeaderValue>,
        /// See [`Settings::access_log`].
        access_log: bool,
    }

    /// Starts serving `service` (any [`Service`]: a closure `|req: Request| …`, a router, the
    /// file server); returns once every acceptor is bound.
    ///
    /// Called from a plain thread, the server gets a background thread that owns a fibra
    /// runtime of its own ([`workers`](Self::workers) workers, each a thread). Called from a
    /// fiber, it runs on that fiber's runtime instead: its main fiber on the caller's worker,
    /// an accept loop on each of the first [`workers`](Self::workers) workers (all of them by
    /// default), and [`stack_size`](Self::stack_size) is the runtime's. A one-worker runtime
    /// made by [`fibra::Builder::run`] then serves from the calling thread alone.
    pub fn serve<S>(self, service: S) -> io::Result<ServerHandle>
    where
        S: Service + Send + Sync + 'static,
    {
        self.serve_shared(Arc::new(service))
    }

    /// [`serve`](Self::serve) for a service shared with something else that answers as
    /// this server does (an HTTP/3 endpoint beside it): the server holds the same `Arc`, so
    /// no call layer is added in front of the service.
    pub fn serve_shared<S>(self, service: Arc<S>) -> io::Result<ServerHandle>
    where
        S: Service + Send + Sync + 'static,
    {
        let listen = self.listen?;
        let more = self.more.into_iter().collect::<io::Result<Vec<_>>>()?;
        let on_caller = fibra::current_worker_count();
        let workers = match (self.workers, on_caller) {
            (Some(n), Some(have)) => n.clamp(1, have),
            (None, Some(have)) => have,
            (Some(n), None) => n,
            (None, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let state = Arc::new(State::new());
        let (cmd_tx, cmd_rx) = fibra::sync::mpsc::channel::<Stop>();
        let (ready_tx, ready_rx) = fibra::sync::oneshot::channel::<io::Result<Vec<SocketAddr>>>();
        let mut settings = self.settings;
        settings.listener = 0;
        if let Some(n) = service.max_body_bytes() {
            settings.max_body_bytes = settings.max_body_bytes.max(n);
        }
        let settings = Arc::new(settings);
        let st = state.clone();
        let main = move || {
            let acceptors = run::Acceptors { listen, more };
            run_server(acceptors, workers, settings, service, st, cmd_rx, ready_tx)
        };
        let runner = match on_caller {
            Some(_) => {
                let here = fibra::current_worker().unwrap_or(0);
                let fiber = fibra::fiber::Builder::new()
                    .name("fibra-http-server")
                    .worker(here)
                    .spawn(main)?;
                Runner::Fiber(fiber)
            }
            None => {
                let mut rt = fibra::Runtime::builder()
                    .workers(workers)
                    .thread_name("fibra-http");
                if let Some(s) = self.stack_size {
                    rt = rt.stack_size(s);
                }
                let rt = rt.build()?;
                let thread = std::thread::Builder::new()
                    .name("fibra-http-server".into())
                    .spawn(move || {
                        rt.block_on(main);
                        drop(rt);
                    })?;
                Runner::Thread(thread)
            }
        };
        let mut handle = ServerHandle {
            local_addrs: Vec::new(),
            state,
            cmd: cmd_tx,
            runner: Some(runner),
        };
        match ready_rx.recv() {
            Ok(Ok(local_addrs)) => {
                handle.local_addrs = local_addrs;
                Ok(handle)
            }
            Ok(Err(e)) => {
                handle.join();
                Err(e)
            }
            Err(_) => Err(io::Error::other("server thread died during startup")),
        }
    }

    /// [`serve`](Self::serve), then block until the server is shut down.
    pub fn run<S>(self, service: S) -> io::Result<()>
    where
        S: Service + Send + Sync + 'static,
    {
        self.serve(service)?.join();
        Ok(())
    }
}
