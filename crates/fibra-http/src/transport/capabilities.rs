//! [`Capabilities`]: the better ways of sending that some transports have (cork, the head
//! before a file, `sendfile`, the last bytes with the close), and the plain forms the
//! connection loop uses where a transport has none, among them [`copy_file`]: a file sent
//! by reads and writes.

use std::fs::File;
use std::io::{self, Write};
use std::net::Shutdown;
use std::os::unix::fs::FileExt;

use super::Transport;

/// The better ways of sending a transport may have: one value, so that a wrapper forwards
/// them all at once (see [`crate::transport`]). A transport has all four or none; each
/// method says what the connection loop does instead for one without
/// ([`Transport::capabilities`] returning `None`).
///
/// [`crate::Tcp`] corks with `TCP_CORK`, sends the head with `MSG_MORE` and the file with
/// `sendfile`; [`crate::tls::Tls`] corks the socket underneath and encrypts files in large
/// pieces, and sends its last records and `close_notify` in one write.
pub trait Capabilities {
    /// Holds back partial frames until uncorked (`TCP_CORK`), so a response head and the
    /// file that follows leave in full packets. Without: nothing is held back.
    fn set_cork(&mut self, on: bool) -> io::Result<()>;

    /// Writes `head`, the bytes before a file body that
    /// [`send_file`](Capabilities::send_file) sends next, so that they leave together in full
    /// frames. Returns true when the caller must [`set_cork(false)`](Capabilities::set_cork)
    /// after the body. Without: `write_all` (the head may leave in a packet of its own).
    fn write_before_file(&mut self, head: &[u8]) -> io::Result<bool>;

    /// Sends `len` bytes of `file` from `offset`; returns the bytes sent: fewer when the file
    /// is shorter, or when an error came after some bytes had left (reported, as `write`
    /// does, by the next call), so that the access log counts what left. Without: no `sendfile`; positional reads of 64 KiB into a buffer,
    /// each written with `write_all`.
    fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64>;

    /// Sends `last`, the connection's final bytes, and shuts the writing side down (the
    /// start of a lingering close, the end of an HTTP/2 connection). Without: `write_all`,
    /// then [`Transport::shutdown`] of the writing side.
    fn write_last(&mut self, last: &[u8]) -> io::Result<()>;
}

/// The [`Transport::Caps`] of a transport without [`Capabilities`]. It has no values, so
/// such a transport's [`Transport::capabilities`] can only return `None`, and the
/// connection loop compiles only the plain forms for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCapabilities {}

impl Capabilities for NoCapabilities {
    fn set_cork(&mut self, _: bool) -> io::Result<()> {
        match *self {}
    }
    fn write_before_file(&mut self, _: &[u8]) -> io::Result<bool> {
        match *self {}
    }
    fn send_file(&mut self, _: &File, _: u64, _: u64) -> io::Result<u64> {
        match *self {}
    }
    fn write_last(&mut self, _: &[u8]) -> io::Result<()> {
        match *self {}
    }
}

/// The pieces [`send_file`] reads a file in for a transport without `sendfile`.
const COPY_PIECE: usize = 64 * 1024;

/// [`Capabilities::set_cork`] on `io`, or nothing.
#[inline]
pub(crate) fn set_cork<T: Transport>(io: &mut T, on: bool) -> io::Result<()> {
    match io.capabilities() {
        Some(caps) => caps.set_cork(on),
        None => Ok(()),
    }
}

/// [`Capabilities::write_before_file`] on `io`, or `write_all` (false: nothing to uncork).
#[inline]
pub(crate) fn write_before_file<T: Transport>(io: &mut T, head: &[u8]) -> io::Result<bool> {
    match io.capabilities() {
        Some(caps) => caps.write_before_file(head),
        None => io.write_all(head).map(|()| false),
    }
}

