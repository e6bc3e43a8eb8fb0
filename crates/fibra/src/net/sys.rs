//! `recv(2)` and `send(2)` as plain system calls.
//!
//! glibc's `recv`/`send` (what `std` calls) are pthread cancellation points: each call turns
//! asynchronous cancellation on before the system call and off after it, about 60
//! instructions per call that buy nothing here (fibra never cancels threads). A keep-alive
//! request makes one of each, so the stream types call the kernel through `syscall(2)`.

use std::io;
use std::os::fd::RawFd;

/// `recv(fd, buf, 0)`.
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
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call; the
    // address arguments are null, which sendto(2) allows on a connected socket.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL,
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
