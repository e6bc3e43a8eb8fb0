//! The protocol engine of fibra: HTTP/1.1, HTTP/2, TLS, WebSocket and the PROXY protocol on
//! fibra fibers — one fiber per connection (and per HTTP/2 stream), services in plain blocking
//! Rust.
//!
//! A server serves a [`Service`]: every `Fn(Request) -> Response` is one, and so are the
//! `fibra-files` file server and an application framework's router. [`Request`] is a thin
//! wrapper with the
//! accessors of `http::Request<Body>` (the body is a streaming `std::io::Read`; the head is
//! shared with the parser, see [`request`]) and [`Response`] one with the accessors and
//! builder of `http::Response<ResponseBody>` (see [`response`]). A body is bytes, a file
//! range sent with `sendfile`, a prepared response ([`prepared`]), a streaming writer, or an
//! upgrade; [`ResponseBody::collect`] reads any of them into memory (an in-process test
//! client).
//!
//! ```
//! use std::io::{Read, Write};
//! use std::time::Duration;
//! use fibra_http::{Request, Response, Server};
//!
//! let server = Server::bind("127.0.0.1:0")
//!     .workers(1)
//!     .serve(|req: Request| match req.uri().path() {
//!         "/plaintext" => Response::builder()
//!             .header("content-type", "text/plain")
//!             .body("Hello, World!".into())
//!             .unwrap(),
//!         _ => {
//!             let mut r = Response::new("not found".into());
//!             *r.status_mut() = http::StatusCode::NOT_FOUND;
//!             r
//!         }
//!     })
//!     .unwrap();
//!
//! let mut client = std::net::TcpStream::connect(server.local_addr()).unwrap();
//! client.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
//! let mut reply = String::new();
//! client.read_to_string(&mut reply).unwrap();
//! assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"));
//! assert!(reply.ends_with("\r\n\r\nHello, World!"));
//!
//! server.shutdown(Duration::from_secs(1));
//! ```
//!
//! A fixed media type can also go with the body,
//! `ResponseBody::from(..).with_content_type(HeaderValue::from_static("text/plain"))`: it is
//! written as `Content-Type` without building a header map for the response (see
//! [`ResponseBody::with_content_type`]).
//!
//! Protocol handling follows RFC 9112 strictly (errors are [`ProtocolError`]s); every knob is
//! in [`Settings`].
//!
//! Entry points:
//!
//! - [`Server::bind`]: the TCP server (one listening socket shared by the workers,
//!   `TCP_NODELAY`; a socket per worker with `SO_REUSEPORT` from [`Server::bind_reuse_port`]);
//! - [`Server::tls`]: the same server over HTTPS (rustls; see [`tls`]);
//! - [`Server::with_acceptor`]: the same server over any [`Acceptor`] — e.g. a Unix-domain
//!   socket, [`UnixAcceptor`] — with the same limits, timeouts, stackless idle connections and
//!   graceful shutdown for every transport; [`Server::also_bind`], [`Server::also_tls`] and
//!   [`Server::also_acceptor`] add more acceptors (plain and TLS, several addresses) to one
//!   server and runtime;
//! - [`serve_connection`]: the connection loop on one [`Transport`] of yours (e.g. TLS), from a
//!   fiber or a plain thread; [`serve_connection_steps`]: the same as a fiber made of steps,
//!   idle without a stack, for an accept loop of your own.
//!
//! Modules: [`acceptor`] (where connections come from: [`TcpAcceptor`], [`UnixAcceptor`]),
//! [`transport`] (what the loop needs of a byte stream; [`Tcp`] and [`Unix`]), [`tls`] (HTTPS
//! with rustls: the [`tls::Tls`] transport, [`tls::TlsAcceptor`], a configuration from PEM
//! files), [`redirect`] (a plain HTTP server's handler sending clients to HTTPS), [`conn`] (the
//! connection loop: one keep-alive loop whose idle stage waits without a stack when the
//! transport can — buffered I/O, decoding, encoding, dispatch, idle stage and lingering close
//! in one file each), [`access_log`] (the entries the loop makes for an [`AccessLogSink`]),
//! [`request`] (the handler's request; [`Request::server_name`] is the TLS SNI name),
//! [`body`] (request bodies), [`response`] (responses, their bodies, the one match over body
//! kinds every protocol writes through), [`prepared`] (responses prepared ahead of time, with
//! a head for each protocol), [`service`] (what a server serves), [`client`] (the client
//! side: an incremental response parser, for load generators and proxies), [`outbox`] (how
//! other fibers send on a
//! connection its owner fiber reads and writes), [`ws`] (WebSocket after an upgrade),
//! [`proxy_protocol`] (the PROXY protocol v1/v2 transport, behind a balancer), [`listen_fds`]
//! (listening sockets inherited through `LISTEN_FDS`: socket activation, binary upgrades),
//! `server` (the builder, accept loops, the connection limit, graceful shutdown), [`date`]
//! (the cached `Date` header, UTC calendar fields). Internal: `parse` (request heads) and
//! `chunked` (chunked bodies), public only with the `fuzzing` feature (which also adds
//! `fuzz_hpack` and `fuzz_qpack`, the entry points of the HPACK and QPACK decoders' fuzz
//! targets); `backoff` (when the one-entry caches of the last head stop looking); `field`
//! (field names classified once, values shared or raw: what the HPACK and QPACK decoders
//! hand out); `huffman` (the Huffman code HPACK and QPACK share); `http3` (HTTP/3's codecs:
//! varints, frames, SETTINGS, stream types, QPACK; not yet wired to a QUIC transport).
//! Static files and the reverse proxy are the `fibra-files` and `fibra-proxy` crates.

