//! The byte stream a connection runs over: [`Transport`], `Read + Write` plus what the
//! connection loop must know of and do with a connection, and the transports of the server's
//! own sockets, [`Tcp`] and [`Unix`].
//!
//! # Required: what every transport answers
//!
//! Every method of [`Transport`] is required. Each is something the connection loop acts on,
//! and a default would answer for a transport that never said: a wrapper that forgot to
//! forward [`shutdown_handle`](Transport::shutdown_handle) would leave its connections out of
//! graceful shutdown, one that forgot [`alpn`](Transport::alpn) would serve HTTP/2 clients as
//! HTTP/1.1, one without [`when_readable`](Transport::when_readable) would hold a stack per
//! idle connection, all without a word. So each transport states, in its own impl:
//!
//! - the timeouts and the shutdown: [`set_read_timeout`](Transport::set_read_timeout),
//!   [`set_write_timeout`](Transport::set_write_timeout), [`shutdown`](Transport::shutdown),
//!   and [`shutdown_handle`](Transport::shutdown_handle), how graceful shutdown reaches the
//!   connection from another fiber;
//! - the other end: [`peer_addr`](Transport::peer_addr), and what TLS agreed on with it,
//!   [`alpn`](Transport::alpn) (the protocol, which decides HTTP/2) and
//!   [`server_name`](Transport::server_name) (SNI); `None` over a plain transport;
//! - reading apart from waiting: [`try_read`](Transport::try_read) never waits; the waits
//!   are [`wait_readable`](Transport::wait_readable) and
//!   [`wait_readable_or`](Transport::wait_readable_or) on the fiber's stack, and
//!   [`when_readable`](Transport::when_readable) without one.
//!
//! A transport that cannot do something says so in its impl: a blocking one (the impl for
//! [`std::net::TcpStream`] below) reads with a plain `read` in `try_read`, returns at once
//! from `wait_readable`, `Unsupported` from `wait_readable_or`, and `None` from
//! `when_readable` and `shutdown_handle`.
//!
//! # Capabilities: what a transport may do better
//!
//! Four ways of sending have a plain form that is always right and a better one only some
//! transports have: holding back partial frames (cork), the head before a file body, the
//! file itself (`sendfile`), and the last bytes with the close. They are one value, the
//! transport's [`Capabilities`], which [`Transport::capabilities`] returns: `Some` for [`Tcp`]
//! and [`crate::tls::Tls`]; `None`, with [`NoCapabilities`] as the type, for the others, which
//! then get the plain forms (each is described on [`Capabilities`]). A wrapper that passes
//! the bytes through forwards all four in one line, `self.inner.capabilities()` with
//! `type Caps = T::Caps`, as [`crate::proxy_protocol::ProxyProtocol`] does.
//!
//! The value's type is an associated type, so the connection loop calls it directly (no
//! virtual call on the send path), and for a transport without capabilities the `None` is
//! known at compile time: only the plain form is compiled.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::ops::Deref;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use fibra::fiber::Wait;
use fibra::net::{TcpStream, UnixStream};
use fibra::sync::Notify;

use crate::going_away::GoingAway;

mod capabilities;

pub(crate) use capabilities::{copy_file, send_file, set_cork, write_before_file, write_last};
pub use capabilities::{Capabilities, NoCapabilities};

