//! The system calls behind the socket types: non-blocking sockets from birth (`SOCK_NONBLOCK`
//! on `socket`, `accept4` and `socketpair`, as the kernel allows, so no extra `fcntl`), and
//! `recv(2)`/`send(2)` as plain system calls.
//!
//! glibc's `recv`/`send` (what `std` calls) are pthread cancellation points: each call turns
//! asynchronous cancellation on before the system call and off after it, about 60
//! instructions per call that buy nothing here (fibra never cancels threads). A keep-alive
//! request makes one of each, so the stream types call the kernel through `syscall(2)`.

use socket2::{Domain, SockAddr, SockRef, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, RawFd};
use std::os::unix::net::{self as unix, UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

/// `accept4(SOCK_NONBLOCK | SOCK_CLOEXEC)`: the accepted socket is non-blocking already.
fn accept_nonblocking(listener: impl AsFd) -> io::Result<(Socket, SockAddr)> {
    SockRef::from(&listener).accept4(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
}

/// Accepts a TCP connection, non-blocking.
pub(crate) fn accept_tcp(
    listener: &std::net::TcpListener,
) -> io::Result<(std::net::TcpStream, SocketAddr)> {
    let (socket, addr) = accept_nonblocking(listener)?;
    let addr = addr
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "accepted a non-IP address"))?;
    Ok((socket.into(), addr))
}

/// Accepts a Unix-domain connection, non-blocking. An unnamed peer (the usual case) gets an
/// unnamed address.
pub(crate) fn accept_unix(listener: &UnixListener) -> io::Result<(UnixStream, unix::SocketAddr)> {
    let (socket, addr) = accept_nonblocking(listener)?;
    let addr = match addr.as_unix() {
        Some(addr) => addr,
        None => unix::SocketAddr::from_pathname("")?,
    };
    Ok((socket.into(), addr))
}

/// A TCP socket for `addr`, bound to `local` first if given, non-blocking if asked.
fn tcp_socket(
    local: Option<&SocketAddr>,
    addr: &SocketAddr,
    nonblocking: bool,
) -> io::Result<Socket> {
    let ty = if nonblocking {
        Type::STREAM.nonblocking()
    } else {
        Type::STREAM
    };
    let socket = Socket::new(Domain::for_address(*addr), ty, Some(socket2::Protocol::TCP))?;
    if let Some(local) = local {
        socket.bind(&(*local).into()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("binding {local} to connect to {addr}: {e}"),
            )
        })?;
    }
    Ok(socket)
}

/// A non-blocking TCP socket whose connection to `addr` (from `local`, if given) has started
/// (`EINPROGRESS`); it is established once the socket is writable and has no error.
pub(crate) fn connect_nonblocking(
    local: Option<&SocketAddr>,
    addr: &SocketAddr,
) -> io::Result<std::net::TcpStream> {
    let socket = tcp_socket(local, addr, true)?;
    match socket.connect(&(*addr).into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(socket.into())
}

/// A TCP connection to `addr` (from `local`, if given) made by blocking the calling thread,
/// for at most `timeout` if given.
pub(crate) fn connect_blocking(
    local: Option<&SocketAddr>,
    addr: &SocketAddr,
    timeout: Option<Duration>,
) -> io::Result<std::net::TcpStream> {
    let socket = tcp_socket(local, addr, false)?;
    match timeout {
        Some(t) => socket.connect_timeout(&(*addr).into(), t)?,
        None => socket.connect(&(*addr).into())?,
    }
    Ok(socket.into())
}

/// A non-blocking Unix-domain listener bound to `path` (backlog as the kernel's maximum).
pub(crate) fn bind_unix(path: &Path) -> io::Result<UnixListener> {
    let socket = Socket::new(Domain::UNIX, Type::STREAM.nonblocking(), None)?;
    socket.bind(&SockAddr::unix(path)?)?;
    socket.listen(-1)?;
    Ok(socket.into())
}

/// A connected pair of non-blocking Unix-domain streams.
pub(crate) fn unix_pair() -> io::Result<(UnixStream, UnixStream)> {
    let (a, b) = Socket::pair(Domain::UNIX, Type::STREAM.nonblocking(), None)?;
    Ok((a.into(), b.into()))
}

/// `recv(fd, buf, 0)`.
/// `recvfrom(fd, NULL, len, MSG_TRUNC)`: on a TCP socket the kernel drops up to `len` received
/// bytes without copying them anywhere (tcp(7)) and returns how many it dropped.
pub(crate) fn recv_discard(fd: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: the buffer pointer is null, so the kernel has nowhere to write: with MSG_TRUNC a
    // TCP socket copies nothing, and any socket that did try to copy would fail with EFAULT
    // rather than touch memory. The address arguments are null, which recvfrom(2) allows.
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            std::ptr::null_mut::<u8>(),
            len,
            libc::MSG_TRUNC,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    result(n)
}

pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call; the
    // address arguments are null, which recvfrom(2) allows.
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            buf.as_mut_ptr(),
            buf.len(),
            0,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    result(n)
}

/// `send(fd, buf, MSG_NOSIGNAL)`: a closed peer is an `EPIPE` error, not a `SIGPIPE` (as with
/// `std`'s sockets).
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    send_flags(fd, buf, libc::MSG_NOSIGNAL)
}

/// [`send`] with `MSG_MORE`: TCP holds a partial last frame back until a send without it.
pub(crate) fn send_more(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    send_flags(fd, buf, libc::MSG_NOSIGNAL | libc::MSG_MORE)
}

#[inline(always)]
fn send_flags(fd: RawFd, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call; the
    // address arguments are null, which sendto(2) allows on a connected socket.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            buf.as_ptr(),
            buf.len(),
            flags,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::socklen_t,
        )
    };
    result(n)
}

fn result(n: libc::c_long) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
