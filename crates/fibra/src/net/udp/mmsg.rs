//! The system calls behind batched UDP I/O: `sendmmsg(2)` and `recvmmsg(2)` over at most
//! [`BATCH`] datagrams, with the `UDP_SEGMENT` control message (GSO) on the way out and the
//! `UDP_GRO` one read back on the way in; and the integer socket options socket2 has no
//! accessor for.
//!
//! Each call builds its message headers in one struct on the calling stack and makes the
//! system call in the same function: nothing a header points to moves or is freed while the
//! kernel reads or writes it.

use super::datagram::{InDatagram, Target};
use socket2::SockAddr;
use std::io;
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::ptr;

/// The most datagrams one `sendmmsg`/`recvmmsg` call takes. A batch's headers live on the
/// calling fiber's stack: about 9 KiB for 32.
pub(super) const BATCH: usize = 32;

/// One datagram for [`send`].
#[derive(Clone, Copy)]
pub(super) struct Outgoing<'a> {
    pub(super) buf: &'a [u8],
    /// `None`: the connected peer.
    pub(super) addr: Option<SocketAddr>,
    /// The `UDP_SEGMENT` size to cut `buf` at; 0 for none.
    pub(super) segment_size: u16,
}

impl Outgoing<'_> {
    pub(super) const EMPTY: Outgoing<'static> = Outgoing {
        buf: &[],
        addr: None,
        segment_size: 0,
    };
}

/// A `UDP_SEGMENT` control message: the header, then the `u16` size where `CMSG_DATA` puts it.
#[repr(C)]
#[derive(Clone, Copy)]
struct SegmentCmsg {
    hdr: libc::cmsghdr,
    size: u16,
}

// The layout `CMSG_LEN`/`CMSG_SPACE` describe, checked at compile time.
const _: () = {
    // SAFETY: both only compute sizes from their argument.
    let (data_at, space) = unsafe { (libc::CMSG_LEN(0), libc::CMSG_SPACE(2)) };
    assert!(std::mem::offset_of!(SegmentCmsg, size) == data_at as usize);
    assert!(size_of::<SegmentCmsg>() == space as usize);
};

/// The headers of a batch to send, and what they point to (besides the payloads).
struct SendBatch {
    hdrs: [libc::mmsghdr; BATCH],
    iovs: [libc::iovec; BATCH],
    names: [libc::sockaddr_storage; BATCH],
    cmsgs: [SegmentCmsg; BATCH],
}

