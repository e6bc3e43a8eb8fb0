//! The PROXY protocol (HAProxy's, versions 1 and 2), as a transport over another one: behind
//! a balancer that opens each connection with a PROXY header (HAProxy's `send-proxy` or
//! `send-proxy-v2`, AWS NLB, nginx's `proxy_protocol on`), the client's own address is in
//! that header, not in the socket. [`ProxyProtocol`] reads the header before anything else
//! and then passes the stream through; its [`Transport::peer_addr`] is the client's address,
//! so requests ([`crate::Request::peer_addr`]) and the access log see it.
//!
//! - The header is parsed by the `ppp` crate; v1 and v2 are told apart by their first bytes.
//! - A connection whose first bytes are not a valid header (a missing header, a wrong
//!   signature, a malformed address, a v2 header announcing more than [`MAX_HEADER_BYTES`],
//!   a stream that ends inside the header) is closed without an answer: a server configured
//!   for the PROXY protocol must not take a client's bytes for a header, nor answer a client
//!   that bypassed the balancer.
//! - The header must arrive within the header timeout (together with the first request head:
//!   one deadline from the accept, like TLS's handshake): a connection still without one at
//!   the deadline is closed.
//! - `LOCAL` (v2, a balancer's own health check) and `UNKNOWN` (v1), unspecified and
//!   Unix-socket addresses keep the socket's own peer address, as the specification says.
//!   TLVs are skipped.
//!
//! - Optionally only some sources are balancers ([`crate::Server::proxy_protocol_from`],
//!   HAProxy's `tcp-request connection expect-proxy layer4 if { src ... }`): a connection
//!   from a trusted network must start with a header as above, one from elsewhere is served
//!   as a plain connection with its socket's address (bytes shaped like a PROXY header are
//!   then a malformed request, never believed). So a balancer and direct clients
//!   (a health probe, say) can share a port, and nobody outside the trusted networks can
//!   claim an address. nginx's `set_real_ip_from` instead still requires the header from
//!   everyone and ignores its address from others; refusing such connections outright is
//!   a firewall's job.
//!
//! As a library: [`crate::Server::proxy_protocol`] wraps every worker's acceptor (before
//! [`crate::Server::tls`], if the balancer passes TLS through: the header comes first, in the
//! clear):
//!
//! ```no_run
//! use fibra_http::{Request, Response, Server};
//!
//! Server::bind("127.0.0.1:8080")
//!     .proxy_protocol()
//!     .run(|req: Request| Response::new(format!("you are {:?}\n", req.peer_addr()).into()))?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::fiber::Wait;
use fibra::sync::Notify;
use ppp::{v1, v2, HeaderResult};

use crate::acceptor::{Acceptor, TcpAcceptor};
use crate::ip_net::IpNet;
use crate::server::Server;
use crate::transport::{ShutdownHandle, Transport};

/// The longest header accepted: a v2 header whose 16-byte preamble announces more (addresses
/// and TLVs) closes the connection. A v1 header is at most 107 bytes; HAProxy's v2 headers,
/// TLVs included (ALPN, SNI, unique ID, TLS details), stay well under this.
pub const MAX_HEADER_BYTES: usize = 4096;

/// The v2 signature's length plus version, family and the 2-byte length.
const V2_PREAMBLE: usize = 16;

/// How a v1 header starts.
const V1_SIGNATURE: &[u8] = b"PROXY ";

/// The longest v1 header, CRLF included (the specification's figure).
const V1_MAX_BYTES: usize = 107;

/// A parsed PROXY header: its length and the addresses it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The header's length in bytes (what follows is the client's stream).
    pub len: usize,
    /// The client's address; `None` for `LOCAL`, `UNKNOWN`, unspecified or Unix addresses
    /// (the connection's own peer address stands).
    pub source: Option<SocketAddr>,
    /// The address the client connected to (on the balancer), when `source` is known.
    pub destination: Option<SocketAddr>,
}

