//! Static files for fibra-http: the job Mighty does on Warp, as a library.
//!
//! [`FileServer`] serves one directory tree (optionally mounted under a URL prefix next to an
//! application's own handlers); fibra-http's [`AccessLog`] writes a buffered combined-format
//! log of what the connection loop sent (an
//! [`AccessLogSink`](fibra_http::access_log::AccessLogSink) for `Server::access_log_sink`).
//! The `fibra serve` subcommand is a thin CLI over these two.
//!
//! Wiring (what `fibra serve` does):
//!
//! ```no_run
//! use std::sync::Arc;
//! use fibra_files::{FileServer, FileServerConfig};
//! use fibra_http::access_log::AccessLog;
//!
//! let mut config = FileServerConfig::new(".");
//! config.listing = true;
//! config.cache_control = Some("public, max-age=60".into());
//! let files = Arc::new(FileServer::new(config)?);
//! fibra_http::Server::bind("127.0.0.1:8080")
//!     .workers(1)
//!     .access_log_sink(AccessLog::open("-")?)
//!     .run(move |req: fibra_http::Request| files.handle(&req))?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Behaviour, in the order a request meets it:
//!
//! - `GET`/`HEAD` only; `OPTIONS` (of a path or `*`) is `200` with `Allow: GET, HEAD,
//!   OPTIONS`, anything else `405` with the same `Allow`.
//! - The path is percent-decoded segment by segment and may never leave the root
//!   ([`path`]): `..`, `%2e%2e`, `%2f`, `\`, NUL are `400`; hidden names (`.git`, `.env`) are
//!   `404` unless allowed; symlinks resolving outside the root are `403` unless allowed
//!   ([`open`]).
//! - A directory URL without trailing slash gets `301` to the slash form; with it, the index
//!   file, else an HTML listing (when enabled, names escaped) or `403`.
//! - `ETag` (strong) + `Last-Modified`; preconditions in RFC 9110 §13.2.2 order
//!   ([`conditional`]): `If-Match`/`If-Unmodified-Since` -> `412`,
//!   `If-None-Match`/`If-Modified-Since` -> `304`.
//! - `Range` on GET ([`range`]): one range -> `206` + `Content-Range`; none satisfiable ->
//!   `416` + `Content-Range: bytes */LEN`; **several satisfiable ranges -> `200` with the whole
//!   file** (no `multipart/byteranges`); `If-Range` honoured; `Accept-Ranges: bytes`.
//! - `NAME.br` / `NAME.gz` siblings served for `NAME` when `Accept-Encoding` allows (brotli
//!   preferred), with `Content-Encoding`, and `Vary: Accept-Encoding` whenever a sibling exists.
//! - With [`compress`] on, brotli or gzip made on the fly (and cached) for compressible
//!   files without a sibling, with its own `ETag` and `Vary: Accept-Encoding`.
//! - `Content-Type` from the extension, `; charset=utf-8` for text types ([`meta`]).
//! - Bodies are file ranges sent with `sendfile`; fds, stat results and pre-rendered header
//!   values live in a TTL cache ([`cache`], 10 s by default).

pub mod beneath;
pub mod cache;
pub mod catalog;
pub mod compress;
pub mod conditional;
pub mod field_rules;
mod handler;
/// The inline byte strings the cache keeps its keys in (fibra-http's, for the path of before).
pub use fibra_http::inline_bytes;
pub mod listing;
pub mod meta;
pub mod open;
pub mod path;
pub mod range;
pub mod reply;
pub mod server;
pub mod watch;

#[cfg(test)]
mod tests;

pub use cache::CacheStats;
/// The combined-format log `fibra serve` writes (fibra-http's), for the paths of before.
pub use fibra_http::access_log::{AccessLog, LogEntry};
pub use server::{FileBody, FileReply, FileServer, FileServerConfig};
