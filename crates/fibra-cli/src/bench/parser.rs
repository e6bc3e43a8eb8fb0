//! Incremental HTTP/1.x response parser for `fibra bench`.
//!
//! The connection keeps one receive buffer and hands the parser the bytes it
//! has not consumed yet; [`ResponseParser::feed`] says how many it consumed and
//! whether a response completed. The head is parsed by `httparse` once it is
//! complete (a partial head is left in the buffer and re-parsed when more
//! arrives); bodies are only counted, never copied, so a large body needs no
//! large buffer. Framing follows RFC 9112 §6.3: no body for `HEAD`, 1xx, 204
//! and 304; `Transfer-Encoding` ending in `chunked`; `Content-Length`;
//! otherwise the body runs until the server closes. Interim 1xx responses are
//! skipped. Anything that does not frame cleanly is an error, so a truncated or
//! malformed response can never be counted as a success.

use std::fmt;
use std::mem::MaybeUninit;

/// Most header lines accepted in one response head.
const MAX_HEADERS: usize = 64;
/// Largest response head accepted (status line plus headers).
pub const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4096;

/// A complete response, as far as the benchmark cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Final status code (never 1xx except 101).
    pub status: u16,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

/// Result of one [`ResponseParser::feed`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The first `n` bytes were consumed and no response completed: keep the
    /// rest, append more input, and feed again.
    NeedMore(usize),
    /// A response completed after the first `n` bytes; the rest belongs to the
    /// next response.
    Done(usize, Response),
}

/// Why a response could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The connection closed before any byte of the response arrived.
    Closed,
    /// The connection closed in the middle of a response.
    Truncated,
    /// The response head is larger than [`MAX_HEAD`].
    HeadTooLarge,
    /// The bytes are not a valid HTTP/1.x response.
    Malformed(&'static str),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Closed => f.write_str("connection closed before the response"),
            ParseError::Truncated => f.write_str("connection closed mid-response"),
            ParseError::HeadTooLarge => write!(f, "response head larger than {MAX_HEAD} bytes"),
            ParseError::Malformed(why) => write!(f, "malformed response: {why}"),
        }
    }
}

/// Where the parser is within the current response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for a (possibly interim) status line and headers.
    Head,
    /// This many body bytes are still due.
    Length(u64),
    /// At a chunk-size line.
    ChunkSize,
    /// Inside a chunk; this many data bytes are still due.
    ChunkData(u64),
    /// After a chunk's data; its CRLF is due.
    ChunkEnd,
    /// After the last chunk: trailer lines up to an empty line.
    Trailers,
    /// The body ends when the connection closes.
    UntilClose,
}

/// Incremental parser for a stream of responses on one connection.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// Responses answer `HEAD` requests: no body whatever the headers say.
    head_request: bool,
    /// Some bytes of the current response (e.g. an interim 1xx) were consumed.
    started: bool,
    /// Status and persistence of the current response, once its head is parsed.
    current: Response,
    /// Response-head bytes parsed since the last [`ResponseParser::take_head_bytes`].
    head_bytes: u64,
    /// The last final head parsed (if it fit), byte for byte, with its result.
    cache: HeadCache,
}

/// The bytes of the last final response head and what parsing them gave.
///
/// Servers under load send the same head again and again; when the next head
/// starts with exactly these bytes (which end with the empty line, so the
/// head is complete and identical) the parse result is reused. A `Date` header
/// turns this into one real parse per second per connection.
#[derive(Debug)]
struct HeadCache {
    /// Valid bytes in `bytes` (0: empty).
    len: usize,
    bytes: [u8; HEAD_CACHE],
    /// Body framing that followed the head.
    state: State,
    /// The response the head described.
    response: Response,
}

/// Largest head kept in [`HeadCache`].
const HEAD_CACHE: usize = 256;

impl ResponseParser {
    /// A parser for responses to requests of one method; `head_request` when
    /// the method is `HEAD`.
    pub fn new(head_request: bool) -> ResponseParser {
        ResponseParser {
            state: State::Head,
            head_request,
            started: false,
            current: Response {
                status: 0,
                keep_alive: false,
            },
            head_bytes: 0,
            cache: HeadCache {
                len: 0,
                bytes: [0; HEAD_CACHE],
                state: State::Head,
                response: Response {
                    status: 0,
                    keep_alive: false,
                },
            },
        }
    }

