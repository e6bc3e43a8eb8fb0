//! UDP: [`UdpSocket`], with `std::net::UdpSocket`'s shape, plus batched I/O for QUIC
//! ([`UdpSocket::send_many`] over `sendmmsg`, [`UdpSocket::recv_many`] over `recvmmsg`, with
//! UDP GSO and GRO where the kernel has them) and socket buffer sizing.
//!
//! Files: `datagram.rs` (the batch entries), `mmsg.rs` (the batched system calls and control
//! messages), `gso.rs` (segmentation offload: the probe, its limits, the fallback),
//! `reuse_port.rs` (several sockets on one port, and a program that steers among them).

mod datagram;
mod gso;
mod mmsg;
mod reuse_port;

pub use datagram::{InDatagram, OutDatagram};
pub use reuse_port::BpfInstruction;

use super::evented::Evented;
use crate::reactor::Dir;
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// The socket buffer size to ask for on a QUIC endpoint, each way: 2 MiB, room for about
/// 1,400 full-size (1,500-byte) datagrams, so a burst the endpoint has not yet read is not
/// dropped. quic-go asks for more (7 MiB) and warns when it gets less.
///
/// Linux grants at most `net.core.rmem_max` (receive) or `net.core.wmem_max` (send), 208 KiB
/// by default, and then doubles the figure for its own bookkeeping: on a default kernel,
/// `set_recv_buffer_size(QUIC_BUFFER_SIZE)` succeeds and `recv_buffer_size()` reads 416 KiB.
/// Raise the two sysctls to at least this size to get it.
pub const QUIC_BUFFER_SIZE: usize = 2 << 20;

/// A UDP socket whose blocking-style calls park only the calling fiber.
///
/// Its calls are `std::net::UdpSocket`'s: inside a fiber, one that would block (a receive with
/// nothing queued, a send with the send buffer full) parks the fiber until the socket is ready
/// or its timeout passes (`TimedOut`); on a plain thread it blocks the thread. All take
/// `&self`, so fibers can share a socket through an `Arc`, one receiving while others send.
///
/// For QUIC, [`send_many`](UdpSocket::send_many) and [`recv_many`](UdpSocket::recv_many) move
/// up to 32 datagrams per system call, and a segmented [`OutDatagram`] (GSO) or a coalesced
/// [`InDatagram`] (GRO) many datagrams per entry.
///
/// An error the kernel queues on the socket (an ICMP "port unreachable" for a connected socket
/// reads as `ConnectionRefused`) is returned once, by the next call, and the socket goes on
/// working.
///
/// ```
/// use fibra::net::UdpSocket;
///
/// fibra::run(|| {
///     let server = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let addr = server.local_addr().unwrap();
///     let echo = fibra::spawn(move || {
///         let mut buf = [0u8; 1500];
///         // Parks this fiber until a datagram arrives.
///         let (n, from) = server.recv_from(&mut buf).unwrap();
///         server.send_to(&buf[..n], from).unwrap();
///     });
///     let client = UdpSocket::bind("127.0.0.1:0").unwrap();
///     client.connect(addr).unwrap();
///     client.send(b"ping").unwrap();
///     let mut buf = [0u8; 16];
///     let n = client.recv(&mut buf).unwrap();
///     assert_eq!(&buf[..n], b"ping");
///     echo.join().unwrap();
/// });
/// ```
pub struct UdpSocket {
    inner: Evented<std::net::UdpSocket, true>,
    /// Whether the kernel has UDP GSO (probed when the socket was made).
    gso_supported: bool,
    /// Whether segmented sends use GSO: `gso_supported` and not turned off by `set_gso` (or
    /// by a send that failed with `EIO`, which a device without checksum offload returns).
    gso: AtomicBool,
}

// No call on a datagram socket proves it drained when it succeeds (a datagram shorter than
// the buffer says nothing about the next one), so operations pass `|_| false` as `drained`: a
// socket parks only after a call found nothing (`WouldBlock`).

