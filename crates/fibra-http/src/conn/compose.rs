//! Response-head composer: writes the status line, `Date`, `Server`, the handler's headers and
//! the framing headers straight into the connection's reused write buffer.

use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, DATE, SERVER, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use std::cell::RefCell;
use std::time::Instant;

use crate::backoff::Backoff;
use crate::date::{with_date, with_date_until};
use crate::digits::itoa_buf;

/// Pre-rendered status lines for the common codes; others are rendered on the fly.
fn status_line(status: StatusCode) -> Option<&'static [u8]> {
    Some(match status.as_u16() {
        100 => b"HTTP/1.1 100 Continue\r\n",
        101 => b"HTTP/1.1 101 Switching Protocols\r\n",
        200 => b"HTTP/1.1 200 OK\r\n",
        201 => b"HTTP/1.1 201 Created\r\n",
        204 => b"HTTP/1.1 204 No Content\r\n",
        206 => b"HTTP/1.1 206 Partial Content\r\n",
        301 => b"HTTP/1.1 301 Moved Permanently\r\n",
        302 => b"HTTP/1.1 302 Found\r\n",
        304 => b"HTTP/1.1 304 Not Modified\r\n",
        400 => b"HTTP/1.1 400 Bad Request\r\n",
        403 => b"HTTP/1.1 403 Forbidden\r\n",
        404 => b"HTTP/1.1 404 Not Found\r\n",
        405 => b"HTTP/1.1 405 Method Not Allowed\r\n",
        408 => b"HTTP/1.1 408 Request Timeout\r\n",
        413 => b"HTTP/1.1 413 Payload Too Large\r\n",
        414 => b"HTTP/1.1 414 URI Too Long\r\n",
        416 => b"HTTP/1.1 416 Range Not Satisfiable\r\n",
        431 => b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
        500 => b"HTTP/1.1 500 Internal Server Error\r\n",
        501 => b"HTTP/1.1 501 Not Implemented\r\n",
        503 => b"HTTP/1.1 503 Service Unavailable\r\n",
        505 => b"HTTP/1.1 505 HTTP Version Not Supported\r\n",
        _ => return None,
    })
}

/// Appends the status line for `status` to `out`.
pub(crate) fn put_status(out: &mut Vec<u8>, status: StatusCode) {
    match status_line(status) {
        Some(line) => out.extend_from_slice(line),
        None => {
            out.extend_from_slice(b"HTTP/1.1 ");
            out.extend_from_slice(status.as_str().as_bytes());
            out.push(b' ');
            out.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Framing the composer writes after the handler's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// No framing header (1xx, 204, 304, or a body delimited by close).
    None,
}

/// What the connection header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnHeader {
    /// `Connection: close`.
    Close,
    /// `Connection: keep-alive` (HTTP/1.0 clients).
    KeepAlive,
    /// Nothing (HTTP/1.1 keep-alive default).
    Omit,
    /// The handler's own `Connection` header is passed through (101 responses).
    Handler,
}

/// Appends a complete response head to `out`. Returns true when the handler's own
/// `Connection` field asks to close (then `Connection: close` is written whatever `conn`
/// says, except for [`ConnHeader::Handler`], which passes the field through).
///
/// Most servers send the same head many times in a row (the same status and fields, only the
/// `Date` changing once a second), so the worker keeps the last head it composed with what
/// it was made from: when those are equal, the head is one copy (with the current date put
/// in). When heads keep differing it stops looking, like the request-head cache.
#[inline(always)]
pub(crate) fn put_head(out: &mut Vec<u8>, head: &HeadOut<'_>) -> bool {
    let cell: *const RefCell<LastHead> = LAST_HEAD.with(|cell| cell as *const _);
    // SAFETY: `with` returned, so this thread's value is alive; it lives until the thread's
    // thread-locals are destroyed, which cannot happen during this call on this thread. The
    // pointer is only used here. (Outside `with`, the composer below is inlined here.)
    let cell = unsafe { &*cell };
    let Ok(mut last) = cell.try_borrow_mut() else {
        return compose(out, head).handler_close;
    };
    last.put(out, head)
}

/// What a response head is composed from.
#[derive(Clone, Copy)]
pub(crate) struct HeadOut<'a> {
    pub(crate) status: StatusCode,
    /// The handler's fields.
    pub(crate) headers: &'a HeaderMap,
    /// The body's media type, written as `Content-Type` unless `headers` have one.
    pub(crate) content_type: Option<&'a HeaderValue>,
    /// The `Server` value, written unless `headers` have one.
    pub(crate) server: Option<&'a str>,
    pub(crate) framing: Framing,
    pub(crate) conn: ConnHeader,
}

thread_local! {
    static LAST_HEAD: RefCell<LastHead> = RefCell::new(LastHead::default());
}