pub mod acceptor;
pub mod access_log;
mod backoff;
pub mod body;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod chunked;
// Items only the fuzz targets use are not dead code (as when the module was public).
#[cfg(not(feature = "fuzzing"))]
#[allow(dead_code)]
mod chunked;
pub mod client;
pub mod conn;
pub mod date;
mod digits;
/// The HPACK decoder's fuzz entry point (the codec itself is internal to `http2`).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_hpack {
    pub use crate::http2::hpack::fuzz::decode_blocks;
}
/// The QPACK decoder's fuzz entry point (the codec itself is internal to `http3`).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_qpack {
    pub use crate::http3::qpack::fuzz::decode_sections;
}
mod error;
mod field;
mod going_away;
pub mod http2;
// GOAWAY and the one-ID frames (for the graceful shutdown still to come), grease
// identifiers and the error-code lookups are used by the tests only so far.
#[allow(dead_code)]
mod http3;
mod huffman;
pub mod inline_bytes;
pub mod ip_net;
mod last_head;
mod lazy;
mod lifecycle;
pub mod listen;
pub mod listen_fds;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod parse;
// Items only the fuzz targets use are not dead code (as when the module was public).
pub mod outbox;
#[cfg(not(feature = "fuzzing"))]
#[allow(dead_code)]
mod parse;
mod prefixed_int;
pub mod prepared;
pub mod proxy_protocol;
pub mod redirect;
pub mod request;
mod request_fields;
pub mod response;
mod server;
pub mod service;
pub mod settings;
mod target_bytes;
#[cfg(test)]
mod test_codec;
pub mod tls;
pub mod transport;
mod upgraded;
pub mod word_hash;
pub mod ws;

pub use acceptor::{Acceptor, TcpAcceptor, UnixAcceptor};
pub use access_log::AccessLogSink;
pub use body::Body;
pub use conn::{serve_connection, serve_connection_steps};
pub use error::ProtocolError;
/// The `http` crate (methods, status codes, header maps, URIs), re-exported so handlers need
/// no dependency of their own on it (and the same version as the server's).
pub use http;
pub use http3::client as http3_client;
pub use http3::serve_connection as serve_http3_connection;
pub use http3::serve_connection_draining as serve_http3_connection_draining;
pub use http3::Drain as Http3Drain;
pub use ip_net::IpNet;
pub use outbox::{Outbox, OutboxSender};
pub use request::Request;
pub use response::{BodyWriter, FileRange, Response, ResponseBody, Upgraded};
pub use server::{ConnectionCount, Server, ServerHandle};
pub use service::Service;
pub use settings::{ErrorHook, ServerError, ServerErrorKind, Settings};
pub use transport::{ConnState, ShutdownHandle, Tcp, Transport, Unix};

/// The README's Rust examples, compiled (and run, unless marked `no_run`) as doctests so they
/// stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
