//! The byte stream a connection runs over: `Read + Write` plus the few socket controls the
//! connection loop needs. [`Tcp`] and [`Unix`] (the server's fibra sockets) implement
//! everything, the stackless idle wait and the shutdown handle included; [`crate::tls::Tls`]
//! wraps one of them in TLS, forwarding readiness, the timeouts and the shutdown handle and
//! keeping the default `send_file` (read + write, since the bytes must be encrypted anyway).

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use fibra::fiber::Wait;
use fibra::net::{TcpStream, UnixStream};
use fibra::sync::Notify;

use crate::going_away::GoingAway;

/// A connection's transport. See the module docs.
pub trait Transport: Read + Write + 'static {
    /// Bounds every following read (`None`: no bound). Called once per request phase, so it
    /// should be cheap (it is an atomic store on fibra streams).
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// Bounds every following write.
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// The client's address, if the transport has one.
    fn peer_addr(&self) -> Option<SocketAddr>;
    /// Reads what has already arrived, without waiting: `WouldBlock` when nothing has.
    ///
    /// The connection loop waits for input in its idle stage (without a stack,
    /// [`when_readable`](Transport::when_readable), or on the connection's own,
    /// [`wait_readable`](Transport::wait_readable)) and reads, parses and responds on a stack
    /// the worker lends, so an idle connection holds no more than its own stack. Default:
    /// a plain `read`, which may wait (up to the read timeout, reported as `TimedOut`) — right
    /// for a blocking transport, only without that split.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.read(buf) {
            // A blocking read that says `WouldBlock` has run into its timeout.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                Err(io::Error::new(io::ErrorKind::TimedOut, e))
            }
            r => r,
        }
    }
    /// Waits until [`try_read`](Transport::try_read) may make progress, for at most the read
    /// timeout (then `TimedOut` or `WouldBlock`). Default: returns at once.
    fn wait_readable(&self) -> io::Result<()> {
        Ok(())
    }
    /// Waits until [`try_read`](Transport::try_read) may make progress or `notify` is
    /// notified, for at most the read timeout; true if it was notified (see
    /// [`crate::outbox::Outbox`], the queue other fibers send through). Default:
    /// `Unsupported` — a transport that other fibers send on must implement it.
    fn wait_readable_or(&self, _notify: &Notify) -> io::Result<bool> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this transport cannot wait for input and a notification at once",
        ))
    }
    /// [`wait_readable`](Transport::wait_readable) without a stack: the wait a fiber made of
    /// steps returns as its next step (see [`fibra::fiber::Step`]), honouring the read timeout
    /// (`TimedOut`). With one, an idle connection of the server holds no stack (the connection
    /// loop's idle stage); `None` (the default): it waits on its fiber's stack.
    fn when_readable(&self) -> Option<Wait> {
        None
    }
    /// A handle through which another fiber can shut this connection down while it waits:
    /// graceful shutdown shuts the reading side of idle connections (their wait ends and the
    /// next read finds the end of the stream), and both sides of those still open after the
    /// grace period. Default: `None` — such a connection ends at its idle timeout, or when the
    /// server's runtime stops.
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        None
    }
    /// Shuts down one or both directions (used for lingering close).
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
    /// Sends `last`, the connection's final bytes, and shuts the writing side down (the
    /// start of a lingering close). Default: `write_all`, then `shutdown(Write)`;
    /// [`crate::tls::Tls`] sends the last records and its `close_notify` in one write.
    fn write_last(&mut self, last: &[u8]) -> io::Result<()> {
        self.write_all(last)?;
        self.shutdown(Shutdown::Write)
    }
    /// Holds back partial frames until uncorked (TCP_CORK), so a response head and the file
    /// that follows leave in one packet. Default: no-op.
    fn set_cork(&self, _on: bool) -> io::Result<()> {
        Ok(())
    }
    /// Writes `head`, the bytes before a file body that [`send_file`](Transport::send_file)
    /// sends next, so that they leave together in full frames. Returns true when the caller
    /// must [`set_cork(false)`](Transport::set_cork) after the body. Default: cork, then
    /// `write_all`; TCP sends the head with `MSG_MORE` instead (no cork to undo).
    fn write_before_file(&mut self, head: &[u8]) -> io::Result<bool> {
        let _ = self.set_cork(true);
        self.write_all(head)?;
        Ok(true)
    }
    /// Whether the transport negotiated HTTP/2 (TLS's ALPN chose `h2`): the connection is
    /// then served as HTTP/2 from its first byte, whatever that byte is. Default: false.
    fn negotiated_h2(&self) -> bool {
        false
    }
    /// Sends `len` bytes of `file` from `offset`; returns the bytes sent (fewer only if the
    /// file is shorter). Default: positional reads into a buffer, then `write_all`.
    fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        copy_file(self, file, offset, len, 64 * 1024)
    }
}

/// Writes `len` bytes of `file` from `offset` to `out`, read in pieces of at most `piece`
/// bytes, each written with `write_all`; returns the bytes sent (fewer only if the file is
/// shorter). The default [`Transport::send_file`], and TLS's with larger pieces.
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

/// Shuts a connection down from another fiber or thread (see
/// [`Transport::shutdown_handle`]). Implemented by fibra's sockets, which are shared by
/// reference.
pub trait ShutdownHandle: Send + Sync {
    /// Shuts down one or both directions.
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
    /// Room for the server's bookkeeping of the connection in the handle's own allocation
    /// (the same [`ConnState`] on every call), which saves the server an allocation per
    /// connection; [`Tcp`]'s and [`Unix`]'s handles have it. Default: `None`.
    fn conn_state(&self) -> Option<&ConnState> {
        None
    }
}

