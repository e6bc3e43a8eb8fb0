//! # fibra-quic — QUIC on fibers
//!
//! A QUIC endpoint whose connections and streams are used in blocking style from fibra
//! fibers: `conn.accept_bi()`, `recv.read(..)`, `send.write_all(..)` park the calling fiber,
//! not a thread, and there is no `async` anywhere. The protocol is
//! [quinn-proto](https://docs.rs/quinn-proto)'s sans-I/O state machine; TLS is rustls with
//! the aws-lc-rs provider, as in the rest of fibra.
//!
//! ## Model
//! - One **driver fiber** per [`Endpoint`] owns the [`fibra::net::UdpSocket`] and runs
//!   quinn-proto: it receives datagrams in batches (`recvmmsg`, GRO), feeds them in, runs
//!   the connections' timers, and sends what they produce (`sendmmsg`, GSO). It waits for
//!   "socket readable, or notified by a handle, or the earliest connection deadline" with
//!   `UdpSocket::readable_or_notified_until`.
//! - The application's handles ([`Connection`], [`SendStream`], [`RecvStream`]) share the
//!   endpoint's state with the driver behind one mutex, never held across a park. A handle
//!   call locks, tries its operation on quinn-proto, and if it cannot go on parks on its own
//!   `Notify`, which the driver wakes when quinn-proto reports the event it waits for. An
//!   operation that has something to send notifies the driver.
//! - Timers: quinn-proto's deadlines are precise `Instant`s; fibra wakes the driver in the
//!   first millisecond tick after one, never before, which is the granularity RFC 9002
//!   assumes for loss detection (the `timers` module says more).
//! - Handles are `Send` and work from any worker; for an uncontended lock, spawn the fibers
//!   that use an endpoint on its worker ([`Endpoint::worker`]).
//! - Dropping the last handle of a connection closes it (code 0); dropping the last
//!   `Endpoint` handle stops accepting, and the driver ends once no connection is left.
//!
//! ## Files
//! `endpoint.rs` ([`Endpoint`]), `endpoint_group.rs` (a group of endpoints on one port,
//! one per worker), `connection.rs` ([`Connection`]), `stream.rs` (the stream
//! halves), `config.rs` ([`Config`], transport settings and TLS), `error.rs` ([`Error`]),
//! and the driver's side: `state.rs` (the shared state and the waiter protocol), `driver.rs`
//! (the loop), `io.rs` (receive buffers and the outbox), `timers.rs` (deadlines), `group.rs`
//! (several endpoints on one port: connection IDs that name their member, steering,
//! forwarding). With the
//! `fuzzing` feature, `fuzz.rs`: the datagram fuzz target's entry point.
//!
//! ## Not (yet) here
//! 0-RTT (off by design, see [`Config`]), application datagrams (RFC 9221), ECN,
//! connection migration to a new local address, and the local IP of multi-homed sockets
//! (`IP_PKTINFO`). A server validates a new client's address with Retry only under a
//! handshake flood ([`Config::max_handshakes_before_retry`]).

#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

mod config;
mod connection;
mod driver;
mod endpoint;
mod endpoint_group;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
mod group;
mod io;
mod state;
mod stream;
mod timers;

pub use config::{Config, DEFAULT_MAX_UDP_PAYLOAD_SIZE};
pub use connection::Connection;
pub use endpoint::Endpoint;
pub use error::Error;
pub use group::{ForwardFn, Peer};
pub use stream::{RecvStream, SendStream};

/// quinn-proto, whose configuration and error types this crate's API uses.
pub use quinn_proto as proto;
pub use quinn_proto::{ConnectionError, StreamId, VarInt};
/// The rustls this crate builds its TLS configurations with.
pub use rustls;
