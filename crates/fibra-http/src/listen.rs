//! Making a TCP server's listening sockets: [`listen_tcp`] creates one, and `TcpListeners`
//! hands a listener to each worker — descriptors of one shared socket, or, with
//! `SO_REUSEPORT` asked for explicitly, a socket per worker.
//!
//! One shared socket is the default because a `SO_REUSEPORT` group is open to any process of
//! the same user: a second server started on the port would silently join it and take half
//! the connections. With one socket bound without `SO_REUSEPORT`, the second server fails
//! with "address in use", as nginx and Go do. Each worker gets its own descriptor (`dup`) of
//! the socket, registered with its own poller: every worker is woken when a connection
//! arrives and the first to accept takes it.

use std::io;
use std::net::SocketAddr;

use fibra::net::{ListenOptions, TcpListener};

/// Creates a TCP listening socket on `addr` (`TCP_NODELAY` on the connections it accepts),
/// with `SO_REUSEPORT` if `reuse_port`. An error names the address, as in "cannot listen on
/// 127.0.0.1:8080: Address already in use", and keeps the kind of the system's error
/// (`AddrInUse` there).
pub fn listen_tcp(addr: SocketAddr, reuse_port: bool) -> io::Result<TcpListener> {
    let opts = ListenOptions {
        reuse_port,
        nodelay: true,
        ..ListenOptions::default()
    };
    TcpListener::bind_with(addr, &opts)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
}

/// The listeners of a [`crate::Server::bind`] server, made one per worker when it starts.
#[derive(Debug)]
pub(crate) struct TcpListeners {
    addr: SocketAddr,
    reuse_port: bool,
    /// The shared socket, once made (not with `reuse_port`).
    shared: Option<TcpListener>,
}

impl TcpListeners {
    /// Listeners on `addr`: one shared socket, or one socket per worker if `reuse_port`.
    pub(crate) fn new(addr: SocketAddr, reuse_port: bool) -> TcpListeners {
        TcpListeners {
            addr,
            reuse_port,
            shared: None,
        }
    }

    /// The listener of the next worker. With `reuse_port`, a new socket: the first one picks
    /// the port when the address asks for port 0, and the rest bind that port.
    pub(crate) fn next(&mut self) -> io::Result<TcpListener> {
        if self.reuse_port {
            let listener = listen_tcp(self.addr, true)?;
            self.addr = listener.local_addr()?;
            return Ok(listener);
        }
        if self.shared.is_none() {
            self.shared = Some(listen_tcp(self.addr, false)?);
        }
        let shared = self.shared.as_ref().expect("made above");
        shared
            .try_clone()
            .map_err(|e| io::Error::new(e.kind(), format!("listener on {}: {e}", self.addr)))
    }
}
