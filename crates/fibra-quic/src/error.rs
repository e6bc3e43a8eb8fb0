//! [`Error`]: why a QUIC call failed, carried inside the `io::Error` every call returns.
//!
//! The blocking API speaks `io::Result`, as `std`'s streams do, so a `RecvStream` works with
//! `read_to_end` and a `SendStream` with `write_all`. Each failure that QUIC itself explains (a
//! stream reset with a code, a connection closed by the peer with a code and reason, a failed
//! handshake) is an `io::Error` whose inner error is an [`Error`]: its message says what
//! happened, and [`Error::of`] gets it back for a program that wants the code.

use quinn_proto::{ConnectionError, StreamId};
use std::fmt;
use std::io;
use std::net::SocketAddr;

/// Why a QUIC call failed. Found inside the `io::Error`s this crate returns ([`Error::of`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The handshake of an outgoing connection failed (`connect`): the peer refused it, the
    /// certificate did not verify, no protocol was agreed, or it timed out.
    HandshakeFailed {
        /// The server dialled.
        remote: SocketAddr,
        /// The name its certificate was checked against.
        server_name: String,
        /// What quinn-proto reported.
        reason: ConnectionError,
    },
    /// The connection is over: closed by either side, timed out, or reset.
    ConnectionLost {
        /// The peer.
        remote: SocketAddr,
        /// What quinn-proto reported ([`ConnectionError::LocallyClosed`] after our own close).
        reason: ConnectionError,
    },
    /// The peer reset the stream this side reads (`RESET_STREAM`) with `code`.
    Reset {
        /// The stream.
        stream: StreamId,
        /// The peer's application error code.
        code: u64,
    },
    /// The peer asked this side to stop sending on the stream (`STOP_SENDING`) with `code`.
    Stopped {
        /// The stream.
        stream: StreamId,
        /// The peer's application error code.
        code: u64,
    },
    /// The stream was finished, reset or stopped by this side already.
    StreamClosed {
        /// The stream.
        stream: StreamId,
    },
    /// The endpoint was closed, or its driver has stopped (the runtime is shutting down, or
    /// the socket failed); the string says which.
    EndpointClosed(String),
}

impl Error {
    /// The [`Error`] inside `e`, if `e` came from this crate with one.
    pub fn of(e: &io::Error) -> Option<&Error> {
        e.get_ref()?.downcast_ref::<Error>()
    }

    /// The application error code the peer gave, for a reset or stopped stream or a
    /// connection the peer closed (`CONNECTION_CLOSE` of the application kind).
    pub fn code(&self) -> Option<u64> {
        match self {
            Error::Reset { code, .. } | Error::Stopped { code, .. } => Some(*code),
            Error::ConnectionLost {
                reason: ConnectionError::ApplicationClosed(c),
                ..
            } => Some(c.error_code.into_inner()),
            _ => None,
        }
    }

    fn kind(&self) -> io::ErrorKind {
        match self {
            Error::HandshakeFailed { reason, .. } | Error::ConnectionLost { reason, .. } => {
                match reason {
                    ConnectionError::TimedOut => io::ErrorKind::TimedOut,
                    ConnectionError::Reset => io::ErrorKind::ConnectionReset,
                    ConnectionError::ApplicationClosed(_)
                    | ConnectionError::ConnectionClosed(_) => io::ErrorKind::ConnectionAborted,
                    ConnectionError::LocallyClosed => io::ErrorKind::NotConnected,
                    _ => io::ErrorKind::Other,
                }
            }
            Error::Reset { .. } | Error::Stopped { .. } => io::ErrorKind::ConnectionReset,
            Error::StreamClosed { .. } => io::ErrorKind::NotConnected,
            Error::EndpointClosed(_) => io::ErrorKind::NotConnected,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::HandshakeFailed {
                remote,
                server_name,
                reason,
            } => write!(
                f,
                "QUIC handshake with {remote} (server name {server_name:?}) failed: {reason}"
            ),
            Error::ConnectionLost { remote, reason } => match reason {
                ConnectionError::LocallyClosed => {
                    write!(f, "QUIC connection to {remote}: closed by this side")
                }
                _ => write!(f, "QUIC connection to {remote}: {reason}"),
            },
            Error::Reset { stream, code } => {
                write!(f, "QUIC stream {stream} reset by the peer with code {code}")
            }
            Error::Stopped { stream, code } => write!(
                f,
                "QUIC stream {stream} stopped by the peer (STOP_SENDING) with code {code}"
            ),
            Error::StreamClosed { stream } => write!(
                f,
                "QUIC stream {stream} is closed (finished, reset or stopped already)"
            ),
            Error::EndpointClosed(why) => write!(f, "QUIC endpoint: {why}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}
