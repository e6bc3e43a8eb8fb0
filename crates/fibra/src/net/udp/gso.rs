//! UDP generic segmentation offload: whether the kernel has it (probed once per socket, when it
//! is made), what a segmented [`OutDatagram`] must respect, and the fallback that sends each
//! segment as its own datagram where GSO is missing or turned off.
//!
//! With GSO, one `sendmmsg` entry carries a whole train of segments and a `UDP_SEGMENT`
//! control message; the kernel cuts it after routing, once per train instead of once per
//! datagram. The fallback turns the same trains into one entry per segment, so the receiver
//! cannot tell the two apart; it is slower, not different.

use super::datagram::OutDatagram;
use super::mmsg::{self, Outgoing, BATCH};
use crate::net::evented::Evented;
use crate::reactor::Dir;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// The segments one GSO train may have. Linux took 64 (`UDP_MAX_SEGMENTS`) from 4.18 and
/// 128 from 6.9; no socket option says which, so the smaller is promised.
pub(super) const MAX_SEGMENTS: usize = 64;

/// Whether the kernel has UDP GSO: reading `UDP_SEGMENT` back succeeds (with 0, no size set)
/// where it does, and fails with `ENOPROTOOPT` on kernels before 4.18. It changes nothing.
pub(super) fn probe(fd: RawFd) -> bool {
    mmsg::get_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT).is_ok()
}

/// Whether `m` can be sent: a segment size of 1 to 65,535 bytes and, with GSO, no more than
/// [`MAX_SEGMENTS`] segments.
pub(super) fn check(m: &OutDatagram<'_>, gso: bool) -> io::Result<()> {
    let Some(size) = m.segment_size else {
        return Ok(());
    };
    if size == 0 || size > usize::from(u16::MAX) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a UDP segment size must be 1 to 65535 bytes, not {size}"),
        ));
    }
    let segments = m.buf.len().div_ceil(size);
    if gso && segments > MAX_SEGMENTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} bytes in segments of {size} are {segments} datagrams; UDP GSO takes at \
                 most {MAX_SEGMENTS} in one train",
                m.buf.len()
            ),
        ));
    }
    Ok(())
}

/// `m` as one `sendmmsg` entry for a kernel with GSO.
pub(super) fn whole<'a>(m: &OutDatagram<'a>) -> Outgoing<'a> {
    Outgoing {
        buf: m.buf,
        addr: m.addr,
        // `check` has kept the size within a u16.
        segment_size: m.segmented().map_or(0, |s| s as u16),
    }
}

/// The fallback: sends whole entries of `msgs` (at least one, all valid), each segment as its
/// own datagram, waiting as `op` does until the first can go (or, without `wait`, saying
/// `WouldBlock` if it cannot); returns how many entries went.
///
/// Segments of several entries go out together, up to [`BATCH`] per system call. An entry
/// whose segments did not all fit into that call is finished with more calls, waiting for room
/// if need be, so only whole entries are reported. Should an error cut an entry short after
/// some of its segments left, it counts as sent, its other segments lost, as a network could
/// have lost them: a datagram is never sent twice. The error comes back from the next call if
/// it persists.
pub(super) fn send_each_segment(
    inner: &Evented<std::net::UdpSocket, true>,
    msgs: &[OutDatagram<'_>],
    wait: bool,
) -> io::Result<usize> {
    let mut out = [Outgoing::EMPTY; BATCH];
    // For each queued segment: its entry, and whether it is that entry's last.
    let mut owner = [(0usize, false); BATCH];
    let mut queued = 0;
    'fill: for (i, m) in msgs.iter().enumerate() {
        let size = m.segmented().unwrap_or(m.buf.len()).max(1);
        let count = m.buf.len().div_ceil(size).max(1);
        for (j, seg) in m
            .buf
            .chunks(size)
            .chain(m.buf.is_empty().then_some(m.buf))
            .enumerate()
        {
            if queued == BATCH {
                break 'fill;
            }
            out[queued] = Outgoing {
                buf: seg,
                addr: m.addr,
                segment_size: 0,
            };
            owner[queued] = (i, j + 1 == count);
            queued += 1;
        }
    }
    let fd = inner.io.as_raw_fd();
    let first = |_: &std::net::UdpSocket| mmsg::send(fd, &out[..queued]);
    let sent = if wait {
        inner.op(Dir::Write, first, |_| false)?
    } else {
        inner.try_op(Dir::Write, first, |_| false)?
    };
    if sent == 0 {
        // `sendmmsg` sends one entry or fails; this only keeps a broken kernel from a panic.
        return Err(io::ErrorKind::WriteZero.into());
    }
    let done = owner[..sent].iter().filter(|(_, last)| *last).count();
    let (entry, last) = owner[sent - 1];
    if last {
        return Ok(done);
    }
    // `entry` is partly sent: the rest of its segments, from the first one that did not go.
    let m = &msgs[entry];
    let size = m.segmented().unwrap_or(m.buf.len()).max(1);
    let sent_of_entry = owner[..sent].iter().filter(|(e, _)| *e == entry).count();
    let mut rest = &m.buf[sent_of_entry * size..];
    while !rest.is_empty() {
        let mut k = 0;
        for seg in rest.chunks(size).take(BATCH) {
            out[k] = Outgoing {
                buf: seg,
                addr: m.addr,
                segment_size: 0,
            };
            k += 1;
        }
        match inner.op(Dir::Write, |_| mmsg::send(fd, &out[..k]), |_| false) {
            Ok(n) if n > 0 => rest = &rest[(n * size).min(rest.len())..],
            _ => break,
        }
    }
    Ok(done + 1)
}
