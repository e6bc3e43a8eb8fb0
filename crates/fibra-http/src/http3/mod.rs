//! HTTP/3 (RFC 9114) over QUIC connections from `fibra-quic`: [`serve_connection`] serves
//! one with the same handler type as HTTP/1.1 and HTTP/2, a fiber per request stream. It is
//! not part of [`crate::Server`]: an application (or `fibra --http3`) accepts QUIC
//! connections itself and hands each to [`serve_connection`].
//!
//! As for HTTP/2 (`crate::http2`), the framing and the field compression are our own:
//!
//! - `varint`: QUIC's variable-length integers (RFC 9000 §16), and the reserved
//!   identifiers every HTTP/3 code space has;
//! - `frame`: frame heads parsed from however much has arrived, the checks that need no
//!   connection state, one-ID payloads, the writers;
//! - `settings`: the SETTINGS payload, read and written;
//! - `stream_type`: the type that opens each unidirectional stream;
//! - `error`: the HTTP/3 and QPACK error codes;
//! - `qpack`: QPACK (RFC 9204) with no dynamic table, in either direction: the field
//!   section decoder and encoder, and the checks of the peer's encoder and decoder streams;
//! - `request_head`: a request's (and its trailers') field section decoded and checked,
//!   as the handler sees it (the checks are HTTP/2's too: `crate::request_fields`);
//! - [`client`]: the client's side, for load generators and tests.
//!
//! A server built on these advertises `SETTINGS_QPACK_MAX_TABLE_CAPACITY` = 0 and
//! `SETTINGS_QPACK_BLOCKED_STREAMS` = 0 (the defaults, so its SETTINGS need not carry them):
//! a client may then never use the dynamic table, and the decoder needs no state, no
//! blocked streams and no decoder-stream output. Its encoder never uses the client's table
//! either, so nothing is acknowledged in either direction.

pub mod client;
mod conn;
mod drain;
pub(crate) mod error;
pub(crate) mod frame;
mod incoming;
pub(crate) mod qpack;
mod request_body;
pub(crate) mod request_head;
mod send;
pub(crate) mod settings;
mod stream;
pub(crate) mod stream_type;
pub(crate) mod varint;

pub use conn::{serve_connection, serve_connection_draining};
pub use drain::Drain;
pub(crate) use error::H3Error;