/// [`Capabilities::send_file`] on `io`, or [`copy_file`] in 64 KiB pieces.
#[inline]
pub(crate) fn send_file<T: Transport>(
    io: &mut T,
    file: &File,
    offset: u64,
    len: u64,
) -> io::Result<u64> {
    match io.capabilities() {
        Some(caps) => caps.send_file(file, offset, len),
        None => copy_file(io, file, offset, len, COPY_PIECE),
    }
}

/// [`Capabilities::write_last`] on `io`, or `write_all` and then `shutdown(Write)`.
#[inline]
pub(crate) fn write_last<T: Transport>(io: &mut T, last: &[u8]) -> io::Result<()> {
    match io.capabilities() {
        Some(caps) => caps.write_last(last),
        None => {
            io.write_all(last)?;
            io.shutdown(Shutdown::Write)
        }
    }
}

/// Writes `len` bytes of `file` from `offset` to `out`, read in pieces of at most `piece`
/// bytes, each written with `write_all`; returns the bytes sent (fewer only if the file is
/// shorter). [`send_file`]'s plain form, and TLS's `send_file` with larger pieces.
pub(crate) fn copy_file<W: Write + ?Sized>(
    out: &mut W,
    file: &File,
    offset: u64,
    len: u64,
    piece: usize,
) -> io::Result<u64> {
    let size = len.min(piece as u64) as usize;
    let mut store = vec![0u8; size + 64];
    let buf = copy_buffer(&mut store, size);
    let mut sent = 0u64;
    while sent < len {
        let want = (len - sent).min(buf.len() as u64) as usize;
        let n = file.read_at(&mut buf[..want], offset + sent)?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        sent += n as u64;
    }
    Ok(sent)
}

/// Where in a 64-byte line [`copy_file`]'s buffer starts: 5 past a 16-byte boundary, like
/// the plaintext of a TLS record in rustls's buffer (a 5-byte record header in a 16-aligned
/// allocation), and well past the page boundary a file read copies from.
///
/// The reason is the CPU's string copy (`rep movsb`, which glibc's `memcpy` and the kernel's
/// copies use for large sizes): on AMD Zen 4 it copies about 25 times slower when the
/// destination's address is 1 to 15 bytes past the source's modulo 4 KiB (3.5 against
/// 50-90 GB/s for 16 KiB here). rustls's copy of each record's plaintext from a buffer that
/// started 16 bytes past a page landed there, and a 1 MiB response over TLS spent a third of
/// its CPU in that copy. With both 5 past a 16-byte boundary the distance is a multiple of
/// 16, and the file read's copy into the buffer starts 37 bytes or more past its page offset.
/// Other CPUs copy at full speed from any alignment.
const COPY_ALIGN: usize = 37;

/// `size` bytes of `store` (which has 64 to spare) starting at [`COPY_ALIGN`] within a
/// 64-byte line.
fn copy_buffer(store: &mut [u8], size: usize) -> &mut [u8] {
    let skip = skip_to_line_offset(store.as_ptr(), COPY_ALIGN);
    &mut store[skip..skip + size]
}

/// How far past `at` the next address `offset` bytes into a 64-byte line is (0 to 63).
pub(crate) fn skip_to_line_offset(at: *const u8, offset: usize) -> usize {
    (offset + 64 - at as usize % 64) % 64
}

#[cfg(test)]
mod tests {
    use super::{copy_buffer, COPY_ALIGN};

    /// Wherever the store lands, the piece starts at the same place in a 64-byte line, so
    /// its distance to a record's plaintext in rustls's buffer is a multiple of 16.
    #[test]
    fn copy_buffer_starts_at_the_same_place_in_a_line() {
        let mut store = vec![0u8; 1000 + 64 + 64];
        for shift in 0..64 {
            let store = &mut store[shift..shift + 1000 + 64];
            let base = store.as_ptr() as usize;
            let piece = copy_buffer(store, 1000);
            assert_eq!(piece.len(), 1000);
            let at = piece.as_ptr() as usize;
            assert_eq!(at % 64, COPY_ALIGN, "store shifted by {shift}");
            assert_eq!((at - 5) % 16, 0);
            assert!(at - base < 64);
        }
    }
}
