//! One connection to an upstream: the socket, its read buffer and the response parser
//! ([`fibra_http::client::ResponseParser`]), connecting, reading a response head and copying a
//! response body to the client with backpressure.
//!
//! The read buffer starts at [`READ_BYTES`] and grows only to hold a response head (up to
//! [`MAX_HEAD`]); body data passes through it a buffer at a time, so a body of any size costs
//! one buffer: the upstream is read only when the client has taken the previous piece.

use std::fmt;
use std::io::{self, Write};
use std::ops::Range;
use std::time::Duration;

use std::sync::Arc;

use fibra::net::TcpStream;
use rustls::ClientConfig;

use crate::error_log;
use crate::route::Upstream;
use crate::tls::UpStream;
use fibra_http::client::{
    Event, Framing, ParseError, Response as Parsed, ResponseParser, MAX_HEAD,
};
use fibra_http::response::BodyWriter;

/// Size of a connection's read buffer (body data is read this much at a time).
pub(crate) const READ_BYTES: usize = 32 * 1024;

/// What went wrong talking to an upstream.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Connecting failed (refused, unreachable, timed out).
    Connect(io::Error),
    /// Not connecting: the upstream's last connects failed, and its backoff
    /// ([`Upstream::down`]) says when to try again.
    Down {
        /// Failed connects in a row.
        failures: u32,
        /// Until the next try.
        wait: Duration,
    },
    /// Sending the request failed.
    Send(io::Error),
    /// Receiving the response failed, before or during its head.
    Recv(io::Error),
    /// The response is not valid HTTP, or ended early.
    Parse(ParseError),
}

impl Failure {
    /// Timed out (the proxy answers 504) rather than failed (502).
    pub(crate) fn is_timeout(&self) -> bool {
        match self {
            Failure::Connect(e) | Failure::Send(e) | Failure::Recv(e) => {
                fibra_http::transport::is_timeout(e)
            }
            Failure::Parse(_) | Failure::Down { .. } => false,
        }
    }

    /// What failed, as far as the error log's throttle tells failures apart.
    pub(crate) fn kind(&self) -> error_log::Kind {
        match self {
            Failure::Connect(_) | Failure::Down { .. } => error_log::Kind::Connect,
            Failure::Send(_) => error_log::Kind::Send,
            Failure::Recv(_) => error_log::Kind::Recv,
            Failure::Parse(_) => error_log::Kind::Malformed,
        }
    }
}

/// What failed, for messages: `connecting: Connection refused (os error 111)`.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "connecting: {e}"),
            Failure::Down { failures, wait } => write!(
                f,
                "not connecting: {failures} connects failed in a row, next try in {} ms",
                wait.as_millis()
            ),
            Failure::Send(e) => write!(f, "sending the request: {e}"),
            Failure::Recv(e) => write!(f, "reading the response: {e}"),
            Failure::Parse(e) => write!(f, "{e}"),
        }
    }
}

/// A failed TLS handshake, saying so (rustls's own message names only what failed, e.g.
/// `invalid peer certificate: UnknownIssuer`); a timeout stays a timeout (504).
fn tls_failed(e: io::Error) -> io::Error {
    if fibra_http::transport::is_timeout(&e) {
        return e;
    }
    io::Error::new(e.kind(), format!("TLS handshake: {e}"))
}

/// Timeouts of one upstream connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) connect: Duration,
    pub(crate) read: Duration,
    pub(crate) write: Duration,
}

/// A connection to an upstream. Boxed, so moving it in and out of the pool and into a
/// streaming body is a pointer copy.
pub(crate) struct UpConn {
    pub(crate) stream: UpStream,
    /// Received bytes `rpos..rend` are not consumed yet.
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    /// The request head (and small bodies) composed for one write.
    pub(crate) wbuf: Vec<u8>,
    parser: ResponseParser,
    /// Which upstream (its pool).
    pub(crate) upstream: u64,
    /// Taken from the pool (has served a request before): a failure before any byte of the
    /// response may be the upstream having closed it meanwhile.
    pub(crate) reused: bool,
    /// Some byte of the current response has arrived.
    pub(crate) answered: bool,
    /// The whole request went out: unless it did, the upstream may still expect body bytes
    /// and the connection cannot carry another request.
    pub(crate) request_sent: bool,
}

