//! The byte stream a connection runs over: `Read + Write` plus the few socket controls the
//! connection loop needs. Plain TCP implements everything; a TLS stream (rustls
//! `StreamOwned`) can implement it by forwarding the timeouts and keeping the default
//! `send_file` (read + write, since the bytes must be encrypted anyway).

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// A connection's transport. See the module docs.
pub trait Transport: Read + Write + 'static {
    /// Bounds every following read (`None`: no bound). Called once per request phase, so it
    /// should be cheap (it is an atomic store on fibra streams).
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// Bounds every following write.
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// The client's address, if the transport has one.
    fn peer_addr(&self) -> Option<SocketAddr>;
    /// Reads what has already arrived, without waiting: `WouldBlock` when nothing has.
    ///
    /// The connection loop waits for input on the connection's own stack
    /// ([`wait_readable`](Transport::wait_readable)) and reads, parses and responds on a stack
    /// the worker lends, so an idle connection holds no more than its own stack. Default:
    /// a plain `read`, which may wait (up to the read timeout, reported as `TimedOut`) — right
    /// for a blocking transport, only without that split.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.read(buf) {
            // A blocking read that says `WouldBlock` has run into its timeout.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                Err(io::Error::new(io::ErrorKind::TimedOut, e))
            }
            r => r,
        }
    }
    /// Waits until [`try_read`](Transport::try_read) may make progress, for at most the read
    /// timeout (then `TimedOut` or `WouldBlock`). Default: returns at once.
    fn wait_readable(&self) -> io::Result<()> {
        Ok(())
    }
    /// Shuts down one or both directions (used for lingering close).
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
    /// Holds back partial frames until uncorked (TCP_CORK), so a response head and the file
    /// that follows leave in one packet. Default: no-op.
    fn set_cork(&self, _on: bool) -> io::Result<()> {
        Ok(())
    }
    /// Sends `len` bytes of `file` from `offset`; returns the bytes sent (fewer only if the
    /// file is shorter). Default: positional reads into a buffer, then `write_all`.
    fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        let mut buf = vec![0u8; len.min(64 * 1024) as usize];
        let mut sent = 0u64;
        while sent < len {
            let want = (len - sent).min(buf.len() as u64) as usize;
            let n = file.read_at(&mut buf[..want], offset + sent)?;
            if n == 0 {
                break;
            }
            self.write_all(&buf[..n])?;
            sent += n as u64;
        }
        Ok(sent)
    }
}

/// Blocking std sockets: handy for tests and for running the connection loop on OS threads.
impl Transport for std::net::TcpStream {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_read_timeout(self, timeout)
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::net::TcpStream::set_write_timeout(self, timeout)
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        std::net::TcpStream::peer_addr(self).ok()
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        std::net::TcpStream::shutdown(self, how)
    }
}

/// Treats `WouldBlock` (what std returns on a read timeout) and `TimedOut` alike.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}