    /// Resets for a fresh connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.started = false;
    }

    /// Response-head bytes (interim heads included) parsed since the last call.
    pub fn take_head_bytes(&mut self) -> u64 {
        std::mem::take(&mut self.head_bytes)
    }

    /// Consumes as much of `data` as possible, stopping after one complete
    /// response. After an error the connection must be dropped.
    pub fn feed(&mut self, data: &[u8]) -> Result<Step, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &data[pos..];
            match self.state {
                State::Head => match self.parse_head(rest)? {
                    None => return Ok(Step::NeedMore(pos)),
                    Some(n) => {
                        pos += n;
                        self.started = true;
                    }
                },
                State::Length(due) => {
                    let take = due.min(rest.len() as u64);
                    pos += take as usize;
                    if take == due {
                        return Ok(self.complete(pos));
                    }
                    self.state = State::Length(due - take);
                    return Ok(Step::NeedMore(pos));
                }
                State::ChunkSize => match parse_chunk_size(rest)? {
                    None => return Ok(Step::NeedMore(pos)),
                    Some((n, 0)) => {
                        pos += n;
                        self.state = State::Trailers;
                    }
                    Some((n, size)) => {
                        pos += n;
                        self.state = State::ChunkData(size);
                    }
                },
                State::ChunkData(due) => {
                    let take = due.min(rest.len() as u64);
                    pos += take as usize;
                    if take < due {
                        self.state = State::ChunkData(due - take);
                        return Ok(Step::NeedMore(pos));
                    }
                    self.state = State::ChunkEnd;
                }
                State::ChunkEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        pos += 2;
                        self.state = State::ChunkSize;
                    }
                    [] | [b'\r'] => return Ok(Step::NeedMore(pos)),
                    _ => return Err(ParseError::Malformed("chunk data not followed by CRLF")),
                },
                State::Trailers => match line_len(rest)? {
                    None => return Ok(Step::NeedMore(pos)),
                    Some(2) => return Ok(self.complete(pos + 2)),
                    Some(n) => pos += n,
                },
                State::UntilClose => return Ok(Step::NeedMore(data.len())),
            }
        }
    }

    /// The connection reached end of stream with `buffered` bytes still
    /// unconsumed. Completes a body that runs until close; anything else is
    /// [`ParseError::Closed`] (nothing of the response arrived) or
    /// [`ParseError::Truncated`].
    pub fn eof(&mut self, buffered: usize) -> Result<Response, ParseError> {
        let state = self.state;
        let started = self.started;
        self.reset();
        match state {
            State::UntilClose => Ok(self.current),
            State::Head if !started && buffered == 0 => Err(ParseError::Closed),
            _ => Err(ParseError::Truncated),
        }
    }

    fn complete(&mut self, consumed: usize) -> Step {
        self.state = State::Head;
        self.started = false;
        Step::Done(consumed, self.current)
    }

    /// Parses a head at the start of `data`: `Ok(None)` if incomplete, else
    /// the head's length, with `self.state` set to the body framing (an
    /// interim 1xx leaves it at `Head`).
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, ParseError> {
        if data.is_empty() {
            return Ok(None);
        }
        let cached = &self.cache.bytes[..self.cache.len];
        if !cached.is_empty() && data.starts_with(cached) {
            self.head_bytes += cached.len() as u64;
            self.state = self.cache.state;
            self.current = self.cache.response;
            return Ok(Some(cached.len()));
        }
        let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        let config = httparse::ParserConfig::default();
        let len = match config.parse_response_with_uninit_headers(&mut response, data, &mut headers)
        {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if data.len() >= MAX_HEAD => {
                return Err(ParseError::HeadTooLarge)
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ParseError::Malformed("too many headers"))
            }
            Err(_) => return Err(ParseError::Malformed("invalid status line or header")),
        };
        self.head_bytes += len as u64;
        let status = response.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            return Ok(Some(len)); // interim response: the final one follows
        }
        let http11 = response.version == Some(1);
        let mut keep_alive = http11;
        let mut length: Option<u64> = None;
        let mut chunked = None;
        for h in response.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                let n = parse_content_length(h.value)?;
                if length.is_some_and(|old| old != n) {
                    return Err(ParseError::Malformed("conflicting Content-Length"));
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && !http11 {
                        keep_alive = true;
                    }
                }
            }
        }
        self.state = if self.head_request || status == 204 || status == 304 {
            State::Length(0)
        } else if status == 101 {
            keep_alive = false; // the connection now speaks another protocol
            State::Length(0)
        } else {
            match (chunked, length) {
                (Some(true), _) => State::ChunkSize,
                (Some(false), _) | (None, None) => {
                    keep_alive = false;
                    State::UntilClose
                }
                (None, Some(n)) => State::Length(n),
            }
        };
        self.current = Response { status, keep_alive };
        if len <= HEAD_CACHE {
            self.cache.bytes[..len].copy_from_slice(&data[..len]);
            self.cache.len = len;
            self.cache.state = self.state;
            self.cache.response = self.current;
        }
        Ok(Some(len))
    }
}

fn parse_content_length(value: &[u8]) -> Result<u64, ParseError> {
    const BAD: ParseError = ParseError::Malformed("invalid Content-Length");
    let value = value.trim_ascii();
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return Err(BAD);
    }
    Ok(value.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
}

/// A chunk-size line at the start of `data`: `(line length, chunk size)`.
fn parse_chunk_size(data: &[u8]) -> Result<Option<(usize, u64)>, ParseError> {
    const BAD: ParseError = ParseError::Malformed("invalid chunk size");
    match data.first() {
        None => return Ok(None),
        Some(b) if !b.is_ascii_hexdigit() => return Err(BAD),
        Some(_) => {}
    }
    match httparse::parse_chunk_size(data) {
        Ok(httparse::Status::Complete(found)) => Ok(Some(found)),
        Ok(httparse::Status::Partial) if data.len() > MAX_LINE => Err(BAD),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(BAD),
    }
}

/// Length of the CRLF-terminated line at the start of `data`, CRLF included.
fn line_len(data: &[u8]) -> Result<Option<usize>, ParseError> {
    match memchr::memchr(b'\n', data) {
        Some(i) if i > 0 && data[i - 1] == b'\r' => Ok(Some(i + 1)),
        Some(_) => Err(ParseError::Malformed("trailer line not ended by CRLF")),
        None if data.len() > MAX_LINE => Err(ParseError::Malformed("trailer line too long")),
        None => Ok(None),
    }
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