impl UpConn {
    /// Connects to the first of the upstream's addresses that accepts (and, for `https://`,
    /// runs the TLS handshake with `tls`, which must then be given). While the upstream is
    /// backing off after failed connects ([`Upstream::down`]) this fails at once, except for
    /// the one request that probes it.
    pub(crate) fn connect(
        up: &Upstream,
        t: &Timeouts,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<Box<UpConn>, Failure> {
        if let Err(wait) = up.down.permit() {
            return Err(Failure::Down {
                failures: up.down.failures(),
                wait,
            });
        }
        match Self::dial(up, t) {
            Ok(stream) => {
                up.down.succeeded();
                Self::connected(up, stream, t, tls)
            }
            Err(e) => {
                // Out of descriptors or memory here: the upstream is not to blame.
                if !fibra_http::transport::is_resource_error(&e) {
                    up.down.failed();
                }
                Err(Failure::Connect(e))
            }
        }
    }

    /// [`connect`](Self::connect) without the backoff: for health checks, which have a
    /// schedule of their own. On a plain thread it blocks (within the timeouts).
    pub(crate) fn open(
        up: &Upstream,
        t: &Timeouts,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<Box<UpConn>, Failure> {
        let stream = Self::dial(up, t).map_err(Failure::Connect)?;
        Self::connected(up, stream, t, tls)
    }

    /// A TCP connection to the first of the upstream's addresses that accepts.
    fn dial(up: &Upstream, t: &Timeouts) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in &up.addrs {
            match TcpStream::connect_timeout(addr, t.connect) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to")
        }))
    }

    /// A connection on `stream`, connected to `up`.
    fn connected(
        up: &Upstream,
        stream: TcpStream,
        t: &Timeouts,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<Box<UpConn>, Failure> {
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(t.read))
            .map_err(Failure::Connect)?;
        stream
            .set_write_timeout(Some(t.write))
            .map_err(Failure::Connect)?;
        let stream = match (&up.tls, tls) {
            (None, _) => UpStream::Plain(stream),
            (Some(name), Some(config)) => UpStream::handshake(stream, config, name)
                .map_err(|e| Failure::Connect(tls_failed(e)))?,
            (Some(_), None) => {
                return Err(Failure::Connect(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "https upstream without a TLS configuration",
                )))
            }
        };
        Ok(Box::new(UpConn {
            stream,
            rbuf: vec![0; READ_BYTES],
            rpos: 0,
            rend: 0,
            wbuf: Vec::with_capacity(1024),
            parser: ResponseParser::new(false),
            upstream: up.id,
            reused: false,
            answered: false,
            request_sent: false,
        }))
    }

    /// Whether an idle connection is still usable: nothing arrived (no end of stream, no
    /// stray bytes). Costs no system call while the reactor has seen nothing on it.
    pub(crate) fn is_idle_and_open(&mut self) -> bool {
        self.stream.is_idle_and_open()
    }

    /// Prepares for the next request: its method decides whether the response has a body.
    pub(crate) fn start(&mut self, head_request: bool) {
        self.parser.set_head_request(head_request);
        self.answered = false;
        self.request_sent = false;
        self.wbuf.clear();
    }

    /// Writes the composed bytes (`wbuf`) and empties it.
    pub(crate) fn send_buffered(&mut self) -> Result<(), Failure> {
        let r = self.stream.write_all(&self.wbuf);
        self.wbuf.clear();
        r.map_err(Failure::Send)
    }

    /// Writes `data` (request body bytes) as they are.
    pub(crate) fn send(&mut self, data: &[u8]) -> Result<(), Failure> {
        self.stream.write_all(data).map_err(Failure::Send)
    }

    /// Reads more of the response. `Ok(0)` at end of stream.
    fn fill(&mut self) -> io::Result<usize> {
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        } else if self.rend == self.rbuf.len() {
            if self.rpos > 0 {
                self.rbuf.copy_within(self.rpos..self.rend, 0);
                self.rend -= self.rpos;
                self.rpos = 0;
            } else {
                // A head larger than the buffer: grow to the parser's limit, which then says
                // `HeadTooLarge` if the head still does not fit.
                let len = (self.rbuf.len() * 2).min(MAX_HEAD);
                self.rbuf.resize(len.max(self.rbuf.len() + 1), 0);
            }
        }
        let n = io::Read::read(&mut self.stream, &mut self.rbuf[self.rend..])?;
        if n > 0 {
            self.answered = true;
        }
        self.rend += n;
        Ok(n)
    }

    /// Reads up to the final response head (interim 1xx heads are dropped): its bytes, status
    /// and body framing.
    pub(crate) fn read_head(&mut self) -> Result<(Range<usize>, Parsed, Framing), Failure> {
        loop {
            let step = self
                .parser
                .next_event(&self.rbuf[self.rpos..self.rend])
                .map_err(Failure::Parse)?;
            let at = self.rpos;
            self.rpos += step.consumed;
            match step.event {
                Event::Head { response, framing } => {
                    return Ok((at..at + step.consumed, response, framing));
                }
                Event::Interim { .. } => {}
                Event::NeedMore => match self.fill() {
                    Ok(0) => {
                        let e = self.parser.eof(self.rend - self.rpos).err();
                        return Err(Failure::Parse(e.unwrap_or(ParseError::Truncated)));
                    }
                    Ok(_) => {}
                    Err(e) => return Err(Failure::Recv(e)),
                },
                // Only a body (after a head) or its end come otherwise (`Event` is
                // non-exhaustive: anything new is not a head either).
                _ => return Err(Failure::Parse(ParseError::Malformed("body before head"))),
            }
        }
    }

    /// The connection and the bytes received past the response head, for a tunnel after
    /// `101`.
    pub(crate) fn into_parts(self: Box<Self>) -> (UpStream, Vec<u8>) {
        let early = self.rbuf[self.rpos..self.rend].to_vec();
        (self.stream, early)
    }

    /// The bytes of `range` in the read buffer (a head [`read_head`](Self::read_head) found).
    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.rbuf[range]
    }

    /// The whole body, if it has arrived already and is at most `limit` bytes (with whether
    /// the connection may be reused); `None`: stream it instead.
    pub(crate) fn take_small_body(
        &mut self,
        framing: Framing,
        limit: u64,
    ) -> Option<(Vec<u8>, bool)> {
        let Framing::Length(n) = framing else {
            return None;
        };
        if n > limit || (self.rend - self.rpos) < n as usize {
            return None;
        }
        let mut body = Vec::with_capacity(n as usize);
        // Every byte is there: the events are the data (unless empty), then the end.
        loop {
            let step = self
                .parser
                .next_event(&self.rbuf[self.rpos..self.rend])
                .ok()?;
            let at = self.rpos;
            self.rpos += step.consumed;
            match step.event {
                Event::Data(range) => body.extend_from_slice(&self.rbuf[at..][range]),
                Event::Done(response) => return Some((body, self.reusable(response))),
                _ => return None,
            }
        }
    }

    /// The response is complete: whether the connection may carry another request (the
    /// whole request went out, and the upstream keeps the connection open and sent nothing
    /// beyond the response).
    pub(crate) fn reusable(&self, response: Parsed) -> bool {
        self.request_sent && response.keep_alive && self.rpos == self.rend
    }

    /// Logs a response body the upstream cut short (it failed, closed early, or closed a TLS
    /// session without `close_notify`): the client's copy ends incomplete, as nginx's
    /// "upstream prematurely closed connection".
    #[cold]
    fn cut(&self, e: io::Error) -> io::Error {
        let peer = match &self.stream {
            UpStream::Plain(s) => s.peer_addr(),
            UpStream::Tls(s) => s.0.sock.0.peer_addr(),
        };
        let kind = error_log::Kind::BodyCut;
        match peer {
            Ok(a) => error_log::warn(
                self.upstream,
                kind,
                format_args!("upstream {a}: response body cut short: {e}"),
            ),
            Err(_) => error_log::warn(
                self.upstream,
                kind,
                format_args!("upstream: response body cut short: {e}"),
            ),
        }
        e
    }

    /// Copies the response body to the client: data is read from the upstream only when the
    /// client has taken the previous piece. Returns whether the connection may be reused;
    /// an error (the upstream failing or closing mid-body, the client going away) leaves it
    /// unusable.
    pub(crate) fn copy_body(&mut self, out: &mut BodyWriter<'_>) -> io::Result<bool> {
        loop {
            let step = self
                .parser
                .next_event(&self.rbuf[self.rpos..self.rend])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            let at = self.rpos;
            self.rpos += step.consumed;
            match step.event {
                Event::Data(range) => out.write_all(&self.rbuf[at..][range])?,
                Event::Done(response) => return Ok(self.reusable(response)),
                Event::NeedMore => {
                    let got = match self.fill() {
                        Ok(n) => n,
                        Err(e) => return Err(self.cut(e)),
                    };
                    if got == 0 {
                        return match self.parser.eof(self.rend - self.rpos) {
                            Ok(_) => Ok(false), // a body delimited by the close
                            Err(e) => {
                                Err(self.cut(io::Error::new(io::ErrorKind::UnexpectedEof, e)))
                            }
                        };
                    }
                }
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "upstream sent a second head inside a body",
                    ))
                }
            }
        }
    }
}
