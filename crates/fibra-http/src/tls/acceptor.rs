//! [`TlsAcceptor`]: TLS over the connections of another acceptor.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection};

use super::{AlpnHook, ChooseConfig, Tls};
use crate::acceptor::{Acceptor, TcpAcceptor};

/// Accepts connections from `A` (TCP by default) and serves them over TLS with one
/// [`ServerConfig`] (e.g. from [`crate::tls::server_config_from_pem`]).
///
/// `accept` only wraps the connection: the handshake runs in the connection's fiber, on its
/// first reads ([`Tls`]), so a slow or silent client never holds up the accept loop, and
/// the handshake counts against the header timeout.
///
/// ```no_run
/// use fibra_http::tls::{server_config_from_pem, TlsAcceptor};
/// use fibra_http::{Request, Response, Server, TcpAcceptor};
///
/// let config = server_config_from_pem("cert.pem", "key.pem")?;
/// let server = Server::with_acceptor(move |_worker| {
///     let tcp = TcpAcceptor::bind("127.0.0.1:8443".parse().unwrap(), true)?;
///     Ok(TlsAcceptor::new(tcp, config.clone()))
/// })
/// .serve(|_req: Request| Response::new("hello over TLS".into()))?;
/// # server.shutdown(std::time::Duration::from_secs(1));
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`crate::Server::tls`] does the same for a [`crate::Server::bind`] server.
#[derive(Clone)]
pub struct TlsAcceptor<A = TcpAcceptor> {
    inner: A,
    config: Config,
    hook: Option<Arc<AlpnHook>>,
}

/// One configuration for every connection, or one chosen by each ClientHello.
#[derive(Clone)]
enum Config {
    Fixed(Arc<ServerConfig>),
    Choose(Arc<ChooseConfig>),
}

impl<A: std::fmt::Debug> std::fmt::Debug for TlsAcceptor<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("inner", &self.inner)
            .field(
                "config",
                &match &self.config {
                    Config::Fixed(_) => "fixed",
                    Config::Choose(_) => "chosen by the ClientHello",
                },
            )
            .finish()
    }
}

impl<A: Acceptor> TlsAcceptor<A> {
    /// Serves the connections of `inner` over TLS with `config`, which you build yourself
    /// (protocol versions, ALPN, certificates, client authentication…).
    pub fn new(inner: A, config: Arc<ServerConfig>) -> TlsAcceptor<A> {
        TlsAcceptor {
            inner,
            config: Config::Fixed(config),
            hook: None,
        }
    }

    /// Serves the connections of `inner` over TLS with the configuration `choose` picks for
    /// each ClientHello (see [`Tls::choosing`] and
    /// [`crate::tls::choose_config_with_resolver`]).
    pub fn choosing(inner: A, choose: Arc<ChooseConfig>) -> TlsAcceptor<A> {
        TlsAcceptor {
            inner,
            config: Config::Choose(choose),
            hook: None,
        }
    }

    /// The TLS configuration, unless it is chosen per ClientHello.
    pub fn config(&self) -> Option<&Arc<ServerConfig>> {
        match &self.config {
            Config::Fixed(c) => Some(c),
            Config::Choose(_) => None,
        }
    }

    /// The acceptor underneath.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// Connections whose handshake agrees on `hook`'s protocol are closed after it, not
    /// served as HTTP (ACME's `tls-alpn-01`: see [`AlpnHook`]). A fixed configuration gets
    /// the protocol added to the ALPN protocols it offers (last); configurations chosen per
    /// ClientHello must offer it themselves.
    pub fn alpn_hook(mut self, hook: Arc<AlpnHook>) -> TlsAcceptor<A> {
        if let Config::Fixed(config) = &mut self.config {
            if !config
                .alpn_protocols
                .iter()
                .any(|p| p[..] == *hook.protocol())
            {
                Arc::make_mut(config)
                    .alpn_protocols
                    .push(hook.protocol().to_vec());
            }
        }
        self.hook = Some(hook);
        self
    }
}

impl<A: Acceptor> Acceptor for TlsAcceptor<A> {
    type Io = Tls<A::Io>;

    fn accept(&self) -> io::Result<Tls<A::Io>> {
        let io = self.inner.accept()?;
        match &self.config {
            Config::Fixed(config) => {
                // Allocates the session; no I/O until the connection's fiber reads.
                let conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
                Ok(Tls::new(io, conn).with_hook(self.hook.clone()))
            }
            Config::Choose(choose) => {
                Ok(Tls::choosing(io, choose.clone()).with_hook(self.hook.clone()))
            }
        }
    }

    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.set_accept_timeout(timeout)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.inner.local_addr()
    }
}