/// The last response head this thread composed, and what it was composed from.
#[derive(Default)]
struct LastHead {
    status: StatusCode,
    /// `None` until a head is kept; then `bytes` is the head composed from these fields.
    framing: Option<Framing>,
    conn: Option<ConnHeader>,
    content_type: Option<HeaderValue>,
    server: Option<String>,
    fields: Vec<(HeaderName, HeaderValue)>,
    bytes: Vec<u8>,
    /// When the second of the `Date` in `bytes` ends; until then it is current. `None` when
    /// not known (the `Date` is rewritten on the next use).
    date_until: Option<Instant>,
    composed: Composed,
    /// Heads in a row that differed from the one kept; when backing off only every 16th is
    /// kept.
    misses: Backoff,
}

impl LastHead {
    #[inline(always)]
    fn put(&mut self, out: &mut Vec<u8>, head: &HeadOut<'_>) -> bool {
        if self.status == head.status
            && self.framing == Some(head.framing)
            && self.conn == Some(head.conn)
            && self.server.as_deref() == head.server
            && same_value(self.content_type.as_ref(), head.content_type)
            && head.headers.len() == self.fields.len()
            && (self.fields.is_empty()
                || head
                    .headers
                    .iter()
                    .zip(&self.fields)
                    .all(|((n, v), (kn, kv))| n == kn && v == kv))
        {
            self.misses.hit();
            if let Some(at) = self.composed.date_at {
                if self.date_until.is_none_or(|u| fibra::time::now() >= u) {
                    self.restamp(at);
                }
            }
            out.extend_from_slice(&self.bytes);
            return self.composed.handler_close;
        }
        self.miss(out, head)
    }

    /// The kept head's `Date` (at `at`) may be a second old: rewritten with the current one
    /// (once a second at most).
    #[inline(never)]
    fn restamp(&mut self, at: usize) {
        with_date_until(|until, d| {
            self.bytes[at..at + d.len()].copy_from_slice(d);
            self.date_until = Some(until);
        });
    }

    /// A head unlike the last one: composed afresh, and kept unless backing off.
    #[cold]
    #[inline(never)]
    fn miss(&mut self, out: &mut Vec<u8>, head: &HeadOut<'_>) -> bool {
        let keep = self.misses.take_chance();
        self.misses.miss();
        if !keep {
            return compose(out, head).handler_close;
        }
        // Compose, and keep a copy with what it was made from.
        let start = out.len();
        let composed = compose(out, head);
        self.bytes.clear();
        self.bytes.extend_from_slice(&out[start..]);
        self.date_until = None;
        self.fields.clear();
        self.fields
            .extend(head.headers.iter().map(|(n, v)| (n.clone(), v.clone())));
        self.status = head.status;
        self.framing = Some(head.framing);
        self.conn = Some(head.conn);
        if !same_value(self.content_type.as_ref(), head.content_type) {
            self.content_type = head.content_type.cloned();
        }
        if self.server.as_deref() != head.server {
            self.server = head.server.map(str::to_owned);
        }
        self.composed = Composed {
            handler_close: composed.handler_close,
            date_at: composed.date_at.map(|at| at - start),
        };
        composed.handler_close
    }
}

/// Whether two optional values are equal; the same bytes in memory (a clone of the kept value,
/// or of the same `from_static` one) are equal without comparing them. The kept value keeps its
/// bytes alive, so equal pointers and lengths mean equal contents.
#[inline]
fn same_value(kept: Option<&HeaderValue>, new: Option<&HeaderValue>) -> bool {
    match (kept, new) {
        (Some(a), Some(b)) => {
            let (a, b) = (a.as_bytes(), b.as_bytes());
            a.len() == b.len() && (a.as_ptr() == b.as_ptr() || a == b)
        }
        (None, None) => true,
        _ => false,
    }
}

/// What [`compose`] wrote besides the bytes.
#[derive(Default, Clone, Copy)]
pub(crate) struct Composed {
    /// The handler's `Connection` field asked to close.
    pub(crate) handler_close: bool,
    /// Where the `Date` value starts, if the composer wrote one.
    date_at: Option<usize>,
}

