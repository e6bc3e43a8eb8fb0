//! A request stream's body as the application reads it: [`StreamBody`], the [`BodySource`]
//! behind the request's [`crate::Body`], reading DATA frames, the trailer section after them,
//! and holding the body limit.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use http::HeaderMap;

use super::incoming::{Fail, Incoming, Next};
use super::qpack::Decoder;
use super::request_head::decode_trailers;
use super::stream::max_frame;
use super::H3Error;
use crate::body::BodySource;

/// The request body, as the [`crate::Body`] source.
pub(super) struct StreamBody {
    pub(super) incoming: Incoming,
    /// In a DATA frame: [`Incoming::read_data`] has bytes to give.
    pub(super) in_data: bool,
    /// The body has ended (the stream's FIN, or the trailers, was read).
    pub(super) ended: bool,
    /// Body bytes still allowed (`Settings::max_body_bytes`).
    pub(super) left: u64,
    /// The field section limit, for the trailers.
    pub(super) max_section: usize,
    pub(super) peer: Option<SocketAddr>,
    /// The server's acceptor the connection came through.
    pub(super) listener: usize,
    /// The trailer fields, once the body has ended, until the handler takes them.
    pub(super) trailers: Option<HeaderMap>,
    /// The body went past the limit: the server answers 413 instead of the handler's
    /// response.
    pub(super) too_large: bool,
    /// The client broke HTTP/3 while sending the body: the connection is closed with this.
    pub(super) broken: Option<H3Error>,
}

impl StreamBody {
    /// What a failed read means to the application, recording a protocol error for the
    /// stream's fiber.
    fn failed(&mut self, fail: Fail) -> io::Error {
        match fail {
            Fail::Io(e) => e,
            Fail::Protocol(e) => {
                self.broken = Some(e);
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("HTTP/3 request body: {e}"),
                )
            }
        }
    }

    /// Reads and discards the rest of the body, at most `limit` bytes; true if it ended.
    pub(super) fn drain(&mut self, limit: u64) -> bool {
        let mut left = limit;
        let mut buf = [0u8; 4096];
        while left > 0 {
            match self.read_body(0, &mut buf) {
                Ok(0) => return true,
                Ok(n) => left = left.saturating_sub(n as u64),
                Err(_) => return false,
            }
        }
        self.ended
    }
}

impl BodySource for StreamBody {
    fn read_body(&mut self, _seq: u64, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.ended || out.is_empty() {
                return Ok(0);
            }
            if self.in_data {
                let n = self.incoming.read_data(out).map_err(|f| self.failed(f))?;
                if n > 0 {
                    if n as u64 > self.left {
                        self.left = 0;
                        self.too_large = true;
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "request body larger than the limit",
                        ));
                    }
                    self.left -= n as u64;
                    return Ok(n);
                }
                self.in_data = false;
            }
            let next = self
                .incoming
                .next(max_frame(self.max_section))
                .map_err(|f| self.failed(f))?;
            match next {
                Next::Data => self.in_data = true,
                Next::Headers(section) => {
                    // The trailer section ends the request: nothing but the FIN may follow
                    // (RFC 9114 §4.1).
                    let mut decoder = Decoder::new(u64::MAX);
                    let decoded = decode_trailers(
                        &mut decoder,
                        self.incoming.section(section),
                        self.max_section,
                    );
                    match decoded {
                        Ok(Some(t)) => self.trailers = Some(t),
                        Ok(None) => return Err(self.failed(Fail::Protocol(H3Error::MessageError))),
                        Err(e) => return Err(self.failed(Fail::Protocol(e))),
                    }
                    match self.incoming.next(max_frame(self.max_section)) {
                        Ok(Next::End) => self.ended = true,
                        Ok(_) => return Err(self.failed(Fail::Protocol(H3Error::FrameUnexpected))),
                        Err(f) => return Err(self.failed(f)),
                    }
                }
                Next::Frame(..) => {
                    return Err(self.failed(Fail::Protocol(H3Error::FrameUnexpected)))
                }
                Next::End => self.ended = true,
            }
        }
    }

    fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn server_name(&self) -> Option<Arc<str>> {
        None
    }

    fn listener(&self) -> usize {
        self.listener
    }

    fn limit(&mut self, _seq: u64, max: u64) {
        self.left = self.left.min(max);
    }

    fn remaining_hint(&self, _seq: u64) -> Option<u64> {
        None
    }

    fn trailers(&mut self, _seq: u64) -> Option<HeaderMap> {
        self.trailers.take()
    }
}
