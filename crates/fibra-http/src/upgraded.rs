//! [`Upgraded`]: the raw connection a `101` response's upgrade callback gets.
//!
//! Reads come first from the bytes the client sent past the request head, then from the
//! transport. A read that waits also wakes when graceful shutdown sets the connection's
//! [`GoingAway`]: it then fails once with [`Upgraded::is_going_away`] true, so the protocol
//! on top (a WebSocket) can say goodbye and read on for the peer's answer.

use std::any::Any;
use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use fibra::sync::Notify;

use crate::going_away::GoingAway;
use crate::transport::Transport;

/// Object-safe view of a transport handed over by an upgrade.
pub(crate) trait UpgradeIo: Read + Write {
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool>;
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

impl<T: Transport> UpgradeIo for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Transport::try_read(self, buf)
    }
    fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool> {
        Transport::wait_readable_or(self, notify)
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        Transport::set_read_timeout(self, timeout)
    }
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        Transport::set_write_timeout(self, timeout)
    }
}

/// The raw connection after a `101` response: bytes the client sent after the request head
/// come first when reading, then the socket. See the module docs.
pub struct Upgraded {
    io: Box<dyn UpgradeIo>,
    buffered: Vec<u8>,
    pos: usize,
    /// Reads say `WouldBlock` instead of waiting (see [`Upgraded::set_nonblocking`]).
    nonblocking: bool,
    /// Set by graceful shutdown (`None`: not served by a [`crate::Server`]).
    going_away: Option<Arc<GoingAway>>,
    /// A read has failed for `going_away` (it does so once).
    told: bool,
}

impl fmt::Debug for Upgraded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upgraded")
            .field("buffered", &(self.buffered.len() - self.pos))
            .field("going_away", &self.is_going_away())
            .finish()
    }
}

impl Upgraded {
    pub(crate) fn new(
        io: Box<dyn UpgradeIo>,
        buffered: Vec<u8>,
        going_away: Option<Arc<GoingAway>>,
    ) -> Upgraded {
        Upgraded {
            io,
            buffered,
            pos: 0,
            nonblocking: false,
            going_away,
            told: false,
        }
    }

    /// The underlying transport (for a fibra server: [`crate::Tcp`], which derefs to
    /// `fibra::net::TcpStream`) and the bytes already read past the request head.
    /// Fails (giving `self` back) if the transport is not a `T`.
    pub fn downcast<T: 'static>(self) -> Result<(T, Vec<u8>), Self> {
        if !(*self.io).as_any().is::<T>() {
            return Err(self);
        }
        let Upgraded {
            io,
            mut buffered,
            pos,
            ..
        } = self;
        match io.into_any().downcast::<T>() {
            Ok(t) => {
                buffered.drain(..pos);
                Ok((*t, buffered))
            }
            Err(_) => unreachable!("type checked above"),
        }
    }

    /// With `true`, a read finding nothing says `WouldBlock` instead of waiting: for a
    /// connection whose fiber also waits for other work ([`Upgraded::wait_readable_or`]).
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// Bounds each wait of a read (then `TimedOut`); `None`, the default after the upgrade:
    /// no bound.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.io.set_read_timeout(timeout)
    }

    /// Bounds each wait of a write (then `TimedOut`); the server's
    /// [`write_timeout`](crate::Settings::write_timeout) until changed.
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.io.set_write_timeout(timeout)
    }

    /// Whether the server is shutting down gracefully: the connection should end soon (a
    /// WebSocket sends `1001`). A read that waits fails once when this becomes true.
    pub fn is_going_away(&self) -> bool {
        self.going_away.as_ref().is_some_and(|g| g.is_set())
    }

    /// The notification graceful shutdown sends, for a fiber that waits on it together with
    /// input ([`Upgraded::wait_readable_or`]).
    pub(crate) fn going_away_notify(&self) -> Option<Arc<Notify>> {
        self.going_away.as_ref().map(|g| g.notify().clone())
    }

    /// Waits until a read may make progress (at once while bytes read past the request head
    /// are left) or `notify` is notified: true if it was notified. See
    /// [`crate::Transport::wait_readable_or`].
    pub fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool> {
        if self.pos < self.buffered.len() {
            return Ok(false);
        }
        self.io.wait_readable_or(notify)
    }

    /// A blocking read that graceful shutdown interrupts (once).
    fn read_or_going_away(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let Some(going_away) = &self.going_away else {
            return self.io.read(out);
        };
        loop {
            if !self.told && going_away.is_set() {
                self.told = true;
                return Err(io::Error::other("the server is shutting down"));
            }
            match self.io.try_read(out) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
            }
            match self.io.wait_readable_or(going_away.notify()) {
                Ok(_) => {}
                // A transport that cannot wait for both: a plain read (not interrupted).
                Err(e) if e.kind() == io::ErrorKind::Unsupported => return self.io.read(out),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, e))
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Read for Upgraded {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.buffered.len() {
            let n = out.len().min(self.buffered.len() - self.pos);
            out[..n].copy_from_slice(&self.buffered[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        if self.nonblocking {
            return self.io.try_read(out);
        }
        self.read_or_going_away(out)
    }
}

impl Write for Upgraded {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.io.write(data)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.io.write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.io.flush()
    }
}