/// [`put_head`] without the cache: composes the head field by field.
pub(crate) fn compose(out: &mut Vec<u8>, head: &HeadOut<'_>) -> Composed {
    let HeadOut {
        status,
        headers,
        content_type,
        server,
        framing,
        conn,
    } = *head;
    put_status(out, status);
    // One pass over the handler's fields; `Date`/`Server` are added after them unless present
    // (a scan of a few fields is cheaper than two hash lookups).
    let keep_user_length = framing == Framing::None && status == StatusCode::NOT_MODIFIED;
    let mut has_date = false;
    let mut has_server = false;
    let mut has_type = false;
    let mut handler_close = false;
    for (name, value) in headers {
        if name == DATE {
            has_date = true;
        } else if name == SERVER {
            has_server = true;
        } else if name == CONTENT_TYPE {
            has_type = true;
        } else if name == CONNECTION && conn != ConnHeader::Handler {
            handler_close |= has_close_token(value.as_bytes());
            continue;
        } else if (name == CONTENT_LENGTH && !keep_user_length) || name == TRANSFER_ENCODING {
            continue;
        }
        put_field(out, name, value);
    }
    if let (Some(ctype), false) = (content_type, has_type) {
        out.extend_from_slice(b"Content-Type: ");
        out.extend_from_slice(ctype.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let date_at = (!has_date).then(|| put_date(out));
    let server = server.filter(|_| !has_server);
    put_closing_fields(out, server, framing, conn, handler_close);
    Composed {
        handler_close,
        date_at,
    }
}

/// Appends a head whose fields were rendered ahead of time (`raw`: whole field lines, no
/// `Date`, `Server`, `Connection` or framing field among them, see `Response::raw`): the
/// status line, `raw` as it is, then what [`compose`] adds after a handler's fields. No
/// per-field work, and no last-head comparison (such heads differ from file to file).
pub(crate) fn put_raw_head(
    out: &mut Vec<u8>,
    status: StatusCode,
    raw: &[u8],
    server: Option<&str>,
    framing: Framing,
    conn: ConnHeader,
) {
    put_status(out, status);
    out.extend_from_slice(raw);
    put_date(out);
    put_closing_fields(out, server, framing, conn, false);
}

/// Appends the `Date` field line with the current date; returns where its value starts.
#[inline]
fn put_date(out: &mut Vec<u8>) -> usize {
    with_date(|d| {
        out.extend_from_slice(b"Date: ");
        let at = out.len();
        out.extend_from_slice(d);
        out.extend_from_slice(b"\r\n");
        at
    })
}

/// Appends what follows the fields of a head: `Server` if given, the framing field, the
/// `Connection` field `conn` asks for (`close` also when the handler's own field asked to
/// close, `handler_close`), and the empty line.
#[inline]
fn put_closing_fields(
    out: &mut Vec<u8>,
    server: Option<&str>,
    framing: Framing,
    conn: ConnHeader,
    handler_close: bool,
) {
    if let Some(server) = server {
        put_server(out, server);
    }
    put_framing(out, framing);
    match conn {
        ConnHeader::Handler => {}
        _ if handler_close => out.extend_from_slice(b"Connection: close\r\n"),
        ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
        ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        ConnHeader::Omit => {}
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends the field that frames the body: `Content-Length`, `Transfer-Encoding: chunked`,
/// or nothing.
#[inline]
fn put_framing(out: &mut Vec<u8>, framing: Framing) {
    match framing {
        Framing::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(itoa_buf(n).as_slice());
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::None => {}
    }
}

/// Adds the field line `name` (with its `": "`) `value` to the head at the end of `out`,
/// before its empty line. Out of line: only a server with something to add (its `Alt-Svc`)
/// comes here, after the head was composed or copied as usual.
#[cold]
#[inline(never)]
pub(crate) fn append_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    debug_assert!(out.ends_with(b"\r\n\r\n"));
    out.truncate(out.len() - 2);
    out.extend_from_slice(name);
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n\r\n");
}

/// Appends the `Server` field line.
#[inline]
fn put_server(out: &mut Vec<u8>, server: &str) {
    out.extend_from_slice(b"Server: ");
    out.extend_from_slice(server.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends one field line, `Name: value` and CRLF, the name as [`put_name`] writes it (the
/// head's fields, and a chunked body's trailer fields).
#[inline]
pub(crate) fn put_field(out: &mut Vec<u8>, name: &http::HeaderName, value: &http::HeaderValue) {
    put_name(out, name.as_str().as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends a field name as nginx writes it on HTTP/1.1: Title-Case (`content-type` becomes
/// `Content-Type`), with the spellings it keeps for a few (`ETag`, `WWW-Authenticate`), so that
/// a handler's fields (lowercase in `http::HeaderName`) match the server's own. Names are
/// case-insensitive (RFC 9110 5.1): this is for people and for clients that compare bytes.
#[inline]
fn put_name(out: &mut Vec<u8>, name: &[u8]) {
    match name {
        b"etag" => return out.extend_from_slice(b"ETag"),
        b"www-authenticate" => return out.extend_from_slice(b"WWW-Authenticate"),
        _ => {}
    }
    let start = out.len();
    out.extend_from_slice(name);
    let mut upper = true;
    for b in &mut out[start..] {
        if upper {
            b.make_ascii_uppercase();
        }
        upper = *b == b'-';
    }
}

/// Whether a `Connection` field value lists `close`.
pub(crate) fn has_close_token(v: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;
