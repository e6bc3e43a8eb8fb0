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

/// Where the idle stage leaves a connection that waited on its stack, or whose stackless wait
/// ended. (A fieldless enum: returning and matching it costs a register, where an enum that
/// also carried the stackless [`Wait`] cost a keep-alive request ~30 instructions to build,
/// re-tag and drop — measured with `bench/cachesim.sh`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idle {
    /// Input may have arrived (or the end of the stream, or an error a read will report).
    Ready,
    /// Nothing arrived within the read timeout.
    TimedOut,
    /// The wait failed: the connection is over.
    Closed,
}

/// The stackless wait for input on `io`, if the transport has one: the caller returns it as
/// the fiber's next step, and [`woken`] tells it the outcome.
#[inline(always)] // one call per keep-alive request; returns the wait in place
pub(crate) fn park<T: Transport>(io: &T) -> Option<Wait> {
    io.when_readable()
}

/// Waits for input on `io` on the caller's stack.
#[inline]
pub(crate) fn wait<T: Transport>(io: &T) -> Idle {
    woken(io.wait_readable())
}

/// The outcome of a wait, stackless or not.
#[inline(always)] // one call per keep-alive request; folds into the caller's match
pub(crate) fn woken(ready: io::Result<()>) -> Idle {
    match ready {
        Ok(()) => Idle::Ready,
        Err(e) => {
            super::cold_path();
            if is_timeout(&e) {
                Idle::TimedOut
            } else {
                Idle::Closed
            }
        }
    }
}