/// A connection's transport; every method is required. See the module docs.
pub trait Transport: Read + Write + 'static {
    /// Bounds every following read (`None`: no bound). Called once per request phase, so it
    /// should be cheap (it is an atomic store on fibra streams).
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;

    /// Bounds every following write.
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;

    /// Shuts down one or both directions (used for lingering close).
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;

    /// A handle through which another fiber can shut this connection down while it waits:
    /// graceful shutdown shuts the reading side of idle connections (their wait ends and the
    /// next read finds the end of the stream), and both sides of those still open after the
    /// grace period. `None` for a transport nothing else can reach (a blocking or in-memory
    /// one): such a connection ends at its idle timeout, or when the server's runtime stops.
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>>;

    /// The client's address, if the transport has one.
    fn peer_addr(&self) -> Option<SocketAddr>;

    /// The application protocol TLS's ALPN agreed on (`b"h2"`, `b"http/1.1"`) once the
    /// handshake is done; `None` without TLS or without ALPN. `h2` has the connection loop
    /// serve HTTP/2 from the connection's first byte, whatever that byte is.
    fn alpn(&self) -> Option<&[u8]>;

    /// The host name the client sent in TLS's SNI extension, once the handshake is done;
    /// `None` without TLS or without SNI.
    fn server_name(&self) -> Option<&str>;

    /// Reads what has already arrived, without waiting: `WouldBlock` when nothing has.
    ///
    /// The connection loop waits for input in its idle stage (without a stack,
    /// [`when_readable`](Transport::when_readable), or on the connection's own,
    /// [`wait_readable`](Transport::wait_readable)) and reads, parses and responds on a stack
    /// the worker lends, so an idle connection holds no more than its own stack. A blocking
    /// transport may do a plain `read` here, which waits (at most the read timeout, reported
    /// as `TimedOut`): right without that split.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize>;

    /// Waits until [`try_read`](Transport::try_read) may make progress, for at most the read
    /// timeout (then `TimedOut` or `WouldBlock`). A blocking transport returns at once.
    fn wait_readable(&self) -> io::Result<()>;

    /// Waits until [`try_read`](Transport::try_read) may make progress or `notify` is
    /// notified, for at most the read timeout; true if it was notified (see
    /// [`crate::outbox::Outbox`], the queue other fibers send through). A transport that
    /// cannot wait for both returns `Unsupported`: other fibers cannot send on it, and an
    /// HTTP/2 connection over it ends at its first wait.
    fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool>;

    /// [`wait_readable`](Transport::wait_readable) without a stack: the wait a fiber made of
    /// steps returns as its next step (see [`fibra::fiber::Step`]), honouring the read timeout
    /// (`TimedOut`). With one, an idle connection of the server holds no stack (the connection
    /// loop's idle stage); with `None` it waits on its fiber's stack.
    fn when_readable(&self) -> Option<Wait>;

    /// The type of this transport's [`Capabilities`]: [`NoCapabilities`] for none.
    type Caps: Capabilities;

    /// This transport's [`Capabilities`] (see the module docs); `None`: the plain forms.
    fn capabilities(&mut self) -> Option<&mut Self::Caps>;
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
    ($(#[$doc:meta])* $name:ident($stream:ty), peer: $peer:expr, caps: {$($caps:tt)*}) => {
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
            fn alpn(&self) -> Option<&[u8]> {
                None
            }
            fn server_name(&self) -> Option<&str> {
                None
            }
            $($caps)*
        }
    };
}

socket_transport! {
    /// The transport of a server connection over TCP: a fibra `TcpStream`, shared with the
    /// server's shutdown logic. Derefs to [`fibra::net::TcpStream`]; this is the type to
    /// [`crate::Upgraded::downcast`] to.
    Tcp(TcpStream),
    peer: |s| s.peer_addr().ok(),
    caps: {
        type Caps = Tcp;
        fn capabilities(&mut self) -> Option<&mut Tcp> {
            Some(self)
        }
    }
}

/// `TCP_CORK`, the head with `MSG_MORE` (no cork to undo), `sendfile`.
impl Capabilities for Tcp {
    fn set_cork(&mut self, on: bool) -> io::Result<()> {
        self.0.stream.set_cork(on)
    }
    fn write_before_file(&mut self, head: &[u8]) -> io::Result<bool> {
        self.0.stream.write_all_more(head)?;
        Ok(false)
    }
    fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        self.0.stream.sendfile(file, offset, len)
    }
    /// The bytes, then the FIN: TCP has nothing to fold together.
    fn write_last(&mut self, last: &[u8]) -> io::Result<()> {
        (&self.0.stream).write_all(last)?;
        self.0.stream.shutdown(Shutdown::Write)
    }
}

socket_transport! {
    /// The transport of a server connection over a Unix-domain socket: a fibra `UnixStream`,
    /// shared with the server's shutdown logic. Derefs to [`fibra::net::UnixStream`]; this is
    /// the type to [`crate::Upgraded::downcast`] to. It has no IP peer: requests see
    /// `peer_addr() == None`.
    Unix(UnixStream),
    peer: |_| None,
    // No cork or `sendfile` on fibra's Unix streams: files are copied by reads and writes.
    caps: {
        type Caps = NoCapabilities;
        fn capabilities(&mut self) -> Option<&mut NoCapabilities> {
            None
        }
    }
}

/// Blocking std sockets: handy for tests and for running the connection loop on OS threads.
/// Reads wait (within the read timeout), there is no stackless wait, and nothing else can
/// reach the socket to shut it down.
impl Transport for std::net::TcpStream {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_read_timeout(self, timeout)
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_write_timeout(self, timeout)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        std::net::TcpStream::shutdown(self, how)
    }
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        None
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        std::net::TcpStream::peer_addr(self).ok()
    }
    fn alpn(&self) -> Option<&[u8]> {
        None
    }
    fn server_name(&self) -> Option<&str> {
        None
    }
    /// A blocking read: it waits, at most the read timeout, reported as `TimedOut`.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.read(buf) {
            // std reports a read timeout as `WouldBlock`.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                Err(io::Error::new(io::ErrorKind::TimedOut, e))
            }
            r => r,
        }
    }
    /// At once: `try_read` does the waiting.
    fn wait_readable(&self) -> io::Result<()> {
        Ok(())
    }
    fn wait_readable_or(&self, _: &Notify) -> io::Result<bool> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a blocking socket cannot wait for input and a notification at once",
        ))
    }
    fn when_readable(&self) -> Option<Wait> {
        None
    }
    type Caps = NoCapabilities;
    fn capabilities(&mut self) -> Option<&mut NoCapabilities> {
        None
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
