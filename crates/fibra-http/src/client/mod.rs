//! The client side of HTTP/1.x: an incremental response parser, shared by `fibra bench` and
//! meant for a reverse proxy.
//!
//! [`ResponseParser`] reads the stream of responses on one connection out of a buffer the
//! caller owns: the caller hands it the bytes not consumed yet and appends what it reads next
//! to what is left. The head is parsed by `httparse` once it is complete (a partial head stays
//! in the buffer and is parsed again when more arrives); bodies are never copied, so a large
//! body needs no large buffer. There are two ways to drive it:
//!
//! * [`ResponseParser::feed`] stops only after a complete response and just counts body bytes:
//!   the benchmark's fast path, with no allocation and no copy per response (a repeated head is
//!   even recognized byte for byte and not parsed again);
//! * [`ResponseParser::next_event`] stops at every [`Event`]: an interim or final head (the
//!   consumed bytes, to forward or parse for their fields), each run of body data as a range
//!   of the input (de-chunked), and the end of the response.
//!
//! Framing follows RFC 9112 §6.3 ([`Framing`]): no body for responses to `HEAD` and for 1xx,
//! 204 and 304; `Transfer-Encoding` ending in `chunked` (overriding any `Content-Length`);
//! `Content-Length`; otherwise the body runs until the server closes. A response that does not
//! frame cleanly is an error, so a truncated or malformed response is never taken for a
//! complete one.
//!
//! # Leniency
//!
//! The server side of this crate is strict, because a request it misreads can smuggle another
//! one past it. A client is in a different position and RFC 9112 allows it some tolerance;
//! this parser takes it where the RFC says a recipient (or user agent) may or must:
//!
//! * bare LF as a line ending, in the head and in chunked framing (§2.2);
//! * several spaces between the elements of the status line (§4);
//! * whitespace between a field name and its colon (§5.1: a proxy removes it, it does not
//!   reject the response);
//! * obs-fold continuation lines in header fields (§5.2: a user agent replaces them with
//!   spaces; the values this parser interprets treat them as whitespace);
//! * a `Content-Length` list of identical values such as `5, 5` (RFC 9110 §8.6);
//! * chunk extensions and trailer fields, skipped unread, and whitespace after a chunk size
//!   (§7.1.1, §7.1.2; see [`ChunkedDecoder`] for the details).
//!
//! Everything else malformed, conflicting `Content-Length` values included, is a
//! [`ParseError`].

mod chunked;
mod response;

pub use chunked::{ChunkedDecoder, Decoded, MAX_LINE};
pub use response::{
    parser_config, Event, Framing, ParseError, Parsed, Response, ResponseParser, Step, MAX_HEAD,
    MAX_HEADERS,
};
