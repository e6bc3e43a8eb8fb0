//! One client connection: a fibra `TcpStream` (with a rustls client session over it for
//! `https`), its reused receive buffer and its response parser ([`fibra_http::client`]).
//!
//! A TLS connection's handshake runs when it opens (in [`Conn::ensure_connected`]), so a
//! failed one counts as a failed connect and its time, like the TCP connect's, falls
//! outside the first request's latency; the byte counts are of the decrypted stream.
//!
//! The buffer is allocated once per connection and the parser consumes from
//! it in place; nothing here allocates per request. Bytes left over after one
//! response stay for the next (pipelining), a partial head is kept and
//! completed by the next read, and the buffer only grows for a response head
//! larger than itself (up to [`MAX_HEAD`]). With `--drop-bodies` the rest of a body of known
//! length is dropped by the kernel unread ([`TcpStream::discard`]) once the buffer is empty.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fibra::net::TcpStream;
use fibra_http::client::{ParseError, Response, ResponseParser, Step, MAX_HEAD};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// Initial receive-buffer size.
const BUF_SIZE: usize = 16 * 1024;

/// Why no response could be read.
#[derive(Debug)]
pub enum RecvError {
    /// The socket failed (or timed out).
    Io(io::Error),
    /// The bytes did not make a response, or the server closed.
    Parse(ParseError),
}

/// What a connection to an `https` target needs: the client configuration and the name
/// the server is asked for (SNI) and checked against.
#[derive(Debug, Clone)]
pub struct TlsClient {
    /// The rustls client configuration.
    pub config: Arc<ClientConfig>,
    /// The server's name (or IP address).
    pub name: ServerName<'static>,
}

/// An open connection: plain TCP, or TLS over it.
#[derive(Debug)]
enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(bytes),
            Stream::Tls(s) => {
                s.write_all(bytes)?;
                s.flush()
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            // A server closing without close_notify: the end of the stream all the same
            // (the response parser tells a whole response from a truncated one).
            Stream::Tls(s) => match s.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

/// A connection slot that (re)connects on demand.
#[derive(Debug)]
pub struct Conn {
    stream: Option<Stream>,
    /// For an `https` target.
    tls: Option<TlsClient>,
    /// Receive buffer; its whole length is usable, `start..end` is unparsed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    parser: ResponseParser,
    /// Bytes received since the last [`Conn::take_bytes_read`].
    bytes_read: u64,
    /// `--drop-bodies`: let the kernel drop body bytes of a known length unread.
    drop_bodies: bool,
}

impl Conn {
    /// An unconnected slot; responses answer `HEAD` requests if `head_request`; with
    /// `tls`, connections speak TLS.
    pub fn new(head_request: bool, tls: Option<TlsClient>) -> Conn {
        Conn {
            stream: None,
            tls,
            buf: vec![0; BUF_SIZE],
            start: 0,
            end: 0,
            parser: ResponseParser::new(head_request),
            bytes_read: 0,
            drop_bodies: false,
        }
    }

    /// Has the kernel drop what remains of a body of known length once the buffer is empty,
    /// without copying it in (plain TCP only; over TLS the records must be decrypted).
    pub fn drop_bodies(mut self, on: bool) -> Conn {
        self.drop_bodies = on;
        self
    }

    /// Connects if not connected (and completes the TLS handshake for `https`). Returns
    /// `Ok(true)` when a new connection was opened.
    pub fn ensure_connected(
        &mut self,
        addr: &SocketAddr,
        timeout: Option<Duration>,
    ) -> io::Result<bool> {
        if self.stream.is_some() {
            return Ok(false);
        }
        let stream = match timeout {
            Some(t) => TcpStream::connect_timeout(addr, t)?,
            None => TcpStream::connect(addr)?,
        };
        stream.set_nodelay(true)?;
        stream.set_read_timeout(timeout)?;
        stream.set_write_timeout(timeout)?;
        let stream = match &self.tls {
            None => Stream::Plain(stream),
            Some(tls) => {
                let session = ClientConnection::new(tls.config.clone(), tls.name.clone())
                    .map_err(io::Error::other)?;
                let mut s = StreamOwned::new(session, stream);
                while s.conn.is_handshaking() {
                    s.conn.complete_io(&mut s.sock)?;
                }
                Stream::Tls(Box::new(s))
            }
        };
        self.stream = Some(stream);
        Ok(true)
    }

    /// Drops the stream and anything buffered from it.
    pub fn close(&mut self) {
        self.stream = None;
        self.parser.reset();
        self.start = 0;
        self.end = 0;
    }

    /// Writes all of `bytes`. The connection must be open.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.stream {
            Some(s) => s.write_all(bytes),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// Bytes received since the last call.
    pub fn take_bytes_read(&mut self) -> u64 {
        std::mem::take(&mut self.bytes_read)
    }

    /// Response-head bytes parsed since the last call.
    pub fn take_head_bytes(&mut self) -> u64 {
        self.parser.take_head_bytes()
    }

    /// Reads until one complete response is parsed. On an error, or at the
    /// end of a response that does not keep the connection alive, the caller
    /// must [`close`](Conn::close) (end of stream closes by itself).
    pub fn recv(&mut self) -> Result<Response, RecvError> {
        loop {
            if self.start < self.end {
                match self.parser.feed(&self.buf[self.start..self.end]) {
                    Ok(Step::Done(n, response)) => {
                        self.start += n;
                        if self.start == self.end {
                            self.start = 0;
                            self.end = 0;
                        }
                        return Ok(response);
                    }
                    Ok(Step::NeedMore(n)) => self.start += n,
                    Err(e) => return Err(RecvError::Parse(e)),
                }
            }
            self.make_room();
            let Some(stream) = &mut self.stream else {
                return Err(RecvError::Io(io::ErrorKind::NotConnected.into()));
            };
            // The buffer is empty and the rest of the body has a known length: drop it unread.
            let due = self.parser.body_due();
            let drop = self.drop_bodies && due > 0 && self.start == self.end;
            if let (true, Stream::Plain(tcp)) = (drop, &*stream) {
                match tcp.discard(due.min(1 << 30) as usize) {
                    Ok(0) => return self.end_of_stream(),
                    Ok(n) => {
                        self.bytes_read += n as u64;
                        self.parser.skip_body(n as u64);
                        if let Ok(Step::Done(_, response)) = self.parser.feed(&[]) {
                            return Ok(response);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(RecvError::Io(e)),
                }
                continue;
            }
            match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return self.end_of_stream(),
                Ok(n) => {
                    self.end += n;
                    self.bytes_read += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(RecvError::Io(e)),
            }
        }
    }

    /// The stream ended: what the parser makes of the bytes still unparsed, and the
    /// connection closed.
    fn end_of_stream(&mut self) -> Result<Response, RecvError> {
        let result = self.parser.eof(self.end - self.start);
        self.close();
        result.map_err(RecvError::Parse)
    }

    /// Ensures free space after `end`: reset when empty, move a partial
    /// response to the front, or grow (only for an oversized head).
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                // The parser rejects a head of MAX_HEAD bytes, so this stops there.
                let len = (self.buf.len() * 2).min(MAX_HEAD);
                self.buf.resize(len.max(self.buf.len() + 1), 0);
            }
        }
    }
}
