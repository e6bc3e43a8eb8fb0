//! # fibra-quic — QUIC on fibers
//!
//! A QUIC endpoint whose connections and streams are used in blocking style from fibra
//! fibers, over [quinn-proto](https://docs.rs/quinn-proto)'s sans-I/O state machine, with
//! rustls and the aws-lc-rs provider. This first step holds the configuration ([`Config`])
//! and the error type ([`Error`]).

#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

mod config;
mod error;

pub use config::{Config, DEFAULT_MAX_UDP_PAYLOAD_SIZE};
pub use error::Error;

/// quinn-proto, whose configuration and error types this crate's API uses.
pub use quinn_proto as proto;
pub use quinn_proto::{ConnectionError, StreamId, VarInt};
/// The rustls this crate builds its TLS configurations with.
pub use rustls;