/// `sendmmsg(2)` of the first [`BATCH`] of `msgs`, with `MSG_NOSIGNAL`: how many datagrams
/// (entries of `msgs`) left, at least one, or the first one's error (`WouldBlock` when the
/// send buffer is full).
pub(super) fn send(fd: RawFd, msgs: &[Outgoing<'_>]) -> io::Result<usize> {
    let n = msgs.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: every field is an array of C structs made of integers and pointers, for which
    // all-zero bytes are a valid value (zero lengths, null pointers).
    let mut b: SendBatch = unsafe { std::mem::zeroed() };
    let mut name_lens = [0 as libc::socklen_t; BATCH];
    for (i, m) in msgs[..n].iter().enumerate() {
        b.iovs[i] = libc::iovec {
            iov_base: m.buf.as_ptr() as *mut libc::c_void,
            iov_len: m.buf.len(),
        };
        if let Some(addr) = m.addr {
            let addr = SockAddr::from(addr);
            name_lens[i] = addr.len();
            b.names[i] = addr.as_storage();
        }
        if m.segment_size != 0 {
            let c = &mut b.cmsgs[i];
            // SAFETY: CMSG_LEN only computes a size.
            c.hdr.cmsg_len = unsafe { libc::CMSG_LEN(size_of::<u16>() as libc::c_uint) } as _;
            c.hdr.cmsg_level = libc::SOL_UDP;
            c.hdr.cmsg_type = libc::UDP_SEGMENT;
            c.size = m.segment_size;
        }
    }
    for i in 0..n {
        let h = &mut b.hdrs[i].msg_hdr;
        h.msg_iov = ptr::addr_of_mut!(b.iovs[i]);
        h.msg_iovlen = 1;
        if name_lens[i] != 0 {
            h.msg_name = ptr::addr_of_mut!(b.names[i]).cast();
            h.msg_namelen = name_lens[i];
        }
        if msgs[i].segment_size != 0 {
            h.msg_control = ptr::addr_of_mut!(b.cmsgs[i]).cast();
            h.msg_controllen = size_of::<SegmentCmsg>() as _;
        }
    }
    // SAFETY: the first `n` headers are initialised, and each points to memory that stays
    // valid and unmoved for the call: one iovec in `b.iovs` over a payload `msgs` borrows (read
    // only by the kernel), an address of `msg_namelen` bytes in `b.names` or none, and a
    // complete control message in `b.cmsgs` or none. The kernel writes only `msg_len` of each
    // header, which lies in `b.hdrs`.
    let r = unsafe {
        libc::sendmmsg(
            fd,
            b.hdrs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_NOSIGNAL as _,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// Room for one datagram's control messages: `UDP_GRO`'s `int` (24 bytes), and more that
/// options set elsewhere may add (a timestamp, the destination address). What does not fit is
/// dropped by the kernel (`MSG_CTRUNC`), never written past the end.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Control([u8; 64]);

/// The headers of a batch to receive, and what they point to (besides the buffers).
struct RecvBatch {
    hdrs: [libc::mmsghdr; BATCH],
    iovs: [libc::iovec; BATCH],
    names: [libc::sockaddr_storage; BATCH],
    controls: [Control; BATCH],
}

/// `recvmmsg(2)` into the first [`BATCH`] entries of `dgrams`: how many were filled, at least
/// one, or the error (`WouldBlock` when nothing has arrived). Each filled entry gets its
/// length, sender, truncation flag and GRO segment size.
pub(super) fn recv(fd: RawFd, dgrams: &mut [InDatagram<'_>]) -> io::Result<usize> {
    let n = dgrams.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: every field is an array of C structs (or bytes) made of integers and pointers,
    // for which all-zero bytes are a valid value.
    let mut b: RecvBatch = unsafe { std::mem::zeroed() };
    for (iov, d) in b.iovs.iter_mut().zip(dgrams.iter_mut()) {
        *iov = match &mut d.buf {
            Target::Slice(s) => libc::iovec {
                iov_base: s.as_mut_ptr().cast(),
                iov_len: s.len(),
            },
            Target::Vec(v) => {
                let spare = v.spare_capacity_mut();
                libc::iovec {
                    iov_base: spare.as_mut_ptr().cast(),
                    iov_len: spare.len(),
                }
            }
        };
    }
    for i in 0..n {
        let h = &mut b.hdrs[i].msg_hdr;
        h.msg_name = ptr::addr_of_mut!(b.names[i]).cast();
        h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = ptr::addr_of_mut!(b.iovs[i]);
        h.msg_iovlen = 1;
        h.msg_control = ptr::addr_of_mut!(b.controls[i]).cast();
        h.msg_controllen = size_of::<Control>() as _;
    }
    // SAFETY: the first `n` headers are initialised, and each points to memory that stays
    // valid, unmoved and otherwise unused for the call: one iovec in `b.iovs` over an entry's
    // buffer (`dgrams` is borrowed mutably, so nothing else reads or writes it), an address
    // slot and a control buffer in `b`, each as long as the length beside it says. The
    // kernel writes within those lengths and into the headers. No timeout pointer.
    let r = unsafe {
        libc::recvmmsg(
            fd,
            b.hdrs.as_mut_ptr(),
            n as libc::c_uint,
            0,
            ptr::null_mut(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let got = r as usize;
    for (i, d) in dgrams[..got].iter_mut().enumerate() {
        let h = &b.hdrs[i];
        // The bytes the kernel copied (no MSG_TRUNC flag was passed), never more than the
        // iovec's room.
        d.len = (h.msg_len as usize).min(b.iovs[i].iov_len);
        if let Target::Vec(v) = &mut d.buf {
            // SAFETY: the kernel wrote `d.len` bytes at the start of `v`'s spare capacity
            // (the iovec above, at most its length), so the first `len + d.len` bytes are
            // initialised; `v` was not touched since, being borrowed by `dgrams`.
            unsafe { v.set_len(v.len() + d.len) };
        }
        d.truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        d.addr = socket_addr(&b.names[i], h.msg_hdr.msg_namelen);
        d.segment_size = gro_segment_size(&h.msg_hdr);
    }
    Ok(got)
}

/// The address the kernel wrote into `name` (`len` bytes), if it is an IP one.
fn socket_addr(name: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    if len == 0 {
        return None;
    }
    // SAFETY: `recvmmsg` wrote a socket address of `len` bytes (no more than the storage's
    // size, which it was given as the limit) into `name`: what `SockAddr::new` requires.
    unsafe { SockAddr::new(*name, len) }.as_socket()
}

/// The `UDP_GRO` segment size among the control messages `h` received, if any.
fn gro_segment_size(h: &libc::msghdr) -> Option<usize> {
    // SAFETY: `h.msg_control` points to a live `Control` buffer, and `h.msg_controllen` is the
    // length of the well-formed control messages the kernel wrote there (cut to whole
    // messages on `MSG_CTRUNC`); CMSG_FIRSTHDR and CMSG_NXTHDR return only headers that lie
    // within it, and a `UDP_GRO` message carries an `int`, read unaligned from its data.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                let size = ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                return usize::try_from(size).ok().filter(|&s| s > 0);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// `getsockopt` of an `int` option.
pub(super) fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes, and `len` tells the kernel it may write
    // at most an `int` into `value`.
    let r = unsafe { libc::getsockopt(fd, level, name, ptr::addr_of_mut!(value).cast(), &mut len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// `setsockopt` of an `int` option.
pub(super) fn set_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: i32,
) -> io::Result<()> {
    // SAFETY: the kernel reads `size_of::<c_int>()` bytes from `value`, which lives for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            ptr::addr_of!(value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
