//! The epoll backend (through `mio`): edge-triggered, one `epoll` instance per worker, an
//! `eventfd` waker. See the module docs of `driver` for the contract.

use super::{Event, Ready, Token, WAKE_TOKEN};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// A worker's poller. Owned by the worker thread.
#[derive(Debug)]
pub(crate) struct Driver {
    poll: mio::Poll,
}

/// The thread-safe side of a [`Driver`]: registration and wake-ups.
#[derive(Debug)]
pub(crate) struct Handle {
    registry: mio::Registry,
    waker: mio::Waker,
}

/// A buffer of events filled by [`Driver::wait`].
#[derive(Debug)]
pub(crate) struct Events(mio::Events);

impl Driver {
    /// A new driver and its handle.
    pub(crate) fn new() -> io::Result<(Driver, Handle)> {
        let poll = mio::Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), mio::Token(WAKE_TOKEN))?;
        let registry = poll.registry().try_clone()?;
        Ok((Driver { poll }, Handle { registry, waker }))
    }

    /// Waits for events (see the contract for `timeout`), replacing `events`' contents.
    #[inline]
    pub(crate) fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        self.poll.poll(&mut events.0, timeout)
    }
}

impl Handle {
    /// Registers `fd` for read and write readiness, edge-triggered, under `token`.
    pub(crate) fn register(&self, fd: RawFd, token: Token) -> io::Result<()> {
        self.registry.register(
            &mut mio::unix::SourceFd(&fd),
            mio::Token(token),
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )
    }

    /// Takes `fd` out of the poller (`EPOLL_CTL_DEL`). Fails if it is not registered.
    pub(crate) fn deregister(&self, fd: RawFd) -> io::Result<()> {
        self.registry.deregister(&mut mio::unix::SourceFd(&fd))
    }

    /// Ends the driver's current or next [`Driver::wait`].
    #[inline]
    pub(crate) fn wake(&self) -> io::Result<()> {
        self.waker.wake()
    }
}

impl Events {
    /// An empty buffer for up to `capacity` events per wait.
    pub(crate) fn with_capacity(capacity: usize) -> Events {
        Events(mio::Events::with_capacity(capacity))
    }

    /// The events of the last wait, without the driver's own wake-ups.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = Event> + '_ {
        self.0.iter().filter_map(|e| {
            let token = e.token().0;
            if token == WAKE_TOKEN {
                return None;
            }
            let mut ready = Ready::default();
            if e.is_readable() {
                ready |= Ready::READABLE;
            }
            if e.is_writable() {
                ready |= Ready::WRITABLE;
            }
            // An error ends both directions.
            let error = e.is_error();
            if e.is_read_closed() || error {
                ready |= Ready::READ_CLOSED;
            }
            if e.is_write_closed() || error {
                ready |= Ready::WRITE_CLOSED;
            }
            Some(Event { token, ready })
        })
    }
}
