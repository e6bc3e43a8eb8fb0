//! The listening sockets of `serve` and `hello`: inherited (systemd socket activation, or the
//! previous binary of a SIGUSR2 upgrade, both through `LISTEN_FDS`/`LISTEN_PID`), else bound
//! here: one shared by every worker, or with `--reuse-port` one per worker (`SO_REUSEPORT`),
//! as `Server::bind` and `Server::bind_reuse_port` bind them. They are bound here rather than by `Server::bind` to keep a copy of each: the
//! descriptors an upgrade hands to the new binary.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::sync::Mutex;

use fibra_http::listen_fds::{take_listen_fds, tcp_listener};
use socket2::{Domain, Protocol, Socket, Type};

/// The descriptors taken from the environment at start (see [`take_inherited`]).
static INHERITED: Mutex<Vec<OwnedFd>> = Mutex::new(Vec::new());

/// Takes the listening sockets passed in `LISTEN_FDS` (clearing the variables). Called from
/// `main` before any thread starts, since it changes the environment.
pub fn take_inherited() -> io::Result<()> {
    let fds = take_listen_fds()?;
    *INHERITED.lock().unwrap_or_else(|e| e.into_inner()) = fds;
    Ok(())
}

/// The server's listening sockets: the inherited ones if there are any (then `addr` and
/// `port` are not used), else a new one on `addr:port` (a second server on the same port
/// then fails with "address in use"), or with `reuse_port` one per worker. True if
/// inherited.
pub fn listeners(
    addr: &str,
    port: u16,
    workers: usize,
    reuse_port: bool,
) -> io::Result<(Vec<TcpListener>, bool)> {
    let inherited = std::mem::take(&mut *INHERITED.lock().unwrap_or_else(|e| e.into_inner()));
    if !inherited.is_empty() {
        let listeners = inherited
            .into_iter()
            .map(tcp_listener)
            .collect::<io::Result<Vec<_>>>()?;
        return Ok((listeners, true));
    }
    let mut at = (addr, port).to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: no address"))
    })?;
    let count = if reuse_port { workers.max(1) } else { 1 };
    let mut bound = Vec::with_capacity(count);
    for _ in 0..count {
        let l = bind(at, reuse_port)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {at}: {e}")))?;
        // Port 0: the first listener picks the port, the others bind it too.
        at = l.local_addr()?;
        bound.push(l);
    }
    Ok((bound, false))
}

/// A listening socket as fibra's `TcpListener::bind_with` makes it (`SO_REUSEADDR`, backlog
/// 1024), with `SO_REUSEPORT` if `reuse_port`.
fn bind(addr: SocketAddr, reuse_port: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}
