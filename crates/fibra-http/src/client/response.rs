//! The response parser: heads with `httparse`, body framing per RFC 9112 §6.3, chunked
//! bodies with [`ChunkedDecoder`]. See the [module documentation](super) for the design and
//! the leniencies.

use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Range;

use super::chunked::ChunkedDecoder;

/// Most header lines accepted in one response head.
pub const MAX_HEADERS: usize = 64;
/// Largest response head accepted (status line plus headers), in bytes.
pub const MAX_HEAD: usize = 64 * 1024;

/// What a response said about itself, as far as reading the stream is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Response {
    /// Final status code (never 1xx except 101).
    pub status: u16,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

/// How the body of a final response is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Framing {
    /// Exactly this many bytes (0 for `HEAD` requests, 101, 204 and 304 responses, whatever
    /// the headers say).
    Length(u64),
    /// `Transfer-Encoding` ending in `chunked`; it overrides any `Content-Length`.
    Chunked,
    /// Neither: the body runs until the server closes the connection (also when the last
    /// transfer coding is not `chunked`).
    UntilClose,
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

/// Result of one [`ResponseParser::next_event`] call; `consumed` bytes of the input were
/// used in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// Bytes at the start of the input that were used; the rest is for later calls.
    pub consumed: usize,
    /// What those bytes were.
    pub event: Event,
}

/// What [`ResponseParser::next_event`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Nothing complete: keep the unconsumed input, append more, and call again.
    NeedMore,
    /// An interim response head (1xx other than 101) is the consumed input, byte for byte;
    /// another head follows.
    Interim {
        /// Its status code.
        status: u16,
    },
    /// The final response head is the consumed input, byte for byte (status line, fields,
    /// empty line), ready to be forwarded or parsed for its fields; its body follows.
    Head {
        /// Status and persistence.
        response: Response,
        /// How the body is delimited.
        framing: Framing,
    },
    /// Body data: this range of the input (within the consumed bytes), decoded from the
    /// chunked coding if there was one. Never empty.
    Data(Range<usize>),
    /// The response is complete (its trailer section, if any, consumed and dropped); the next
    /// bytes belong to the next response.
    Done(Response),
}

/// Why a response could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

impl std::error::Error for ParseError {}

/// Where the parser is within the current response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for a (possibly interim) status line and headers.
    Head,
    /// This many body bytes are still due.
    Length(u64),
    /// In a chunked body, decoded by `ResponseParser::chunked`.
    Chunked,
    /// The body ends when the connection closes.
    UntilClose,
}

impl State {
    fn of(framing: Framing) -> State {
        match framing {
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Chunked,
            Framing::UntilClose => State::UntilClose,
        }
    }
}

