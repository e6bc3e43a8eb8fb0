//! [`ProxyProtocol`]: the transport that reads a PROXY header before anything else, then
//! passes the stream through with the client's address from the header.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::fiber::Wait;
use fibra::sync::Notify;

use super::parse::{parse_header, MAX_HEADER_BYTES};
use crate::transport::{ShutdownHandle, Transport};

/// Where a connection is in its PROXY header.
enum Stage {
    /// Receiving the header: the bytes so far.
    Header(Vec<u8>),
    /// Done; bytes that came after the header in the same reads, handed out first.
    Leftover(Vec<u8>, usize),
    /// Done: reads go straight to the transport underneath.
    Plain,
}

/// A connection that starts with a PROXY header, over the transport `T` (usually
/// [`crate::Tcp`]), made by [`ProxyProtocolAcceptor`](super::ProxyProtocolAcceptor). See
/// [`crate::proxy_protocol`].
///
/// The header is read by the first reads (in the connection's fiber, never the accept loop);
/// those reads return `WouldBlock` until it is complete, then the stream's bytes. Readiness,
/// timeouts, writes, the shutdown handle, the ALPN protocol and SNI name, and the
/// [`Capabilities`](crate::transport::Capabilities) (`sendfile`) are `T`'s.
pub struct ProxyProtocol<T> {
    io: T,
    stage: Stage,
    /// The client's address from the header, once read.
    source: Option<SocketAddr>,
    /// The header's deadline: the first read timeout the connection loop sets (the header
    /// timeout), counted from then.
    deadline: Cell<Option<Instant>>,
    /// The read timeout the loop last asked for (restored once the header is in).
    asked: Cell<Option<Duration>>,
}

impl<T> std::fmt::Debug for ProxyProtocol<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stage = match &self.stage {
            Stage::Header(b) => format!("header ({} bytes so far)", b.len()),
            Stage::Leftover(b, pos) => format!("{} bytes after the header", b.len() - pos),
            Stage::Plain => "plain".into(),
        };
        f.debug_struct("ProxyProtocol")
            .field("stage", &stage)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl<T: Transport> ProxyProtocol<T> {
    /// Wraps `io`, whose first bytes must be a PROXY header.
    pub fn new(io: T) -> ProxyProtocol<T> {
        ProxyProtocol {
            io,
            stage: Stage::Header(Vec::new()),
            source: None,
            deadline: Cell::new(None),
            asked: Cell::new(None),
        }
    }

    /// Wraps `io` without a PROXY header: reads pass through, the peer address is `io`'s (a
    /// connection from a source that is not trusted to send one).
    pub fn passthrough(io: T) -> ProxyProtocol<T> {
        ProxyProtocol {
            stage: Stage::Plain,
            ..ProxyProtocol::new(io)
        }
    }

    /// The transport underneath.
    pub fn inner(&self) -> &T {
        &self.io
    }

    /// Whether the header has been read.
    pub fn header_done(&self) -> bool {
        !matches!(self.stage, Stage::Header(_))
    }

    /// Takes in header bytes with `read` (the inner transport's blocking or non-blocking
    /// read) until the header is complete: Ok(true) then, Ok(false) at the end of the stream
    /// (nothing to serve), `WouldBlock` (non-blocking) while it waits, `TimedOut` past the
    /// deadline, `InvalidData` for a bad header.
    fn read_header(
        &mut self,
        read: fn(&mut T, &mut [u8]) -> io::Result<usize>,
    ) -> io::Result<bool> {
        let Stage::Header(bytes) = &mut self.stage else {
            return Ok(true);
        };
        loop {
            let have = bytes.len();
            // Up to what a v1 header or a v2 preamble needs first, then what v2 announces:
            // reading little more than the header leaves the request to the loop's buffer.
            bytes.resize(MAX_HEADER_BYTES, 0);
            let r = read(&mut self.io, &mut bytes[have..]);
            let n = match r {
                Ok(n) => n,
                Err(e) => {
                    bytes.truncate(have);
                    if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut
                    {
                        if let Some(d) = self.deadline.get() {
                            let now = Instant::now();
                            if now >= d {
                                return Err(io::Error::new(
                                    io::ErrorKind::TimedOut,
                                    "PROXY protocol: no complete header within the header timeout",
                                ));
                            }
                            // The next wait ends at the deadline, not a full timeout later.
                            let _ = self.io.set_read_timeout(Some(d - now));
                        }
                    }
                    return Err(e);
                }
            };
            bytes.truncate(have + n);
            if n == 0 {
                return Ok(false);
            }
            match parse_header(bytes) {
                Ok(None) => continue,
                Ok(Some(h)) => {
                    self.source = h.source;
                    let rest = bytes.split_off(h.len);
                    self.stage = if rest.is_empty() {
                        Stage::Plain
                    } else {
                        Stage::Leftover(rest, 0)
                    };
                    let _ = self.io.set_read_timeout(self.asked.get());
                    return Ok(true);
                }
                Err(e) => {
                    log::debug!("closing the connection from {:?}: {e}", self.io.peer_addr());
                    return Err(e);
                }
            }
        }
    }

    /// Hands out bytes that came after the header, if any are left.
    fn leftover(&mut self, buf: &mut [u8]) -> Option<usize> {
        let Stage::Leftover(rest, pos) = &mut self.stage else {
            return None;
        };
        let n = (rest.len() - *pos).min(buf.len());
        buf[..n].copy_from_slice(&rest[*pos..*pos + n]);
        *pos += n;
        if *pos == rest.len() {
            self.stage = Stage::Plain;
        }
        Some(n)
    }

    /// A read: the header first (with `read`), then what came after it, then the stream.
    fn read_with(
        &mut self,
        buf: &mut [u8],
        read: fn(&mut T, &mut [u8]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        if let Stage::Plain = self.stage {
            return read(&mut self.io, buf);
        }
        if !self.read_header(read)? {
            return Ok(0);
        }
        match self.leftover(buf) {
            Some(n) => Ok(n),
            None => read(&mut self.io, buf),
        }
    }

    fn has_leftover(&self) -> bool {
        matches!(self.stage, Stage::Leftover(..))
    }
}

impl<T: Transport> Read for ProxyProtocol<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(buf, |io, b| io.read(b))
    }
}

