//! Lingering close: how a connection that answered its last response closes without
//! resetting it (RFC 9112 §9.6).

use std::io;
use std::time::{Duration, Instant};

use super::buffered::{not_connected, Shared};
use crate::transport::Transport;

/// Lingering close: how long and how much to read after `shutdown(Write)` so the client
/// sees our last response instead of a reset.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;

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
        let sent = io.write_last(&self.wbuf);
        self.wbuf.clear();
        sent
    }

    /// Closes gracefully: push what is pending, stop sending, and read (bounded) what the
    /// client still sends so closing does not reset the connection under our last response.
    // Cold and out of line: runs once, at the end of a connection.
    #[cold]
    #[inline(never)]
    pub(super) fn linger(&mut self) {
        if self.write_last().is_err() {
            return;
        }
        let Some(io) = self.io.as_mut() else { return };
        if self.rbuf.is_empty() {
            self.rbuf.resize(512, 0);
        }
        let deadline = Instant::now() + LINGER_TIME;
        let mut total = 0;
        for _ in 0..256 {
            let now = Instant::now();
            if now >= deadline || total > LINGER_BYTES {
                break;
            }
            let _ = io.set_read_timeout(Some(deadline - now));
            match io.read(&mut self.rbuf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    }
}
