//! The idle stage: a connection that has answered everything that arrived waits here for
//! more input. One function for every transport and both ways a connection runs:
//!
//! - as a fiber made of steps (the server's way): the transport's stackless wait
//!   ([`Transport::when_readable`]) becomes the fiber's next step, and the idle connection
//!   holds no stack at all — the reason an idle connection costs about 2 KB;
//! - on a stack (a transport without a stackless wait, or [`crate::serve_connection`]): the
//!   fiber (or thread) waits in [`Transport::wait_readable`].
//!
//! Either way the wait honours the read timeout the loop set for it (the idle timeout between
//! requests, what is left of the head deadline within one), and graceful shutdown ends it by
//! shutting the transport's reading side ([`Transport::shutdown_handle`]), which the wait sees
//! as input: the next read finds the end of the stream.
//!
//! HTTP/2 will reuse this stage for a connection with no open streams.

use std::io;

use fibra::fiber::Wait;

use crate::transport::{is_timeout, Transport};

/// Where the idle stage leaves a connection.
#[derive(Debug)]
pub(crate) enum Idle {
    /// Input may have arrived (or the end of the stream, or an error a read will report).
    Ready,
    /// The connection waits without a stack: the caller returns this wait as the fiber's next
    /// step, and [`woken`] tells it the outcome.
    Park(Wait),
    /// Nothing arrived within the read timeout.
    TimedOut,
    /// The wait failed: the connection is over.
    Closed,
}

/// Waits for input on `io`: without a stack if `stackless` and the transport can, else on the
/// caller's stack.
#[inline]
pub(crate) fn wait<T: Transport>(io: &T, stackless: bool) -> Idle {
    if stackless {
        if let Some(wait) = io.when_readable() {
            return Idle::Park(wait);
        }
    }
    woken(io.wait_readable())
}

/// The outcome of a wait, stackless or not.
#[inline]
pub(crate) fn woken(ready: io::Result<()>) -> Idle {
    match ready {
        Ok(()) => Idle::Ready,
        Err(e) if is_timeout(&e) => Idle::TimedOut,
        Err(_) => Idle::Closed,
    }
}