impl<T: Transport> Write for ProxyProtocol<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io.write(buf)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.io.write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.io.flush()
    }
}

impl<T: Transport> Transport for ProxyProtocol<T> {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.asked.set(timeout);
        let Stage::Header(_) = self.stage else {
            return self.io.set_read_timeout(timeout);
        };
        // The first timeout the loop sets is the header timeout: the header's deadline.
        let now = Instant::now();
        let deadline = match self.deadline.get() {
            Some(d) => d,
            None => match timeout.and_then(|t| now.checked_add(t)) {
                Some(d) => {
                    self.deadline.set(Some(d));
                    d
                }
                None => return self.io.set_read_timeout(timeout),
            },
        };
        let left = deadline
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        self.io
            .set_read_timeout(Some(timeout.map_or(left, |t| t.min(left))))
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.io.set_write_timeout(timeout)
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        self.source.or_else(|| self.io.peer_addr())
    }
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(buf, |io, b| io.try_read(b))
    }
    fn wait_readable(&self) -> io::Result<()> {
        if self.has_leftover() {
            return Ok(());
        }
        self.io.wait_readable()
    }
    fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool> {
        if self.has_leftover() {
            return Ok(false);
        }
        self.io.wait_readable_or(notify)
    }
    fn when_readable(&self) -> Option<Wait> {
        // Bytes already here: wait on the stack (`wait_readable`, which returns at once).
        if self.has_leftover() {
            return None;
        }
        self.io.when_readable()
    }
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        self.io.shutdown_handle()
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }
    /// `T`'s: a balancer that passes TLS through sends the header before it, so TLS wraps
    /// this transport, not the other way round.
    fn alpn(&self) -> Option<&[u8]> {
        self.io.alpn()
    }
    fn server_name(&self) -> Option<&str> {
        self.io.server_name()
    }
    // Writes pass straight through: `T`'s cork, `sendfile` and last write serve as they are.
    type Caps = T::Caps;
    fn capabilities(&mut self) -> Option<&mut T::Caps> {
        self.io.capabilities()
    }
}
