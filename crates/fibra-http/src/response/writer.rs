//! [`BodyWriter`]: what a streamed body's closure writes to, over whatever the protocol puts
//! the bytes on ([`StreamSink`]), and how it learns that the server is shutting down.

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use fibra::sync::Notify;

use crate::going_away::GoingAway;

/// Size at which buffered output is pushed to the socket.
pub(crate) const FLUSH_BYTES: usize = 16 * 1024;

/// Where a [`BodyWriter`] puts its bytes: the connection, borrowed per call so the closure
/// may read the request body between writes.
pub(crate) trait StreamSink {
    /// Appends `data` (as one chunk if `chunked`) to the connection's output.
    fn sink_write(&mut self, data: &[u8], chunked: bool) -> io::Result<()>;
    /// Pushes buffered output to the socket.
    fn sink_flush(&mut self) -> io::Result<()>;
}

/// The writer a streaming body's closure gets. Small writes are buffered in the connection's
/// write buffer; when the length was not declared they are framed as chunks.
pub struct BodyWriter<'a> {
    pub(crate) sink: &'a std::cell::RefCell<dyn StreamSink>,
    pub(crate) chunked: bool,
    /// Bytes still allowed when the length was declared.
    pub(crate) remaining: Option<u64>,
    /// Bytes written so far (for the access log).
    pub(crate) written: u64,
    /// Trailer fields to send after the body ([`BodyWriter::set_trailers`]).
    pub(crate) trailers: Option<http::HeaderMap>,
    /// Graceful shutdown's signal to the connection (`None`: nobody will give it).
    pub(crate) going_away: Option<Arc<GoingAway>>,
}

impl BodyWriter<'_> {
    /// Trailer fields to send after the body (the last call wins): on HTTP/2 a trailing
    /// HEADERS frame; on HTTP/1.1 the trailer section after the last chunk of a chunked
    /// body (a body of declared length, or one to an HTTP/1.0 client, has nowhere to put
    /// them: they are dropped, as hyper does). Fields that frame or route a message
    /// (`Content-Length`, `Transfer-Encoding`, `Host`, `Trailer`, `TE` and the
    /// connection-specific ones) are not allowed in trailers (RFC 9110 §6.5.1) and are left
    /// out.
    pub fn set_trailers(&mut self, mut fields: http::HeaderMap) {
        use http::header;
        for name in [
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::HOST,
            header::TRAILER,
            header::TE,
            header::CONNECTION,
            header::UPGRADE,
            http::HeaderName::from_static("keep-alive"),
        ] {
            fields.remove(name);
        }
        self.trailers = Some(fields);
    }

    /// Whether the server has begun shutting down ([`ServerHandle::shutdown`], or
    /// [`ServerHandle::drain`] once its idle grace is over, as for a WebSocket): a body that
    /// would go on for long (server-sent events, a log tail) should end now, so that its
    /// response completes and the connection closes within the grace period. On HTTP/2 it
    /// turns true when the connection sends its GOAWAY. Always false where nobody tells: in
    /// [`ResponseBody::collect`](crate::ResponseBody::collect) and on a connection served
    /// outside a [`Server`](crate::Server).
    ///
    /// [`ServerHandle::shutdown`]: crate::ServerHandle::shutdown
    /// [`ServerHandle::drain`]: crate::ServerHandle::drain
    pub fn is_going_away(&self) -> bool {
        self.going_away.as_ref().is_some_and(|g| g.is_set())
    }

    /// What graceful shutdown notifies (once, [`Notify::notify_one`]) as it makes
    /// [`is_going_away`](Self::is_going_away) true, for a body that waits for something
    /// else between its writes (events from another fiber): wait on this `Notify`, have
    /// what you wait for notify it too, and look at `is_going_away` after each wake-up (a
    /// wake-up may also be spurious). `None` where `is_going_away` is always false.
    pub fn going_away_notify(&self) -> Option<Arc<Notify>> {
        self.going_away.as_ref().map(|g| g.notify().clone())
    }
}

impl fmt::Debug for BodyWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyWriter")
            .field("chunked", &self.chunked)
            .field("remaining", &self.remaining)
            .field("going_away", &self.is_going_away())
            .finish()
    }
}

impl Write for BodyWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if let Some(rem) = &mut self.remaining {
            if data.len() as u64 > *rem {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "body longer than its declared length",
                ));
            }
            *rem -= data.len() as u64;
        }
        self.sink.borrow_mut().sink_write(data, self.chunked)?;
        self.written += data.len() as u64;
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.sink.borrow_mut().sink_flush()
    }
}