/// Parses a PROXY header (v1 or v2) at the start of `input`: `Ok(None)` while it is
/// incomplete, an `InvalidData` error naming the problem when it cannot become valid.
pub fn parse_header(input: &[u8]) -> io::Result<Option<Header>> {
    let invalid =
        |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("PROXY protocol: {why}"));
    let wrong_signature = || invalid("no PROXY header (wrong signature)".into());
    // Where the header ends is decided here, from the signature and the v1 line end or the
    // v2 length; `ppp` parses only a whole header, and anything it finds incomplete then is
    // invalid. (Its own notion of "incomplete" is not monotonic in the input: a prefix cut
    // inside a field, or a line with fields missing, could be refused or waited on where
    // more bytes give the other answer; found by the fuzz target.)
    let end = if input.first() == Some(&b'\r') {
        let signature = v2::PROTOCOL_PREFIX;
        let n = input.len().min(signature.len());
        if input[..n] != signature[..n] {
            return Err(wrong_signature());
        }
        if input.len() < V2_PREAMBLE {
            return Ok(None);
        }
        let total = V2_PREAMBLE + usize::from(u16::from_be_bytes([input[14], input[15]]));
        if total > MAX_HEADER_BYTES {
            return Err(invalid(format!(
                "a v2 header of {total} bytes, more than the {MAX_HEADER_BYTES} accepted"
            )));
        }
        if input.len() < total {
            return Ok(None);
        }
        total
    } else {
        let n = input.len().min(V1_SIGNATURE.len());
        if input[..n] != V1_SIGNATURE[..n] {
            return Err(wrong_signature());
        }
        let cr = memchr::memchr(b'\r', input);
        let line = &input[..cr.unwrap_or(input.len())];
        if !line.is_ascii() {
            return Err(invalid("bad v1 header: not ASCII".into()));
        }
        match cr {
            Some(cr) if cr + 2 > V1_MAX_BYTES => {
                return Err(invalid("bad v1 header: longer than 107 bytes".into()))
            }
            Some(cr) if input.len() < cr + 2 => return Ok(None),
            Some(cr) if input[cr + 1] != b'\n' => {
                return Err(invalid("bad v1 header: CR without LF".into()))
            }
            Some(cr) => cr + 2,
            None if input.len() >= V1_MAX_BYTES => {
                return Err(invalid("bad v1 header: no CRLF in 107 bytes".into()))
            }
            None => return Ok(None),
        }
    };
    let header = &input[..end];
    let parsed: HeaderResult<'_> = if header[0] == b'\r' {
        v2::Header::try_from(header).into()
    } else {
        v1::Header::try_from(header).into()
    };
    let addrs = match parsed {
        HeaderResult::V1(Ok(h)) => match h.addresses {
            v1::Addresses::Tcp4(a) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            v1::Addresses::Tcp6(a) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            v1::Addresses::Unknown => None,
        },
        HeaderResult::V2(Ok(h)) => match (h.command, h.addresses) {
            (v2::Command::Local, _) => None,
            (_, v2::Addresses::IPv4(a)) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            (_, v2::Addresses::IPv6(a)) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            (_, v2::Addresses::Unspecified | v2::Addresses::Unix(_)) => None,
        },
        HeaderResult::V1(Err(e)) => return Err(invalid(format!("bad v1 header: {e}"))),
        HeaderResult::V2(Err(e)) => return Err(invalid(format!("bad v2 header: {e}"))),
    };
    Ok(Some(Header {
        len: end,
        source: addrs.map(|a| a.0),
        destination: addrs.map(|a| a.1),
    }))
}

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
/// [`crate::Tcp`]), made by [`ProxyProtocolAcceptor`]. See the module docs.
///
/// The header is read by the first reads (in the connection's fiber, never the accept loop);
/// those reads return `WouldBlock` until it is complete, then the stream's bytes. Readiness,
/// timeouts, writes, `sendfile` and the shutdown handle are `T`'s.
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
    fn write_last(&mut self, last: &[u8]) -> io::Result<()> {
        self.io.write_last(last)
    }
    fn set_cork(&self, on: bool) -> io::Result<()> {
        self.io.set_cork(on)
    }
    fn write_before_file(&mut self, head: &[u8]) -> io::Result<bool> {
        self.io.write_before_file(head)
    }
    fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        self.io.send_file(file, offset, len)
    }
}

/// Accepts connections from `A` (TCP by default) that start with a PROXY header: each is a
/// [`ProxyProtocol`] transport, whose header is read in the connection's fiber.
#[derive(Debug, Clone)]
pub struct ProxyProtocolAcceptor<A = TcpAcceptor> {
    inner: A,
    /// Sources that send a header (`None`: all).
    trusted: Option<Arc<[IpNet]>>,
}

impl<A: Acceptor> ProxyProtocolAcceptor<A> {
    /// Expects a PROXY header on every connection of `inner`.
    pub fn new(inner: A) -> ProxyProtocolAcceptor<A> {
        ProxyProtocolAcceptor {
            inner,
            trusted: None,
        }
    }

    /// Expects a PROXY header on the connections of `inner` from an address in `trusted`;
    /// the others (and those without an IP address, over a Unix socket) are served without
    /// one ([`ProxyProtocol::passthrough`]). See the module docs.
    pub fn trusting(inner: A, trusted: Arc<[IpNet]>) -> ProxyProtocolAcceptor<A> {
        ProxyProtocolAcceptor {
            inner,
            trusted: Some(trusted),
        }
    }

    /// The acceptor underneath.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

impl<A: Acceptor> Acceptor for ProxyProtocolAcceptor<A> {
    type Io = ProxyProtocol<A::Io>;

    fn accept(&self) -> io::Result<ProxyProtocol<A::Io>> {
        let io = self.inner.accept()?;
        let Some(trusted) = &self.trusted else {
            return Ok(ProxyProtocol::new(io));
        };
        match io.peer_addr() {
            Some(peer) if trusted.iter().any(|net| net.contains(peer.ip())) => {
                Ok(ProxyProtocol::new(io))
            }
            _ => Ok(ProxyProtocol::passthrough(io)),
        }
    }

    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.set_accept_timeout(timeout)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.inner.local_addr()
    }
}

impl<A: Acceptor> Server<A> {
    /// Expects a PROXY protocol header (v1 or v2) at the start of every connection, and
    /// takes the client's address from it (see [`crate::proxy_protocol`]). Call it before
    /// [`Server::tls`] when the balancer passes TLS through.
    pub fn proxy_protocol(self) -> Server<ProxyProtocolAcceptor<A>> {
        self.wrap_acceptor(ProxyProtocolAcceptor::new)
    }

    /// [`Server::proxy_protocol`] for connections from the `trusted` networks only: the
    /// others are served without a header, with their socket's address (HAProxy's
    /// `expect-proxy layer4 if { src ... }`; see [`crate::proxy_protocol`]).
    pub fn proxy_protocol_from(
        self,
        trusted: impl IntoIterator<Item = IpNet>,
    ) -> Server<ProxyProtocolAcceptor<A>> {
        let trusted: Arc<[IpNet]> = trusted.into_iter().collect();
        self.wrap_acceptor(move |a| ProxyProtocolAcceptor::trusting(a, trusted.clone()))
    }
}
