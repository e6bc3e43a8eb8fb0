//! A stream's request body as the application reads it: [`StreamBody`], the [`BodySource`]
//! behind the request's [`crate::Body`], reading DATA frames (and giving flow-control window
//! back as it goes), answering `100 Continue` on the first read, and holding the limit.

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;

use super::hpack;
use super::stream::TOO_LARGE;
use super::stream_io::StreamIo;
use crate::body::BodySource;
use crate::error::ProtocolError;

/// The stream's request body, as the [`crate::Body`] source.
pub(super) struct StreamBody {
    pub(super) io: Rc<StreamIo>,
    /// The DATA not yet read by the application.
    pub(super) chunk: Bytes,
    /// A `100 Continue` is owed (sent before the first read).
    pub(super) owes_continue: bool,
    /// The body has ended (all of it read).
    pub(super) ended: bool,
    pub(super) timeout: std::time::Duration,
    /// Body bytes still allowed (`Settings::max_body_bytes`).
    pub(super) left: u64,
    pub(super) peer: Option<SocketAddr>,
    /// The connection's TLS server name (SNI).
    pub(super) server_name: Option<Arc<str>>,
    /// The server's acceptor the connection came through.
    pub(super) listener: usize,
    /// The request's trailer fields, once the body has ended, until the handler takes them.
    pub(super) trailers: Option<HeaderMap>,
    /// Set when the body went past the limit: the server answers with this instead of the
    /// handler's response.
    pub(super) rejected: Option<ProtocolError>,
}

impl StreamBody {
    /// Waits (up to the body read timeout) for the next DATA; `None` at the end of the body
    /// (whose trailers are then kept).
    fn next_data(&mut self) -> io::Result<Option<Bytes>> {
        if self.ended {
            return Ok(None);
        }
        match self.io.read_data(self.timeout)? {
            Some(data) => Ok(Some(data)),
            None => {
                self.ended = true;
                self.trailers = self.io.take_trailers();
                Ok(None)
            }
        }
    }

    /// Reads and discards the rest of the body, at most `limit` bytes.
    pub(super) fn drain(&mut self, limit: u64) {
        let mut left = limit.saturating_sub(self.chunk.len() as u64);
        self.chunk.clear();
        self.owes_continue = false;
        while let Ok(Some(data)) = self.next_data() {
            match left.checked_sub(data.len() as u64) {
                Some(l) => left = l,
                None => return,
            }
        }
    }
}

impl BodySource for StreamBody {
    fn read_body(&mut self, _seq: u64, out: &mut [u8]) -> io::Result<usize> {
        if self.chunk.is_empty() {
            if std::mem::take(&mut self.owes_continue) {
                self.io
                    .send_headers(false, |out| hpack::encode_status(out, 100))?;
            }
            match self.next_data()? {
                Some(data) => {
                    if data.len() as u64 > self.left {
                        self.left = 0;
                        self.rejected = Some(TOO_LARGE);
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "request body larger than the limit",
                        ));
                    }
                    self.left -= data.len() as u64;
                    self.chunk = data;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len());
        out[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
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
