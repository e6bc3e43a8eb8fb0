//! Decoding a request's body: its framing (`Content-Length` or chunked, [`BodyState`]),
//! reading it for the handler (`body_read`, the [`BodySource`] a `Body` reads from) and
//! draining what the handler left unread (`drain`) so the connection can be kept alive.
//! Request heads are parsed by [`crate::parse`], called from the dispatch loop.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use super::buffered::{not_connected, Shared};
use crate::body::BodySource;
use crate::chunked::ChunkedDecoder;
use crate::error::ProtocolError;
use crate::transport::{is_timeout, Transport};

/// How the body of the request being served is framed, and how far it has been read.
///
/// Two words: the decoder of a chunked body (a minority of requests) is boxed, so the state
/// every request reads and writes stays in the connection's hot lines (see [`Shared`]).
pub(super) enum BodyState {
    Done,
    Length(u64),
    Chunked(Box<ChunkedDecoder>),
}

#[derive(Debug)]
pub(super) enum BodyError {
    Protocol(ProtocolError),
    Timeout,
    Io,
}

impl<T: Transport> Shared<T> {
    /// Before blocking on a body read: push pending responses, answer 100-continue.
    pub(super) fn prepare_body_read(&mut self) -> io::Result<()> {
        self.flush()?;
        if self.continue_pending {
            self.continue_pending = false;
            self.io()?.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        self.set_read_timeout(self.body_read_timeout);
        Ok(())
    }

    pub(super) fn fail(&mut self, e: io::Error) -> io::Error {
        self.body_error = Some(if is_timeout(&e) {
            BodyError::Timeout
        } else {
            BodyError::Io
        });
        if is_timeout(&e) {
            io::Error::new(io::ErrorKind::TimedOut, "request body read timed out")
        } else {
            e
        }
    }

    pub(super) fn body_read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            match &mut self.body {
                BodyState::Done => return Ok(0),
                BodyState::Length(rem) => {
                    let rem_now = *rem;
                    if self.rpos < self.rend {
                        let n = out.len().min(self.rend - self.rpos).min(rem_now as usize);
                        out[..n].copy_from_slice(&self.rbuf[self.rpos..self.rpos + n]);
                        self.rpos += n;
                        self.finish_length(rem_now - n as u64);
                        return Ok(n);
                    }
                    self.prepare_body_read().map_err(|e| self.fail(e))?;
                    let io = self.io.as_mut().ok_or_else(not_connected)?;
                    let r = if out.len() >= 4096 {
                        // big reads go straight to the caller's buffer
                        let want = out.len().min(rem_now.min(usize::MAX as u64) as usize);
                        io.read(&mut out[..want]).map(|n| (n, true))
                    } else {
                        self.rpos = 0;
                        self.rend = 0;
                        io.read(&mut self.rbuf).map(|n| (n, false))
                    };
                    match r {
                        Ok((0, _)) => return Err(self.fail(io::ErrorKind::UnexpectedEof.into())),
                        Ok((n, true)) => {
                            self.finish_length(rem_now - n as u64);
                            return Ok(n);
                        }
                        Ok((n, false)) => self.rend = n,
                        Err(e) => return Err(self.fail(e)),
                    }
                }
                BodyState::Chunked(dec) => {
                    if self.rpos < self.rend {
                        let src = &self.rbuf[self.rpos..self.rend];
                        match dec.decode(src, out.len()) {
                            Ok(d) => {
                                let n = d.data.len();
                                out[..n].copy_from_slice(&src[d.data]);
                                self.rpos += d.consumed;
                                if dec.is_done() {
                                    if let Some(t) = dec.take_trailers() {
                                        self.trailers = Some(Box::new((self.seq, t)));
                                    }
                                    self.body = BodyState::Done;
                                }
                                if n > 0 {
                                    return Ok(n);
                                }
                                continue;
                            }
                            Err(e) => {
                                self.body_error = Some(BodyError::Protocol(e));
                                self.body = BodyState::Done;
                                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                            }
                        }
                    }
                    self.prepare_body_read().map_err(|e| self.fail(e))?;
                    self.rpos = 0;
                    self.rend = 0;
                    match self.read_in() {
                        Ok(0) => return Err(self.fail(io::ErrorKind::UnexpectedEof.into())),
                        Ok(_) => {}
                        Err(e) => return Err(self.fail(e)),
                    }
                }
            }
        }
    }

    pub(super) fn finish_length(&mut self, rem: u64) {
        self.body = if rem == 0 {
            BodyState::Done
        } else {
            BodyState::Length(rem)
        };
    }

    /// Reads and discards the rest of the body, up to `limit` bytes. True if it all went.
    // Out of line: its 4 KiB scratch buffer would otherwise sit in every request's frame.
    #[cold]
    #[inline(never)]
    pub(super) fn drain(&mut self, limit: u64) -> bool {
        if self.continue_pending || self.body_error.is_some() {
            return false;
        }
        let mut scratch = [0u8; 4096];
        let mut total = 0u64;
        loop {
            if let BodyState::Length(rem) = self.body {
                if rem.saturating_sub((self.rend - self.rpos) as u64) > limit - total.min(limit) {
                    return false;
                }
            }
            match self.body_read(&mut scratch) {
                Ok(0) => return matches!(self.body, BodyState::Done),
                Ok(n) => {
                    total += n as u64;
                    if total > limit {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }
}

impl<T: Transport> BodySource for Shared<T> {
    fn read_body(&mut self, seq: u64, out: &mut [u8]) -> io::Result<usize> {
        if seq != self.seq {
            return Ok(0);
        }
        if let Some(e) = &self.body_error {
            return Err(match e {
                BodyError::Protocol(p) => io::Error::new(io::ErrorKind::InvalidData, *p),
                BodyError::Timeout => io::ErrorKind::TimedOut.into(),
                BodyError::Io => io::ErrorKind::UnexpectedEof.into(),
            });
        }
        self.body_read(out)
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }
    fn server_name(&self) -> Option<Arc<str>> {
        self.server_name.clone()
    }
    fn listener(&self) -> usize {
        self.listener
    }
    fn trailers(&mut self, seq: u64) -> Option<http::HeaderMap> {
        self.trailers
            .take()
            .and_then(|t| (t.0 == seq).then_some(t.1))
    }
    fn limit(&mut self, seq: u64, max: u64) {
        if seq != self.seq {
            return;
        }
        match &mut self.body {
            BodyState::Chunked(decoder) => decoder.limit(max),
            BodyState::Length(n) if *n > max && self.body_error.is_none() => {
                self.body_error = Some(BodyError::Protocol(ProtocolError::new(
                    http::StatusCode::PAYLOAD_TOO_LARGE,
                    "body too large",
                )));
            }
            _ => {}
        }
    }
    fn remaining_hint(&self, seq: u64) -> Option<u64> {
        match self.body {
            _ if seq != self.seq => Some(0),
            BodyState::Done => Some(0),
            BodyState::Length(n) => Some(n),
            BodyState::Chunked(_) => None,
        }
    }
}
