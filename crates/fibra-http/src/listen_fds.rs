//! Listening sockets handed over by the process that started this one, the way systemd's
//! socket activation passes them (`sd_listen_fds(3)`): descriptors `3 .. 3 + N`, with
//! `LISTEN_FDS=N` and `LISTEN_PID` set to the pid of the process meant to take them.
//! `systemd-socket-activate` does the same without systemd, and a server that upgrades its
//! binary in place hands its own listeners to the new binary this way.
//!
//! [`take_listen_fds`] takes the descriptors (once: it clears the variables, as
//! `sd_listen_fds(1)` does, so a child process does not take them again), [`tcp_listener`]
//! checks that one is a listening TCP socket, and [`Server::from_listeners`] serves on them:
//!
//! ```no_run
//! use fibra_http::listen_fds::{take_listen_fds, tcp_listener};
//! use fibra_http::{Request, Response, Server};
//!
//! let inherited = take_listen_fds()?;
//! let server = if inherited.is_empty() {
//!     Server::bind("127.0.0.1:8080")
//! } else {
//!     let listeners = inherited.into_iter().map(tcp_listener).collect::<Result<Vec<_>, _>>()?;
//!     Server::from_listeners(listeners)
//! };
//! server.run(|_req: Request| Response::new("hello".into()))?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::acceptor::TcpAcceptor;
use crate::server::{Listen, Server};

/// The first inherited descriptor (`SD_LISTEN_FDS_START`).
pub const FIRST_FD: RawFd = 3;

/// Most descriptors taken: far more than a server listens on, and a bound on a bad variable.
const MAX_FDS: usize = 1024;

/// Takes the listening sockets this process inherited: `LISTEN_FDS` descriptors from
/// [`FIRST_FD`] on, if `LISTEN_PID` is this process's pid. An empty list when `LISTEN_FDS` is
/// not set or `LISTEN_PID` names another process (the variables were meant for a parent).
///
/// Clears `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` in every case, and marks the
/// descriptors close-on-exec, so that child processes take nothing. Call it once, early,
/// before other threads start (it changes the environment). An error names the variable
/// or descriptor that is wrong: a value that is not a number, a descriptor that is not open.
pub fn take_listen_fds() -> io::Result<Vec<OwnedFd>> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(var);
    }
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(Vec::new());
    };
    let bad = |var: &str, value: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{var}={value:?} is not a valid value"),
        )
    };
    let pid: u32 = pid.trim().parse().map_err(|_| bad("LISTEN_PID", &pid))?;
    if pid != std::process::id() {
        return Ok(Vec::new());
    }
    let n: usize = fds.trim().parse().map_err(|_| bad("LISTEN_FDS", &fds))?;
    if n > MAX_FDS {
        return Err(bad("LISTEN_FDS", &fds));
    }
    let mut taken = Vec::with_capacity(n);
    for fd in (FIRST_FD..).take(n) {
        // SAFETY: F_GETFD only reads the descriptor's flags; an fd that is not open gives
        // EBADF, reported below.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("LISTEN_FDS={n}: inherited fd {fd}: {e}"),
            ));
        }
        // SAFETY: the descriptor is open (checked above), and by the protocol it was handed
        // to this process alone; the variables are cleared above, so no later call takes it
        // a second time.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: F_SETFD on a descriptor we own, with its own flags plus close-on-exec.
        unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
        taken.push(owned);
    }
    Ok(taken)
}

/// `fd` as a TCP listener, if it is a listening TCP (IPv4 or IPv6) socket; otherwise an error
/// naming the descriptor.
pub fn tcp_listener(fd: OwnedFd) -> io::Result<std::net::TcpListener> {
    let raw = fd.as_raw_fd();
    let not_tcp = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("inherited fd {raw} is not a listening TCP socket ({why})"),
        )
    };
    let int_opt = |level, name| -> io::Result<libc::c_int> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` and `len` are valid out-pointers of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                raw,
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(value)
    };
    let ty = int_opt(libc::SOL_SOCKET, libc::SO_TYPE).map_err(|e| not_tcp(&e.to_string()))?;
    if ty != libc::SOCK_STREAM {
        return Err(not_tcp("not a stream socket"));
    }
    if int_opt(libc::SOL_SOCKET, libc::SO_ACCEPTCONN)? == 0 {
        return Err(not_tcp("not listening"));
    }
    let listener = std::net::TcpListener::from(fd);
    match listener.local_addr() {
        Ok(SocketAddr::V4(_) | SocketAddr::V6(_)) => Ok(listener),
        Err(_) => Err(not_tcp("not an IP socket")),
    }
}

impl Server {
    /// A server on listening sockets bound elsewhere: inherited ones ([`take_listen_fds`]),
    /// or bound by the caller (for example to keep a copy to hand to another process).
    ///
    /// Worker `i` accepts on listener `i % n` (a duplicate descriptor when several workers
    /// share one): with one listener every worker accepts on it; with one per worker
    /// (a `SO_REUSEPORT` group, as a server binds for several workers) each has its own.
    /// More listeners than workers is an error when the server starts (connections
    /// queued on a listener nobody accepts on would wait forever), and so is none.
    pub fn from_listeners(listeners: Vec<std::net::TcpListener>) -> Server {
        let mut listeners: Vec<Option<std::net::TcpListener>> =
            listeners.into_iter().map(Some).collect();
        Server::with_listen(Ok(Box::new(move |worker: usize, workers: usize| {
            let n = listeners.len();
            if n == 0 || n > workers {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{n} listening sockets for {workers} workers: give one socket, \
                         or at most one per worker"
                    ),
                ));
            }
            let slot = &mut listeners[worker % n];
            // The last worker to use a listener takes it; the others get a duplicate.
            let std = if worker + n >= workers {
                slot.take()
            } else {
                slot.as_ref().map(|l| l.try_clone()).transpose()?
            }
            .ok_or_else(|| io::Error::other("listener already taken"))?;
            TcpAcceptor::from_std(std)
        }) as Listen<TcpAcceptor>))
    }
}
