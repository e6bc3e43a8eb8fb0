//! Several sockets on one UDP port ([`UdpSocket::bind_reuse_port`], `SO_REUSEPORT`), and a
//! classic BPF program that chooses which of them gets each datagram
//! ([`UdpSocket::attach_reuse_port_program`], `SO_ATTACH_REUSEPORT_CBPF`): a QUIC server
//! with one socket per worker steers a connection's datagrams by its connection ID, so that
//! they reach the worker that owns it whatever address they come from.

use super::UdpSocket;
use std::io;
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::ptr;

/// `SO_ATTACH_REUSEPORT_CBPF` (Linux 4.5), the same on every architecture; the `libc` crate
/// defines it for Android only.
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;

/// One instruction of a classic BPF program: Linux's `struct sock_filter` (`code`, the jump
/// offsets `jt` and `jf`, the operand `k`), with the same layout.
///
/// For [`UdpSocket::attach_reuse_port_program`]. Linux's `<linux/filter.h>` documents the
/// codes; `libc` has their constants (`BPF_LD`, `BPF_B`, `BPF_ABS`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct BpfInstruction {
    /// The operation (class, size, mode or ALU operation, source).
    pub code: u16,
    /// Instructions to skip when a conditional jump's test holds.
    pub jt: u8,
    /// Instructions to skip when it does not.
    pub jf: u8,
    /// The operand: an offset, a constant, a jump distance.
    pub k: u32,
}

impl BpfInstruction {
    /// An instruction (`BPF_STMT` when both jumps are 0, `BPF_JUMP` otherwise).
    pub const fn new(code: u16, jt: u8, jf: u8, k: u32) -> BpfInstruction {
        BpfInstruction { code, jt, jf, k }
    }
}

impl UdpSocket {
    /// Binds to `addr` with `SO_REUSEPORT` set first: every socket of this user bound so to
    /// the same address and port joins one group, and the kernel hands each arriving datagram
    /// to one of them: by a hash of the sender's and receiver's addresses and ports (one
    /// sender always reaches the same socket while the group is unchanged), or by the
    /// group's program if one is attached ([`attach_reuse_port_program`]). Bind port 0 for the
    /// first socket and the port it got for the rest. A failure names the address.
    ///
    /// [`attach_reuse_port_program`]: UdpSocket::attach_reuse_port_program
    pub fn bind_reuse_port(addr: SocketAddr) -> io::Result<UdpSocket> {
        UdpSocket::bind_socket(addr, true)
    }

    /// Attaches `program` to this socket's `SO_REUSEPORT` group (replacing the group's
    /// program, if it had one): for each datagram the kernel runs it with the UDP payload at
    /// offset 0, and the value it returns is the index of the socket to deliver to, counting
    /// the group's sockets in the order they were bound. An index past the last socket (or a
    /// payload too short for a load the program makes) falls back to the hash.
    ///
    /// Fails with the kernel's error: `EINVAL` for a program it refuses (or a socket not
    /// bound with [`bind_reuse_port`](UdpSocket::bind_reuse_port)), `ENOPROTOOPT` before
    /// Linux 4.5.
    pub fn attach_reuse_port_program(&self, program: &[BpfInstruction]) -> io::Result<()> {
        let len = u16::try_from(program.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a BPF program of over 65,535 instructions",
            )
        })?;
        let prog = libc::sock_fprog {
            len,
            // The kernel copies the program and never writes through this pointer.
            filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
        };
        // SAFETY: `BpfInstruction` is `repr(C)` with `sock_filter`'s fields, types and order;
        // `prog` points at `len` of them, borrowed for the call; the kernel reads
        // `size_of::<sock_fprog>()` bytes from `prog` and copies the program before returning.
        let r = unsafe {
            libc::setsockopt(
                self.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_ATTACH_REUSEPORT_CBPF,
                ptr::addr_of!(prog).cast(),
                size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instruction_has_sock_filters_layout() {
        assert_eq!(size_of::<BpfInstruction>(), size_of::<libc::sock_filter>());
        assert_eq!(
            std::mem::align_of::<BpfInstruction>(),
            std::mem::align_of::<libc::sock_filter>()
        );
    }
}
