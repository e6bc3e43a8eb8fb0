//! Lingering close: how a connection that answered its last response closes without
//! resetting it (RFC 9112 §9.6).

use std::io;
use std::time::{Duration, Instant};

use super::buffered::{not_connected, Shared};
use crate::transport::{self, Transport};

/// Lingering close: how long to read (and drop) what the client still sends after
/// `shutdown(Write)`, so that it sees our last response instead of a reset, nginx's bounds:
/// at most [`LINGER_TIME`] in all (`lingering_time`), and until the client has been silent
/// for [`LINGER_IDLE`] (`lingering_timeout`). No byte bound: a client still pushing a large
/// body it was not asked for is still receiving our response, and closing with its bytes
/// unread would reset the connection and destroy the part of the response not yet
/// delivered.
const LINGER_TIME: Duration = Duration::from_secs(30);
const LINGER_IDLE: Duration = Duration::from_secs(5);
/// The read buffer's least size while lingering (dropped bytes are read this much at a time).
const LINGER_READ: usize = 16 * 1024;

impl<T: Transport> Shared<T> {
    /// Closes at once a connection whose client asked for the close (`Connection: close`,
    /// or HTTP/1.0 without keep-alive) and has sent nothing past its request: the last
    /// response and the end of our side leave together, with no lingering read. Such a
    /// client must not send another request (RFC 9112 §9.6), so nothing can arrive to reset
    /// the connection under the response. (nginx skips its lingering read in the same case.)
    #[cold]
    #[inline(never)]
    pub(super) fn close_now(&mut self) {
        let _ = self.write_last();
    }

    /// Sends what is buffered and the end of our side together (one write over TLS).
    fn write_last(&mut self) -> io::Result<()> {
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let sent = transport::write_last(io, &self.wbuf);
        self.wbuf.clear();
        sent
    }

    /// Closes gracefully: push what is pending, stop sending, and read what the client still
    /// sends (within [`LINGER_TIME`] and [`LINGER_IDLE`]) so closing does not reset the
    /// connection under our last response.
    // Cold and out of line: runs once, at the end of a connection.
    #[cold]
    #[inline(never)]
    pub(super) fn linger(&mut self) {
        if self.write_last().is_err() {
            return;
        }
        let Some(io) = self.io.as_mut() else { return };
        if self.rbuf.len() < LINGER_READ {
            self.rbuf.resize(LINGER_READ, 0);
        }
        let deadline = Instant::now() + LINGER_TIME;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let _ = io.set_read_timeout(Some((deadline - now).min(LINGER_IDLE)));
            match io.read(&mut self.rbuf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
}