/// Incremental parser for the stream of responses on one connection.
///
/// The caller owns the receive buffer and hands the parser the bytes it has not consumed yet,
/// appending what it reads next to what is left over. Two ways to drive it, which may not be
/// mixed within one response:
///
/// * [`feed`](ResponseParser::feed) consumes as much as it can and stops after one complete
///   response, only counting body bytes (the benchmark's fast path);
/// * [`next_event`](ResponseParser::next_event) returns at every head, run of body data and
///   response end, handing the body out as ranges of the input (for a proxy).
///
/// At end of stream call [`eof`](ResponseParser::eof). After an error the connection must be
/// dropped.
///
/// ```
/// use fibra_http::client::{Event, ResponseParser, Step};
///
/// let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
///
/// // Counting: one call completes the response.
/// let mut parser = ResponseParser::new(false);
/// let Ok(Step::Done(n, response)) = parser.feed(input) else { panic!() };
/// assert_eq!((n, response.status, response.keep_alive), (input.len(), 200, true));
///
/// // Forwarding: the head, then the body data as ranges of the input, then the end.
/// let mut parser = ResponseParser::new(false);
/// let (mut at, mut body) = (0, Vec::new());
/// loop {
///     let step = parser.next_event(&input[at..]).unwrap();
///     match step.event {
///         Event::Head { .. } => assert!(input[at..at + step.consumed].ends_with(b"\r\n\r\n")),
///         Event::Data(range) => body.extend_from_slice(&input[at..][range]),
///         Event::Done(_) => break,
///         _ => {}
///     }
///     at += step.consumed;
/// }
/// assert_eq!(body, b"hello");
/// ```
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// The chunked body being read, in `State::Chunked`.
    chunked: ChunkedDecoder,
    /// Responses answer `HEAD` requests: no body whatever the headers say.
    head_request: bool,
    /// Some bytes of the current response (e.g. an interim 1xx) were consumed.
    started: bool,
    /// Status and persistence of the current response, once its head is parsed.
    current: Response,
    /// Status of the last interim response.
    interim: u16,
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
    framing: Framing,
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
            chunked: ChunkedDecoder::new(),
            head_request,
            started: false,
            current: Response {
                status: 0,
                keep_alive: false,
            },
            interim: 0,
            head_bytes: 0,
            cache: HeadCache {
                len: 0,
                bytes: [0; HEAD_CACHE],
                framing: Framing::UntilClose,
                response: Response {
                    status: 0,
                    keep_alive: false,
                },
            },
        }
    }

    /// Sets whether the next response answers a `HEAD` request (and so has no body), for a
    /// connection whose requests use different methods. Call it before that response's head
    /// is parsed, i.e. after the previous response is done.
    pub fn set_head_request(&mut self, head_request: bool) {
        if head_request != self.head_request {
            self.head_request = head_request;
            self.cache.len = 0; // the cached framing was decided for the other method
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

    /// Body bytes of the current response still due when its length is known and its head
    /// has been parsed (0 otherwise): what a caller that only counts bodies may drop from the
    /// stream unread and pass to [`skip_body`](ResponseParser::skip_body).
    pub fn body_due(&self) -> u64 {
        match self.state {
            State::Length(due) => due,
            _ => 0,
        }
    }

    /// Counts `n` body bytes (at most [`body_due`](ResponseParser::body_due)) as received
    /// without seeing them: the caller dropped them from the stream. The next
    /// [`feed`](ResponseParser::feed) completes the response when none is left (also with no
    /// input).
    pub fn skip_body(&mut self, n: u64) {
        if let State::Length(due) = self.state {
            assert!(n <= due, "skipped {n} body bytes with {due} due");
            self.state = State::Length(due - n);
        } else {
            assert_eq!(n, 0, "skipped body bytes of a body without a known length");
        }
    }

    /// Consumes as much of `data` as possible, stopping after one complete
    /// response; body bytes are counted, not copied. After an error the
    /// connection must be dropped.
    pub fn feed(&mut self, data: &[u8]) -> Result<Step, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &data[pos..];
            match self.state {
                State::Head => match self.parse_head(rest)? {
                    None => return Ok(Step::NeedMore(pos)),
                    Some((n, _)) => {
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
                State::Chunked => {
                    pos += self.chunked.decode(rest)?.consumed;
                    if self.chunked.is_done() {
                        return Ok(self.complete(pos));
                    }
                    if pos == data.len() {
                        return Ok(Step::NeedMore(pos));
                    }
                }
                State::UntilClose => return Ok(Step::NeedMore(data.len())),
            }
        }
    }

    /// Consumes `data` up to the next event: a response head, a run of body
    /// data, or the end of a response. Interim 1xx heads are reported too.
    /// After an error the connection must be dropped.
    pub fn next_event(&mut self, data: &[u8]) -> Result<Parsed, ParseError> {
        let (consumed, event) = match self.state {
            State::Head => match self.parse_head(data)? {
                None => (0, Event::NeedMore),
                Some((n, framing)) => {
                    self.started = true;
                    match framing {
                        None => (
                            n,
                            Event::Interim {
                                status: self.interim,
                            },
                        ),
                        Some(framing) => (
                            n,
                            Event::Head {
                                response: self.current,
                                framing,
                            },
                        ),
                    }
                }
            },
            State::Length(0) => (0, self.done()),
            State::Length(due) => {
                let take = due.min(data.len() as u64);
                self.state = State::Length(due - take);
                match take as usize {
                    0 => (0, Event::NeedMore),
                    n => (n, Event::Data(0..n)),
                }
            }
            State::Chunked => {
                let step = self.chunked.decode(data)?;
                let event = if !step.data.is_empty() {
                    Event::Data(step.data)
                } else if self.chunked.is_done() {
                    self.done()
                } else {
                    Event::NeedMore
                };
                (step.consumed, event)
            }
            State::UntilClose if data.is_empty() => (0, Event::NeedMore),
            State::UntilClose => (data.len(), Event::Data(0..data.len())),
        };
        Ok(Parsed { consumed, event })
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
        Step::Done(consumed, self.finish())
    }

    /// Ends the current response, as an event.
    fn done(&mut self) -> Event {
        Event::Done(self.finish())
    }

    /// Ends the current response.
    fn finish(&mut self) -> Response {
        self.state = State::Head;
        self.started = false;
        self.current
    }

    /// Enters the body of the current response.
    fn start_body(&mut self, framing: Framing) {
        self.state = State::of(framing);
        if framing == Framing::Chunked {
            self.chunked = ChunkedDecoder::new();
        }
    }

    /// Parses a head at the start of `data`: `Ok(None)` if incomplete, else
    /// the head's length and, for a final response, its framing (entered in
    /// `self.state`); an interim 1xx leaves the state at `Head` and its status
    /// in `self.interim`.
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<(usize, Option<Framing>)>, ParseError> {
        if data.is_empty() {
            return Ok(None);
        }
        let cached = &self.cache.bytes[..self.cache.len];
        if !cached.is_empty() && data.starts_with(cached) {
            let (len, framing) = (cached.len(), self.cache.framing);
            self.head_bytes += len as u64;
            self.start_body(framing);
            self.current = self.cache.response;
            return Ok(Some((len, Some(framing))));
        }
        let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        let len = match parser_config().parse_response_with_uninit_headers(
            &mut response,
            data,
            &mut headers,
        ) {
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
            self.interim = status;
            return Ok(Some((len, None))); // interim response: the final one follows
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
        let framing = if self.head_request || status == 204 || status == 304 {
            Framing::Length(0)
        } else if status == 101 {
            keep_alive = false; // the connection now speaks another protocol
            Framing::Length(0)
        } else {
            match (chunked, length) {
                (Some(true), _) => Framing::Chunked,
                (Some(false), _) | (None, None) => {
                    keep_alive = false;
                    Framing::UntilClose
                }
                (None, Some(n)) => Framing::Length(n),
            }
        };
        self.start_body(framing);
        self.current = Response { status, keep_alive };
        if len <= HEAD_CACHE {
            self.cache.bytes[..len].copy_from_slice(&data[..len]);
            self.cache.len = len;
            self.cache.framing = framing;
            self.cache.response = self.current;
        }
        Ok(Some((len, Some(framing))))
    }
}

/// `httparse` set up for responses as RFC 9112 lets a client read them: several spaces
/// between the status-line elements (§4), whitespace between a field name and its colon
/// (§5.1, which a proxy removes), and obs-fold continuation lines (§5.2, whose CR, LF and
/// leading whitespace the value checks below treat as spaces). Bare LF line endings (§2.2)
/// are accepted by `httparse` in any configuration.
pub fn parser_config() -> httparse::ParserConfig {
    let mut config = httparse::ParserConfig::default();
    config
        .allow_multiple_spaces_in_response_status_delimiters(true)
        .allow_spaces_after_header_name_in_responses(true)
        .allow_obsolete_multiline_headers_in_responses(true);
    config
}

/// A `Content-Length` value: digits, or a list of identical ones (RFC 9110 §8.6 lets a
/// recipient take `5, 5` as `5`).
fn parse_content_length(value: &[u8]) -> Result<u64, ParseError> {
    const BAD: ParseError = ParseError::Malformed("invalid Content-Length");
    let mut found = None;
    for item in value.split(|&b| b == b',') {
        let item = item.trim_ascii();
        if item.is_empty() || item.len() > 19 || !item.iter().all(u8::is_ascii_digit) {
            return Err(BAD);
        }
        let n = item.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0'));
        if found.is_some_and(|old| old != n) {
            return Err(ParseError::Malformed("conflicting Content-Length"));
        }
        found = Some(n);
    }
    found.ok_or(BAD)
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