impl std::fmt::Debug for dyn ShutdownHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShutdownHandle")
            .field("conn_state", &self.conn_state())
            .finish_non_exhaustive()
    }
}

/// The server's bookkeeping of one connection, for graceful shutdown: whether it is idle
/// between requests, and whether shutdown has woken it. Opaque; see
/// [`ShutdownHandle::conn_state`].
#[derive(Debug, Default)]
pub struct ConnState {
    /// Set while the connection waits for the next request with nothing buffered.
    pub(crate) idle: AtomicBool,
    /// Shutdown has shut its reading side (once).
    pub(crate) woken: AtomicBool,
    /// Made when the connection is upgraded; shutdown sets it (see [`GoingAway`]).
    pub(crate) going_away: OnceLock<Arc<GoingAway>>,
}

/// A socket shared by its connection and the server's shutdown logic, with the server's
/// bookkeeping of the connection in the same allocation.
#[derive(Debug)]
struct SharedSocket<S> {
    stream: S,
    state: ConnState,
    /// The peer's address, from the accept (no `getpeername` per connection).
    peer: Option<SocketAddr>,
}

impl ShutdownHandle for TcpStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        TcpStream::shutdown(self, how)
    }
}

impl ShutdownHandle for UnixStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        UnixStream::shutdown(self, how)
    }
}

/// The operations of a socket shared by reference (`&TcpStream: Read + Write`), so [`Tcp`]
/// and [`Unix`] implement [`Transport`] once.
macro_rules! socket_transport {
    ($(#[$doc:meta])* $name:ident($stream:ty), peer: $peer:expr, extra: {$($extra:tt)*}) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(Arc<SharedSocket<$stream>>);

        impl $name {
            /// Wraps an accepted stream (asking the socket for its peer's address).
            pub fn new(stream: $stream) -> Self {
                let peer: fn(&$stream) -> Option<SocketAddr> = $peer;
                let addr = peer(&stream);
                Self::with_peer(stream, addr)
            }

            /// Wraps an accepted stream whose peer's address the accept returned.
            pub fn with_peer(stream: $stream, peer: Option<SocketAddr>) -> Self {
                $name(Arc::new(SharedSocket {
                    stream,
                    state: ConnState::default(),
                    peer,
                }))
            }
        }

        impl Deref for $name {
            type Target = $stream;
            fn deref(&self) -> &$stream {
                &self.0.stream
            }
        }

        impl ShutdownHandle for SharedSocket<$stream> {
            fn shutdown(&self, how: Shutdown) -> io::Result<()> {
                self.stream.shutdown(how)
            }
            fn conn_state(&self) -> Option<&ConnState> {
                Some(&self.state)
            }
        }

        impl Read for $name {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                (&self.0.stream).read(buf)
            }
        }

        impl Write for $name {
            // Forced inline, down to the system call: see the comment on `Shared`'s methods
            // in the connection loop.
            #[inline(always)]
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                (&self.0.stream).write(buf)
            }
            fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
                (&self.0.stream).write_vectored(bufs)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }

        impl Transport for $name {
            fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                self.0.stream.set_read_timeout(t)
            }
            fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                self.0.stream.set_write_timeout(t)
            }
            fn peer_addr(&self) -> Option<SocketAddr> {
                self.0.peer
            }
            fn shutdown(&self, how: Shutdown) -> io::Result<()> {
                self.0.stream.shutdown(how)
            }
            // Forced inline, down to the system call: see the comment on `Shared`'s methods
            // in the connection loop.
            #[inline(always)]
            fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.stream.try_read(buf)
            }
            fn wait_readable(&self) -> io::Result<()> {
                self.0.stream.readable()
            }
            fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool> {
                self.0.stream.readable_or_notified(notify)
            }
            fn when_readable(&self) -> Option<Wait> {
                Some(self.0.stream.when_readable())
            }
            fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
                Some(self.0.clone())
            }
            $($extra)*
        }
    };
}

socket_transport! {
    /// The transport of a server connection over TCP: a fibra `TcpStream`, shared with the
    /// server's shutdown logic. Derefs to [`fibra::net::TcpStream`]; this is the type to
    /// [`crate::Upgraded::downcast`] to.
    Tcp(TcpStream),
    peer: |s| s.peer_addr().ok(),
    extra: {
        fn set_cork(&self, on: bool) -> io::Result<()> {
            self.0.stream.set_cork(on)
        }
        fn write_before_file(&mut self, head: &[u8]) -> io::Result<bool> {
            self.0.stream.write_all_more(head)?;
            Ok(false)
        }
        fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
            self.0.stream.sendfile(file, offset, len)
        }
    }
}

socket_transport! {
    /// The transport of a server connection over a Unix-domain socket: a fibra `UnixStream`,
    /// shared with the server's shutdown logic. Derefs to [`fibra::net::UnixStream`]; this is
    /// the type to [`crate::Upgraded::downcast`] to. It has no IP peer: requests see
    /// `peer_addr() == None`.
    Unix(UnixStream),
    peer: |_| None,
    extra: {}
}

/// Blocking std sockets: handy for tests and for running the connection loop on OS threads.
impl Transport for std::net::TcpStream {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_read_timeout(self, timeout)
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_write_timeout(self, timeout)
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        std::net::TcpStream::peer_addr(self).ok()
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        std::net::TcpStream::shutdown(self, how)
    }
}

/// A failure for want of something on this side, not the peer's or the path's: descriptors
/// (`EMFILE`, `ENFILE`) or memory (`ENOBUFS`, `ENOMEM`). Usually over soon.
pub fn is_resource_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Treats `WouldBlock` (what std returns on a read timeout) and `TimedOut` alike.
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
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
