//! The listening sockets of `fibra serve --config`: one per address of the site file (TCP,
//! shared by the workers or one per worker with `reuse_port`; or a Unix socket), inherited by
//! name from an upgrading parent when it hands them over, each served through a
//! [`Closable`] acceptor so that a reload that drops the address stops accepting on it.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::acceptor::Acceptor;
use fibra_site::config::Listen;

/// The `LISTEN_FDNAMES` name of an address (names may not hold `:`): `site-` and its hex.
pub fn fd_name(listen: &Listen) -> String {
    let text = listen.to_string();
    let mut name = String::from("site-");
    for b in text.bytes() {
        name.push_str(&format!("{b:02x}"));
    }
    name
}

/// A bound address.
pub struct Bound {
    /// The address as the site file writes it.
    pub listen: Listen,
    /// TCP: one socket shared by the workers, or one per worker.
    pub tcp: Vec<TcpListener>,
    /// A Unix socket.
    pub unix: Option<UnixListener>,
    /// Set to stop accepting (a reload dropped the address).
    pub closed: Arc<AtomicBool>,
}

impl Bound {
    /// The bound TCP address, if TCP.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.tcp.first().and_then(|l| l.local_addr().ok())
    }
}

/// Binds `listen` (or takes the socket an upgrading parent handed over under its name).
pub fn bind(listen: &Listen, workers: usize, reuse_port: bool) -> io::Result<Bound> {
    let closed = Arc::new(AtomicBool::new(false));
    match listen {
        Listen::Tcp(addr) => {
            let inherited = crate::listeners::take_named_listeners(&fd_name(listen))?;
            if !inherited.is_empty() {
                return Ok(Bound {
                    listen: listen.clone(),
                    tcp: inherited,
                    unix: None,
                    closed,
                });
            }
            let mut at = addr.to_socket_addrs()?.next().ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: no address"))
            })?;
            let count = if reuse_port { workers.max(1) } else { 1 };
            let mut tcp = Vec::with_capacity(count);
            for _ in 0..count {
                let l = crate::listeners::bind(at, reuse_port).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}"))
                })?;
                at = l.local_addr()?;
                tcp.push(l);
            }
            Ok(Bound {
                listen: listen.clone(),
                tcp,
                unix: None,
                closed,
            })
        }
        Listen::Unix(path) => {
            // Handed over by an upgrading parent: the same socket (its file stays).
            if let Some(fd) = crate::listeners::take_named_fds(&fd_name(listen))
                .into_iter()
                .next()
            {
                return Ok(Bound {
                    listen: listen.clone(),
                    tcp: Vec::new(),
                    unix: Some(UnixListener::from(fd)),
                    closed,
                });
            }
            // A socket file left by a process that is gone is replaced; one in use is not.
            if std::os::unix::net::UnixStream::connect(path).is_err() {
                let _ = std::fs::remove_file(path);
            }
            let l = UnixListener::bind(path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot listen on {}: {e}", path.display()),
                )
            })?;
            Ok(Bound {
                listen: listen.clone(),
                tcp: Vec::new(),
                unix: Some(l),
                closed,
            })
        }
    }
}

/// An acceptor that stops accepting, and drops its socket, once `closed` is set.
pub struct Closable<A> {
    inner: Mutex<Option<A>>,
    closed: Arc<AtomicBool>,
}

impl<A: Acceptor> Closable<A> {
    /// `inner`, until `closed`.
    pub fn new(inner: A, closed: Arc<AtomicBool>) -> Closable<A> {
        Closable {
            inner: Mutex::new(Some(inner)),
            closed,
        }
    }
}

/// How long a closed acceptor's loop sleeps between looks at the shutdown flag.
const CLOSED_POLL: Duration = Duration::from_millis(200);

impl<A: Acceptor> Acceptor for Closable<A> {
    type Io = A::Io;

    fn accept(&self) -> io::Result<A::Io> {
        if self.closed.load(Ordering::Acquire) {
            // Dropped here, on the accept fiber: this worker's descriptor closes.
            self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
            fibra::time::sleep(CLOSED_POLL);
            return Err(io::ErrorKind::TimedOut.into());
        }
        // Only this worker's accept fiber uses the lock: never contended.
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(a) => a.accept(),
            None => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(a) => a.set_accept_timeout(timeout),
            None => Ok(()),
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|a| a.local_addr())
    }
}