impl UdpSocket {
    /// Binds to the first of `addr`'s addresses that works. A failure names the address:
    /// "binding a UDP socket to 127.0.0.1:53: Permission denied (os error 13)".
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match Self::bind_one(a) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to bind to")
        }))
    }

    fn bind_one(addr: SocketAddr) -> io::Result<UdpSocket> {
        Self::bind_socket(addr, false)
    }

    /// Binds to `addr`, with `SO_REUSEPORT` first if `reuse_port`.
    fn bind_socket(addr: SocketAddr, reuse_port: bool) -> io::Result<UdpSocket> {
        let named =
            |e: io::Error| io::Error::new(e.kind(), format!("binding a UDP socket to {addr}: {e}"));
        let ty = Type::DGRAM.nonblocking();
        let socket =
            Socket::new(Domain::for_address(addr), ty, Some(Protocol::UDP)).map_err(named)?;
        if reuse_port {
            socket.set_reuse_port(true).map_err(named)?;
        }
        socket.bind(&addr.into()).map_err(named)?;
        Ok(Self::from_nonblocking(socket.into()))
    }

    /// Wraps a `std` socket (switched to non-blocking mode).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(Self::from_nonblocking(socket))
    }

    fn from_nonblocking(socket: std::net::UdpSocket) -> UdpSocket {
        let gso_supported = gso::probe(socket.as_raw_fd());
        UdpSocket {
            inner: Evented::new(socket),
            gso_supported,
            gso: AtomicBool::new(gso_supported),
        }
    }

    /// A second descriptor (`dup`) of the same socket, with the same GSO setting and no
    /// timeout. As with [`TcpListener::try_clone`](super::TcpListener::try_clone), it is
    /// registered on its own, with the worker where a fiber first waits on it.
    pub fn try_clone(&self) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            inner: Evented::new(self.inner.io.try_clone()?),
            gso_supported: self.gso_supported,
            gso: AtomicBool::new(self.gso.load(Relaxed)),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.local_addr()
    }

    /// The connected peer's address (`NotConnected` if none).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.peer_addr()
    }

    /// Connects to the first of `addr`'s addresses that works: [`send`](UdpSocket::send) and
    /// [`recv`](UdpSocket::recv) then talk to it alone (datagrams from elsewhere are
    /// dropped). Nothing goes on the wire, so this never waits. A failure names the address.
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match self.inner.io.connect(a) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    let msg = format!("connecting a UDP socket to {a}: {e}");
                    last = Some(io::Error::new(e.kind(), msg));
                }
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to connect to")
        }))
    }

    /// Sends `buf` as one datagram to `addr` (the first of its addresses); returns the bytes
    /// sent, all of them.
    pub fn send_to(&self, buf: &[u8], addr: impl ToSocketAddrs) -> io::Result<usize> {
        let addr = addr.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to send data to")
        })?;
        self.inner
            .op(Dir::Write, |s| s.send_to(buf, addr), |_| false)
    }

    /// Receives one datagram into `buf`, waiting until one arrives; returns its length and
    /// sender. A datagram longer than `buf` is cut to fit, the rest dropped.
    ///
    /// On a socket with [`set_gro`](UdpSocket::set_gro) on, one call may return several
    /// datagrams run together: use [`recv_many`](UdpSocket::recv_many), which says where
    /// they divide.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.op(Dir::Read, |s| s.recv_from(buf), |_| false)
    }

    /// [`recv_from`](UdpSocket::recv_from) without taking the datagram off the queue
    /// (`MSG_PEEK`): the next receive returns it again.
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.op(Dir::Read, |s| s.peek_from(buf), |_| false)
    }

    /// Sends `buf` as one datagram to the connected peer.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.op(Dir::Write, |s| s.send(buf), |_| false)
    }

    /// Receives one datagram from the connected peer, as [`recv_from`](UdpSocket::recv_from)
    /// does.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.op(Dir::Read, |s| s.recv(buf), |_| false)
    }

    /// Sends the first entries of `msgs` (up to 32) with one `sendmmsg(2)`, waiting until at
    /// least one can go; returns how many entries went, maybe fewer than given (the send
    /// buffer filled up): call again with the rest. A segmented entry ([`OutDatagram`]'s
    /// segment size) leaves as several datagrams, through GSO or, without it, one by one.
    ///
    /// An entry that cannot be sent fails the call if it is the first (`InvalidInput` for a
    /// bad segment size, the kernel's error otherwise); later, it ends the batch before it, and
    /// the next call reports it. Without GSO, an entry that an error cuts short after some of
    /// its datagrams left counts as sent (its other datagrams lost, as on a network), so no
    /// datagram goes twice.
    pub fn send_many(&self, msgs: &[OutDatagram<'_>]) -> io::Result<usize> {
        self.send_batch(msgs, true)
    }

    /// [`send_many`](UdpSocket::send_many) without waiting for room: `WouldBlock` when the
    /// send buffer is full and nothing left. For a fiber that must not park in a send (a QUIC
    /// endpoint's driver keeps what did not go and waits for "writable, or something else to
    /// do"). Once a segmented entry sent without GSO has begun to leave, the rest of its
    /// segments go as with `send_many`, waiting for room if need be.
    pub fn try_send_many(&self, msgs: &[OutDatagram<'_>]) -> io::Result<usize> {
        self.send_batch(msgs, false)
    }

    /// `send_many` (`wait`) or `try_send_many`.
    fn send_batch(&self, msgs: &[OutDatagram<'_>], wait: bool) -> io::Result<usize> {
        let gso = self.gso.load(Relaxed);
        let mut end = msgs.len().min(mmsg::BATCH);
        for (i, m) in msgs[..end].iter().enumerate() {
            if let Err(e) = gso::check(m, gso) {
                if i == 0 {
                    return Err(e);
                }
                end = i;
                break;
            }
        }
        let msgs = &msgs[..end];
        if msgs.is_empty() {
            return Ok(0);
        }
        let segmented = msgs.iter().any(|m| m.segmented().is_some());
        if gso || !segmented {
            let mut out = [mmsg::Outgoing::EMPTY; mmsg::BATCH];
            for (o, m) in out.iter_mut().zip(msgs) {
                *o = gso::whole(m);
            }
            let out = &out[..msgs.len()];
            let send = |s: &std::net::UdpSocket| mmsg::send(s.as_raw_fd(), out);
            let sent = if wait {
                self.inner.op(Dir::Write, send, |_| false)
            } else {
                self.inner.try_op(Dir::Write, send, |_| false)
            };
            match sent {
                // The route's device cannot checksum segments: GSO is off for this socket from
                // now on, and this batch goes out one segment at a time.
                Err(e) if segmented && e.raw_os_error() == Some(libc::EIO) => {
                    self.gso.store(false, Relaxed);
                }
                other => return other,
            }
        }
        gso::send_each_segment(&self.inner, msgs, wait)
    }

    /// Receives up to `bufs.len()` datagrams (at most 32) with one `recvmmsg(2)`, waiting
    /// until at least one has arrived; returns how many entries were filled, from the first.
    /// Each filled entry says how many bytes it got, from where, and with GRO how they divide
    /// into datagrams ([`InDatagram::segments`]).
    pub fn recv_many(&self, bufs: &mut [InDatagram<'_>]) -> io::Result<usize> {
        if bufs.is_empty() {
            return Ok(0);
        }
        self.inner
            .op(Dir::Read, |s| mmsg::recv(s.as_raw_fd(), bufs), |_| false)
    }

    /// [`recv_many`](UdpSocket::recv_many) without waiting: `WouldBlock` when nothing has
    /// arrived. Once a call has found nothing, later ones say `WouldBlock` without a system
    /// call until the reactor sees the socket readable again, so a loop of `try_recv_many` and
    /// [`readable_or_notified_until`](UdpSocket::readable_or_notified_until) costs one
    /// `recvmmsg` per arrival, like blocking receives.
    pub fn try_recv_many(&self, bufs: &mut [InDatagram<'_>]) -> io::Result<usize> {
        if bufs.is_empty() {
            return Ok(0);
        }
        self.inner
            .try_op(Dir::Read, |s| mmsg::recv(s.as_raw_fd(), bufs), |_| false)
    }

    /// Waits until a receive may find a datagram (as far as the reactor knows: a following
    /// [`try_recv_many`](UdpSocket::try_recv_many) can still say `WouldBlock`), or `notify` is
    /// notified, or `until` passes, whichever comes first; also honours the read timeout.
    /// Returns true if it was notified (taking the notification, or the permit a
    /// [`Notify::notify_one`](crate::sync::Notify::notify_one) stored while nobody waited),
    /// false if the socket may be readable, and `TimedOut` at the deadline. Returns at once
    /// if no receive has found the socket empty since the last readiness event.
    ///
    /// The deadline is kept on the worker's millisecond ticks: the wait ends in the first tick
    /// after `until`, never before it. This is the wait of a fiber that owns a socket and also
    /// serves other fibers and timers (a QUIC endpoint's driver). On a plain thread it looks
    /// at the socket and `notify` every 10 ms.
    pub fn readable_or_notified_until(
        &self,
        notify: &crate::sync::Notify,
        until: Option<Instant>,
    ) -> io::Result<bool> {
        self.inner.ready_or_notified(Dir::Read, notify, until)
    }

    /// The sending side of
    /// [`readable_or_notified_until`](UdpSocket::readable_or_notified_until): waits until a
    /// send may find room in the send buffer, or `notify` is notified, or `until` passes (also
    /// honouring the write timeout). True if notified, false if the socket may be writable,
    /// `TimedOut` at the deadline.
    pub fn writable_or_notified_until(
        &self,
        notify: &crate::sync::Notify,
        until: Option<Instant>,
    ) -> io::Result<bool> {
        self.inner.ready_or_notified(Dir::Write, notify, until)
    }

    /// Sets or clears "don't fragment" on the datagrams this socket sends, for path MTU
    /// discovery done by the protocol above (QUIC's DPLPMTUD, RFC 9000 §14.3): on,
    /// `IP_MTU_DISCOVER` (and on an IPv6 socket `IPV6_MTU_DISCOVER`) is set to
    /// `IP_PMTUDISC_PROBE`: datagrams leave with DF set, are never fragmented, and a datagram
    /// larger than the interface's MTU fails with `EMSGSIZE` (a probe lost, not a large
    /// datagram cut in pieces behind the protocol's back). Off restores the kernel's default,
    /// `IP_PMTUDISC_WANT`.
    pub fn set_dont_fragment(&self, on: bool) -> io::Result<()> {
        let fd = self.as_raw_fd();
        let v4 = if on {
            libc::IP_PMTUDISC_PROBE
        } else {
            libc::IP_PMTUDISC_WANT
        };
        if self.local_addr()?.is_ipv6() {
            let v6 = if on {
                libc::IPV6_PMTUDISC_PROBE
            } else {
                libc::IPV6_PMTUDISC_WANT
            };
            mmsg::set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, v6)?;
            // A dual-stack socket also sends IPv4 datagrams (to mapped addresses); an
            // IPv6-only one refuses the IPv4 option, which then has nothing to govern.
            let _ = mmsg::set_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, v4);
            return Ok(());
        }
        mmsg::set_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, v4)
    }

    /// Turns GSO for [`send_many`](UdpSocket::send_many) on (the default where the kernel
    /// has it) or off: off, a segmented entry leaves one datagram per system call entry,
    /// which the receiver cannot tell apart (for kernels or devices where GSO misbehaves,
    /// and to test the fallback). Turning it on where the kernel lacks it does nothing; see
    /// [`max_gso_segments`](UdpSocket::max_gso_segments).
    pub fn set_gso(&self, on: bool) {
        self.gso.store(on && self.gso_supported, Relaxed);
    }

    /// The most segments one [`OutDatagram`] may have for GSO: 64 when it is in use, 1 when
    /// it is not (the kernel lacks it, or [`set_gso`](UdpSocket::set_gso) turned it off; any
    /// number of segments is then sent one by one).
    pub fn max_gso_segments(&self) -> usize {
        if self.gso.load(Relaxed) {
            gso::MAX_SEGMENTS
        } else {
            1
        }
    }

    /// Turns UDP GRO on or off (`UDP_GRO`, off by default): on, the kernel may coalesce
    /// datagrams of one size from one sender into one received entry, which
    /// [`recv_many`](UdpSocket::recv_many) reports with its segment size. Returns whether GRO
    /// is now on: `false` if the kernel lacks it (before 5.0), where datagrams simply arrive
    /// one by one.
    pub fn set_gro(&self, on: bool) -> io::Result<bool> {
        match mmsg::set_int(
            self.as_raw_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            i32::from(on),
        ) {
            Ok(()) => Ok(on),
            Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Asks for a receive buffer (`SO_RCVBUF`) of `size` bytes. The kernel caps the request
    /// at `net.core.rmem_max` and doubles it; [`recv_buffer_size`](UdpSocket::recv_buffer_size)
    /// says what it granted. See [`QUIC_BUFFER_SIZE`].
    pub fn set_recv_buffer_size(&self, size: usize) -> io::Result<()> {
        SockRef::from(&self.inner.io).set_recv_buffer_size(size)
    }

    /// The receive buffer's size as the kernel reports it (twice what it granted).
    pub fn recv_buffer_size(&self) -> io::Result<usize> {
        SockRef::from(&self.inner.io).recv_buffer_size()
    }

    /// Asks for a send buffer (`SO_SNDBUF`) of `size` bytes, capped at `net.core.wmem_max`
    /// and doubled, as [`set_recv_buffer_size`](UdpSocket::set_recv_buffer_size).
    pub fn set_send_buffer_size(&self, size: usize) -> io::Result<()> {
        SockRef::from(&self.inner.io).set_send_buffer_size(size)
    }

    /// The send buffer's size as the kernel reports it (twice what it granted).
    pub fn send_buffer_size(&self) -> io::Result<usize> {
        SockRef::from(&self.inner.io).send_buffer_size()
    }

    /// Limits how long one receive waits (it then fails with `TimedOut`). `None` (the
    /// default) waits forever; a zero duration is refused (`InvalidInput`), as by `std`.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, t)
    }

    /// Limits how long one send waits for room in the send buffer (`TimedOut`). `None` (the
    /// default) waits forever.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, t)
    }

    /// The read timeout.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.inner.timeout(Dir::Read)
    }

    /// The write timeout.
    pub fn write_timeout(&self) -> Option<Duration> {
        self.inner.timeout(Dir::Write)
    }

    /// Takes the pending socket error (`SO_ERROR`), which the next call would have returned.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.io.take_error()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.io.as_raw_fd()
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.io.as_fd()
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSocket")
            .field("addr", &self.local_addr().ok())
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
