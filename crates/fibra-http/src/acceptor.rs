//! Where a server's connections come from: the [`Acceptor`] trait, and its TCP and
//! Unix-domain implementations.
//!
//! A server asks for one acceptor per worker (see [`crate::Server::with_acceptor`]) and runs
//! one accept fiber on each; a connection's fiber stays on the worker that accepted it. TCP
//! workers share one listening socket, each through a descriptor of its own (or bind one
//! each with `SO_REUSEPORT` when asked: see [`crate::listen`]); a Unix-domain socket's
//! workers share one listener ([`UnixAcceptor`] clones share it).

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fibra::net::{TcpListener, UnixListener};

use crate::transport::{Tcp, Transport, Unix};

/// A source of connections for [`crate::Server`].
///
/// The server calls [`accept`](Acceptor::accept) in a loop on a fiber of its runtime, and
/// between calls looks at its shutdown flag and the connection limit: an acceptor must not
/// wait forever, but give up after the timeout the server sets with
/// [`set_accept_timeout`](Acceptor::set_accept_timeout) (with `TimedOut` or `WouldBlock`).
pub trait Acceptor: Send + 'static {
    /// The transport of an accepted connection. Its
    /// [`when_readable`](Transport::when_readable) and
    /// [`shutdown_handle`](Transport::shutdown_handle) should be `Some`, as [`Tcp`]'s and
    /// [`Unix`]'s are, for idle connections that hold no stack and that graceful shutdown can
    /// close.
    type Io: Transport + Send;

    /// Waits for the next connection. Errors other than the timeout (`TimedOut`,
    /// `WouldBlock`), `ConnectionAborted` and `Interrupted` are reported through
    /// [`crate::Settings::on_error`], then the server pauses a little and calls again.
    fn accept(&self) -> io::Result<Self::Io>;

    /// Bounds every following [`accept`](Acceptor::accept) (the server sets a fraction of a
    /// second, to look at its shutdown flag meanwhile).
    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;

    /// The address it listens on, if it has an IP one (reported by
    /// [`crate::ServerHandle::local_addr`]). Default: `None`.
    fn local_addr(&self) -> Option<SocketAddr> {
        None
    }
}

/// A TCP listener with `TCP_NODELAY` on accepted connections: what [`crate::Server::bind`]
/// runs, one per worker (descriptors of one shared socket).
#[derive(Debug)]
pub struct TcpAcceptor {
    listener: TcpListener,
}

impl TcpAcceptor {
    /// Binds `addr` with `SO_REUSEPORT` if `reuse_port` (so several sockets, in this process
    /// or another of the same user, can bind the same address). See
    /// [`crate::listen::listen_tcp`].
    pub fn bind(addr: SocketAddr, reuse_port: bool) -> io::Result<TcpAcceptor> {
        Ok(TcpAcceptor {
            listener: crate::listen::listen_tcp(addr, reuse_port)?,
        })
    }

    /// Takes over a bound fibra listener.
    pub fn from_listener(listener: TcpListener) -> TcpAcceptor {
        TcpAcceptor { listener }
    }

    /// Takes over a bound `std` listener (switched to non-blocking mode), with `TCP_NODELAY`
    /// on accepted connections as [`TcpAcceptor::bind`] sets it: e.g. an inherited one
    /// ([`crate::listen_fds`]).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpAcceptor> {
        let mut listener = TcpListener::from_std(listener)?;
        listener.set_nodelay_on_accept(true);
        Ok(TcpAcceptor { listener })
    }
}

impl Acceptor for TcpAcceptor {
    type Io = Tcp;

    fn accept(&self) -> io::Result<Tcp> {
        let (stream, peer) = self.listener.accept()?;
        Ok(Tcp::with_peer(stream, Some(peer)))
    }

    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.listener.set_accept_timeout(timeout)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }
}

/// A Unix-domain listening socket. Clones share the listener, so one bound socket can feed
/// every worker:
///
/// ```no_run
/// use fibra_http::{Request, Response, Server, UnixAcceptor};
///
/// let unix = UnixAcceptor::bind("/run/app.sock")?;
/// let server = Server::with_acceptor(move |_worker| Ok(unix.clone()))
///     .serve(|_req: Request| Response::new("hello".into()))?;
/// # server.shutdown(std::time::Duration::from_secs(1));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct UnixAcceptor {
    listener: Arc<UnixListener>,
}

impl UnixAcceptor {
    /// Binds a socket at `path` (which must not exist yet; the file stays after the server
    /// stops, for the caller to remove).
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixAcceptor> {
        let std = std::os::unix::net::UnixListener::bind(path)?;
        Ok(UnixAcceptor::from_listener(UnixListener::from_std(std)?))
    }

    /// Takes over a bound fibra listener.
    pub fn from_listener(listener: UnixListener) -> UnixAcceptor {
        UnixAcceptor {
            listener: Arc::new(listener),
        }
    }
}

impl Acceptor for UnixAcceptor {
    type Io = Unix;

    fn accept(&self) -> io::Result<Unix> {
        let (stream, _peer) = self.listener.accept()?;
        Ok(Unix::with_peer(stream, None))
    }

    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.listener.set_accept_timeout(timeout)
    }
}
