//! The listening sockets of `serve` and `hello`: inherited (systemd socket activation, or the
//! previous binary of a SIGUSR2 upgrade, both through `LISTEN_FDS`/`LISTEN_PID`), else bound
//! here: one shared by every worker, or with `--reuse-port` one per worker (`SO_REUSEPORT`),
//! as `Server::bind` and `Server::bind_reuse_port` bind them. They are bound here rather than by `Server::bind` to keep a copy of each: the
//! descriptors an upgrade hands to the new binary.
//!
//! The sockets are told apart by their names in `LISTEN_FDNAMES` (systemd's
//! `FileDescriptorName=`): one named [`REDIRECT`] is `--redirect-http`'s, every other the
//! main server's. An upgrade names the sockets it hands over so.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::sync::Mutex;

use fibra_http::listen_fds::{take_listen_fds, tcp_listener};
use socket2::{Domain, Protocol, Socket, Type};

/// The `LISTEN_FDNAMES` name of the `--redirect-http` listener.
pub const REDIRECT: &str = "redirect";
/// The `LISTEN_FDNAMES` name an upgrade gives the main server's listeners.
pub const MAIN: &str = "main";

/// The `LISTEN_FDNAMES` name of a UDP socket HTTP/3 hands over in an upgrade (after a
/// prefix; see `http3_handover`).
pub const QUIC_SOCKET: &str = "quic";
/// The name of the link end the new process reads (then `.NEW.OLD`).
pub const QUIC_LINK_IN: &str = "quic-in";
/// The name of the link end the new process writes.
pub const QUIC_LINK_OUT: &str = "quic-out";

/// Whether `name` is one of HTTP/3's (so not a TCP listener's).
pub fn is_quic_name(name: &str) -> bool {
    name.ends_with(QUIC_SOCKET)
        || name.ends_with(QUIC_LINK_OUT)
        || name.contains(&format!("{QUIC_LINK_IN}."))
}

/// The descriptors taken from the environment at start (see [`take_inherited`]), each with
/// its name in `LISTEN_FDNAMES` (empty if none).
static INHERITED: Mutex<Vec<(OwnedFd, String)>> = Mutex::new(Vec::new());

/// Takes the listening sockets passed in `LISTEN_FDS` (clearing the variables). Called from
/// `main` before any thread starts, since it changes the environment.
pub fn take_inherited() -> io::Result<()> {
    let names = std::env::var("LISTEN_FDNAMES").unwrap_or_default();
    let fds = take_listen_fds()?;
    let mut names = names.split(':').map(str::to_owned);
    let named = fds
        .into_iter()
        .map(|fd| (fd, names.next().unwrap_or_default()))
        .collect();
    *INHERITED.lock().unwrap_or_else(|e| e.into_inner()) = named;
    Ok(())
}

/// The inherited descriptors whose names `wanted` picks, with their names, in the order
/// they were handed over (taken: asked again, none).
pub fn take_fds_where(wanted: impl Fn(&str) -> bool) -> Vec<(OwnedFd, String)> {
    let mut inherited = INHERITED.lock().unwrap_or_else(|e| e.into_inner());
    let (taken, kept) = std::mem::take(&mut *inherited)
        .into_iter()
        .partition::<Vec<_>, _>(|(_, n)| wanted(n));
    *inherited = kept;
    taken
}

/// The inherited listening sockets named `name` (a site file's address, see
/// `site_listen::fd_name`), as descriptors; taken: asked again, none.
pub fn take_named_fds(name: &str) -> Vec<OwnedFd> {
    take_fds_where(|n| n == name)
        .into_iter()
        .map(|(fd, _)| fd)
        .collect()
}

/// [`take_named_fds`], as TCP listeners (an error if one is not).
pub fn take_named_listeners(name: &str) -> io::Result<Vec<TcpListener>> {
    take_named_fds(name).into_iter().map(tcp_listener).collect()
}

/// The `--redirect-http` listener: the inherited one named [`REDIRECT`], else a new one on
/// `addr:port`.
pub fn redirect_listener(addr: &str, port: u16) -> io::Result<TcpListener> {
    if let Some(l) = take_named_listeners(REDIRECT)?.into_iter().next() {
        return Ok(l);
    }
    let at = (addr, port).to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: no address"))
    })?;
    bind(at, false).map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {at}: {e}")))
}

/// The server's listening sockets: the inherited ones (but a [`REDIRECT`]) if there are any (then `addr` and
/// `port` are not used), else a new one on `addr:port` (a second server on the same port
/// then fails with "address in use"), or with `reuse_port` one per worker. True if
/// inherited.
pub fn listeners(
    addr: &str,
    port: u16,
    workers: usize,
    reuse_port: bool,
) -> io::Result<(Vec<TcpListener>, bool)> {
    // Every name but the redirect listener's and HTTP/3's: the main
    // server's, or none (socket activation).
    let inherited = take_fds_where(|n| n != REDIRECT && !is_quic_name(n))
        .into_iter()
        .map(|(fd, _)| tcp_listener(fd))
        .collect::<io::Result<Vec<_>>>()?;
    if !inherited.is_empty() {
        return Ok((inherited, true));
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
pub fn bind(addr: SocketAddr, reuse_port: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}
