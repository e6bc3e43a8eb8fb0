//! One request stream, in its own fiber (Warp's thread per stream): the request as the
//! application sees it over HTTP/1.1 (a [`Request`] whose [`crate::Body`] reads the stream's
//! DATA frames), the unchanged handler, and its [`Response`] sent as HEADERS and DATA frames
//! within the peer's flow-control windows.
//!
//! The fiber only hands frames to the `h2` crate's shared state; the connection's owner fiber
//! (woken through the crate's wakers) writes them, batched with every other stream's.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};

use super::park::Parker;
use crate::access_log::{HeadFields, LogEntry};
use crate::body::{Body, BodySource};
use crate::date::with_date;
use crate::error::ProtocolError;
use crate::request::Request;
use crate::response::{
    error_response, is_bodiless, send_body, BodyBytes, BodySink, BodyWriter, FileSource, Kind,
    Response, StreamFn, StreamSink,
};
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::skip_to_line_offset;

/// DATA is handed to the crate in pieces of at most this many bytes, each within the
/// stream's window: a file or stream body holds no more than this in memory per stream.
const PIECE: usize = 64 * 1024;

/// In-memory bodies up to this size are handed over whole, without waiting for window
/// (the crate buffers them): the common small response costs no flow-control round.
const SMALL: usize = 16 * 1024;

/// Runs one request stream: the handler, then its response.
pub(crate) fn run<H>(
    req: http::Request<RecvStream>,
    respond: SendResponse<Bytes>,
    settings: &Settings,
    handler: &H,
    (peer, server_name): (Option<SocketAddr>, Option<Arc<str>>),
) where
    H: Service + ?Sized,
{
    let parker = Rc::new(Parker::new());
    let (mut parts, recv) = req.into_parts();
    // The application reads the target's host from `Host`, as over HTTP/1.1.
    if !parts.headers.contains_key(header::HOST) {
        if let Some(value) = parts
            .uri
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
        {
            parts.headers.insert(header::HOST, value);
        }
    }
    let is_head = parts.method == Method::HEAD;
    let expects_continue = parts
        .headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let respond = Rc::new(RefCell::new(respond));
    let src = Rc::new(RefCell::new(StreamBody {
        recv,
        chunk: Bytes::new(),
        parker: parker.clone(),
        respond: expects_continue.then(|| respond.clone()),
        timeout: settings.body_read_timeout,
        left: settings.max_body_bytes,
        peer,
        server_name,
        trailers: None,
        rejected: None,
    }));
    let logged = settings.logs_access().then(|| Logged::of(&parts));
    // A body declared larger than the limit is refused before the handler runs, as over
    // HTTP/1.1 (the crate has checked that the DATA will match the declared length). A
    // request that has ended (no body: most) is not looked at.
    let declared_too_large = !src.borrow().recv.is_end_stream()
        && parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .is_some_and(|n| n > settings.max_body_bytes);
    // A body that grew past the limit while the handler read it is answered the same way,
    // in place of whatever the handler made of the failed read (as HTTP/1.1 does). Either
    // way no more of it is read: the stream is reset (NO_ERROR) once the answer has gone.
    let mut response = if declared_too_large {
        refuse(settings, peer, TOO_LARGE)
    } else {
        let body = Body::from_conn(src.clone(), 0);
        let request = Request::from(http::Request::from_parts(parts, body));
        match catch_unwind(AssertUnwindSafe(|| handler.call(request))) {
            Ok(r) => r,
            Err(p) => {
                settings.report_caught(peer, p);
                error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
            }
        }
    };
    let mut rejected = declared_too_large;
    if let Some(e) = src.borrow_mut().rejected.take() {
        response = refuse(settings, peer, e);
        rejected = true;
    }
    let status = response.status();
    // The client may still be sending a body the handler did not read. Then the response
    // goes out whole except for its END_STREAM, the rest of the body is read (up to
    // `max_drain_bytes`, as HTTP/1.1 drains), and only then is the stream ended: it stays
    // open on both sides meanwhile, so what the client sends on it is still checked (a
    // WINDOW_UPDATE overflow is a stream error, RFC 9113 §6.9.1, which the crate no longer
    // reports once our side is closed), and the response ends after the request, as with
    // a server that reads the body first. Not when a `100 Continue` is still owed: that
    // client sends no body after a final answer.
    let body_open = {
        let src = src.borrow();
        !src.recv.is_end_stream() && src.respond.is_none() && !rejected
    };
    let mut respond = respond.borrow_mut();
    let sent = match send(
        &mut respond,
        response,
        is_head,
        body_open,
        settings,
        &parker,
    ) {
        Ok(sent) => sent,
        Err(Failed(e, bytes)) => {
            log::debug!("HTTP/2 stream {:?} from {peer:?}: {e}", respond.stream_id());
            respond.send_reset(Reason::CANCEL);
            // Logged as nginx logs an aborted response: with what had gone.
            if let Some(logged) = logged {
                logged.log(settings, peer, status, bytes);
            }
            return;
        }
    };
    if let Some(logged) = logged {
        logged.log(settings, peer, status, sent.bytes);
    }
    if !rejected {
        src.borrow_mut().drain(settings.max_drain_bytes);
    }
    if let Some(mut out) = sent.unended {
        // Past the drain limit or timeout the stream ends all the same, and dropping it
        // then resets what is left of the request with NO_ERROR (RFC 9113 §8.1).
        let _ = match sent.trailers {
            Some(t) => out.send_trailers(t),
            None => out.send_data(Bytes::new(), true),
        };
    }
}

/// The server's own answer to a request it refused (`e`, reported to the error hook).
#[cold]
fn refuse(settings: &Settings, peer: Option<SocketAddr>, e: ProtocolError) -> Response {
    settings.report_rejected(peer, e);
    error_response(e.status(), TOO_LARGE_TEXT)
}

/// What [`send`] did: the body bytes it sent, and the stream if it was left without its
/// END_STREAM.
struct Sent {
    bytes: u64,
    unended: Option<SendStream<Bytes>>,
    /// The trailer fields that are to end the unended stream.
    trailers: Option<HeaderMap>,
}

/// Why [`send`] failed, and the body bytes it had handed over by then.
struct Failed(io::Error, u64);

impl From<h2::Error> for Failed {
    fn from(e: h2::Error) -> Failed {
        Failed(h2_error(e), 0)
    }
}

/// Headers that belong to one HTTP/1.1 connection, not to a message (RFC 9113 §8.2.2): a
/// handler written for HTTP/1.1 may set them, HTTP/2 must not send them.
const CONNECTION_SPECIFIC: [HeaderName; 4] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    HeaderName::from_static("keep-alive"),
];

/// Sends `response` on the stream: its head, then its body as DATA within the windows,
/// ending the stream unless `leave_open`.
fn send(
    respond: &mut SendResponse<Bytes>,
    response: Response,
    is_head: bool,
    leave_open: bool,
    settings: &Settings,
    parker: &Rc<Parker>,
) -> Result<Sent, Failed> {
    let last = !leave_open;
    let (mut parts, mut body) = response.into_parts();
    parts.version = http::Version::HTTP_2;
    let headers = &mut parts.headers;
    for name in &CONNECTION_SPECIFIC {
        headers.remove(name);
    }
    headers.remove(HeaderName::from_static("proxy-connection"));
    let bodiless = is_bodiless(parts.status);
    if let Kind::Upgrade(_) = body.kind {
        // No connection to hand over on HTTP/2 (RFC 8441's extended CONNECT is not offered).
        let e = error_response(
            StatusCode::NOT_IMPLEMENTED,
            "upgrade not supported on HTTP/2",
        );
        return send(respond, e, is_head, leave_open, settings, parker);
    }
    let len = body.len();
    if let Some(ct) = body.content_type.take() {
        headers.entry(header::CONTENT_TYPE).or_insert(ct);
    }
    if !bodiless {
        if let Some(n) = len {
            headers
                .entry(header::CONTENT_LENGTH)
                .or_insert_with(|| HeaderValue::from(n));
        }
    }
    put_server_headers(headers, settings);
    let no_body = is_head || bodiless || len == Some(0);
    let head = http::Response::from_parts(parts, ());
    let out = respond.send_response(head, no_body && last)?;
    let sent = |bytes, out| Sent {
        bytes,
        unended: leave_open.then_some(out),
        trailers: None,
    };
    if no_body {
        return Ok(sent(0, out));
    }
    let mut sink = Http2Body {
        out: Some(out),
        last,
        parker,
        timeout: settings.write_timeout,
        sent: 0,
        trailers: None,
    };
    let result = send_body(&mut body.kind, &mut sink);
    let Http2Body {
        out,
        sent: bytes,
        trailers,
        ..
    } = sink;
    match (result, out) {
        (Ok(_), Some(out)) => Ok(Sent {
            trailers,
            ..sent(bytes, out)
        }),
        (Err(e), _) => Err(Failed(e, bytes)),
        (Ok(_), None) => unreachable!("the body sink gives the stream back"),
    }
}

/// HTTP/2's [`BodySink`]: DATA frames on the stream, within its flow-control window (small
/// in-memory bodies handed over whole), ending the stream with the last one when `last`.
struct Http2Body<'a> {
    /// The stream; taken while a streamed body's writer runs.
    out: Option<SendStream<Bytes>>,
    last: bool,
    parker: &'a Rc<Parker>,
    timeout: std::time::Duration,
    /// Body bytes handed to the crate so far (the access log's count).
    sent: u64,
    /// Trailer fields a streamed body set, when the stream is left open (`!last`).
    trailers: Option<HeaderMap>,
}

impl Http2Body<'_> {
    fn out(&mut self) -> &mut SendStream<Bytes> {
        match &mut self.out {
            Some(out) => out,
            None => unreachable!("given back after each stream"),
        }
    }
}

impl BodySink for Http2Body<'_> {
    fn bytes(&mut self, data: BodyBytes<'_>) -> io::Result<()> {
        let data = data.into_shared();
        let len = data.len() as u64;
        let (last, parker, timeout) = (self.last, self.parker, self.timeout);
        send_data(self.out(), data, last, parker, timeout)?;
        self.sent += len;
        Ok(())
    }

    fn file(&mut self, source: FileSource<'_>, offset: u64, len: u64) -> io::Result<bool> {
        let (last, parker, timeout) = (self.last, self.parker, self.timeout);
        let mut sent = 0;
        let out = match &mut self.out {
            Some(out) => out,
            None => unreachable!("given back after each stream"),
        };
        let result = send_file(
            out,
            source.file,
            offset,
            len,
            last,
            parker,
            timeout,
            &mut sent,
        );
        self.sent += sent;
        result.map(|()| true)
    }

    fn stream(&mut self, len: Option<u64>, f: StreamFn) -> io::Result<bool> {
        let Some(out) = self.out.take() else {
            unreachable!("given back after each stream")
        };
        let sink = RefCell::new(Sink {
            out,
            buf: BytesMut::new(),
            parker: self.parker.clone(),
            timeout: self.timeout,
        });
        let mut writer = BodyWriter {
            sink: &sink,
            chunked: false,
            remaining: len,
            written: 0,
            trailers: None,
        };
        let result = f(&mut writer);
        let (written, remaining, mut trailers) =
            (writer.written, writer.remaining, writer.trailers.take());
        let Sink { out, mut buf, .. } = sink.into_inner();
        let out = self.out.insert(out);
        self.sent = written;
        result?;
        if remaining.is_some_and(|n| n > 0) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "streamed body shorter than its declared length",
            ));
        }
        let rest = buf.split().freeze();
        let last = self.last;
        send_data(
            out,
            rest,
            last && trailers.is_none(),
            self.parker,
            self.timeout,
        )?;
        // Trailers end the stream: now, or after the request's body (see `run`).
        if let Some(t) = trailers.take_if(|_| last) {
            out.send_trailers(t).map_err(h2_error)?;
        }
        self.trailers = trailers;
        Ok(true)
    }
}

/// What the access log needs of a request, kept while the handler owns the request.
struct Logged {
    method: Method,
    target: String,
    host: Option<HeaderValue>,
    referer: Option<HeaderValue>,
    user_agent: Option<HeaderValue>,
}

impl Logged {
    fn of(parts: &http::request::Parts) -> Logged {
        let uri = &parts.uri;
        let fields = HeadFields::of(&parts.headers, uri);
        let value = |v: Option<&[u8]>| v.and_then(|v| HeaderValue::from_bytes(v).ok());
        Logged {
            method: parts.method.clone(),
            target: uri
                .path_and_query()
                .map_or(uri.path(), |pq| pq.as_str())
                .to_owned(),
            host: value(fields.host),
            referer: value(fields.referer),
            user_agent: value(fields.user_agent),
        }
    }

    /// Hands the entry of the answered request to the server's sinks.
    fn log(&self, settings: &Settings, peer: Option<SocketAddr>, status: StatusCode, bytes: u64) {
        let line = (self.method.as_str(), self.target.as_str(), "HTTP/2.0");
        let fields = HeadFields {
            host: self.host.as_ref().map(HeaderValue::as_bytes),
            referer: self.referer.as_ref().map(HeaderValue::as_bytes),
            user_agent: self.user_agent.as_ref().map(HeaderValue::as_bytes),
        };
        let entry = LogEntry::of(peer, line, fields, status.as_u16(), bytes);
        settings.log_access(&entry);
    }
}

/// `Date`, and `Server` if configured, unless the handler set them.
fn put_server_headers(headers: &mut HeaderMap, settings: &Settings) {
    if !headers.contains_key(header::DATE) {
        let date = with_date(|d| HeaderValue::from_bytes(d));
        if let Ok(date) = date {
            headers.insert(header::DATE, date);
        }
    }
    if let Some(server) = &settings.server_header {
        if !headers.contains_key(header::SERVER) {
            if let Ok(v) = HeaderValue::from_str(server) {
                headers.insert(header::SERVER, v);
            }
        }
    }
}

/// Sends `data` (the end of the stream if `last`): a small piece at once, a larger one in
/// pieces as the peer's windows open, waiting at most `timeout` for each.
fn send_data(
    out: &mut SendStream<Bytes>,
    mut data: Bytes,
    last: bool,
    parker: &Parker,
    timeout: std::time::Duration,
) -> io::Result<()> {
    if data.len() <= SMALL {
        if !data.is_empty() || last {
            out.send_data(data, last).map_err(h2_error)?;
        }
        return Ok(());
    }
    while !data.is_empty() {
        let n = capacity(out, data.len().min(PIECE), parker, timeout)?;
        let piece = data.split_to(n);
        out.send_data(piece, last && data.is_empty())
            .map_err(h2_error)?;
    }
    Ok(())
}

/// Waits until the stream may send up to `want` bytes; returns how many (at least one).
fn capacity(
    out: &mut SendStream<Bytes>,
    want: usize,
    parker: &Parker,
    timeout: std::time::Duration,
) -> io::Result<usize> {
    out.reserve_capacity(want);
    loop {
        let have = out.capacity();
        if have > 0 {
            return Ok(have.min(want));
        }
        match parker.poll_until(timeout, |cx| out.poll_capacity(cx))? {
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(h2_error(e)),
            None => return Err(io::Error::from(io::ErrorKind::BrokenPipe)),
        }
    }
}

/// Where in a 64-byte line a file piece starts: 14 past a 16-byte boundary, where a DATA
/// frame's payload lands in rustls's record buffer over TLS (5 bytes of record header, 9 of
/// frame head, in a 16-aligned allocation; each later record of a frame then starts 16375
/// bytes on, 5 past a boundary again), and 46 bytes into the line so that the file read's
/// copy from the page cache starts well past it. The reason is the CPU's string copy, as
/// for HTTP/1.1's file buffer (`transport::COPY_ALIGN`).
const FILE_ALIGN: usize = 46;

/// `len` bytes of `file` from `offset`, read in pieces the size of the window that is open;
/// its last piece ends the stream if `last`. Adds the bytes handed over to `sent` as it goes.
#[allow(clippy::too_many_arguments)] // the stream's sending context, as the other senders take it
fn send_file(
    out: &mut SendStream<Bytes>,
    file: &File,
    offset: u64,
    len: u64,
    last: bool,
    parker: &Parker,
    timeout: std::time::Duration,
    sent: &mut u64,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let (mut offset, end) = (offset, offset + len);
    while offset < end {
        let want = ((end - offset) as usize).min(PIECE);
        let n = capacity(out, want, parker, timeout)?;
        let mut buf = BytesMut::zeroed(n + 64);
        buf.advance(skip_to_line_offset(buf.as_ptr(), FILE_ALIGN));
        buf.truncate(n);
        let got = file.read_at(&mut buf, offset)?;
        if got == 0 {
            // The file shrank below the length in the head: end the stream with an error
            // rather than send fewer bytes than promised.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than its Content-Length",
            ));
        }
        buf.truncate(got);
        offset += got as u64;
        out.send_data(buf.freeze(), last && offset == end)
            .map_err(h2_error)?;
        *sent += got as u64;
    }
    Ok(())
}

/// Where a streamed body's [`BodyWriter`] writes: a buffer sent as DATA when it fills or is
/// flushed.
struct Sink {
    out: SendStream<Bytes>,
    buf: BytesMut,
    parker: Rc<Parker>,
    timeout: std::time::Duration,
}

impl StreamSink for Sink {
    fn sink_write(&mut self, data: &[u8], _chunked: bool) -> io::Result<()> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= SMALL {
            self.sink_flush()?;
        }
        Ok(())
    }

    fn sink_flush(&mut self) -> io::Result<()> {
        let data = self.buf.split().freeze();
        send_data(&mut self.out, data, false, &self.parker, self.timeout)
    }
}

/// The stream's request body, as the [`Body`] source.
struct StreamBody {
    recv: RecvStream,
    /// The DATA not yet read by the application.
    chunk: Bytes,
    parker: Rc<Parker>,
    /// Set while a `100 Continue` is owed (sent before the first read).
    respond: Option<Rc<RefCell<SendResponse<Bytes>>>>,
    timeout: std::time::Duration,
    /// Body bytes still allowed (`Settings::max_body_bytes`).
    left: u64,
    peer: Option<SocketAddr>,
    /// The connection's TLS server name (SNI).
    server_name: Option<Arc<str>>,
    /// The request's trailer fields, once the body has ended, until the handler takes them.
    trailers: Option<HeaderMap>,
    /// Set when the body went past the limit: the server answers with this instead of the
    /// handler's response.
    rejected: Option<ProtocolError>,
}

/// A request body over `Settings::max_body_bytes`, as HTTP/1.1 answers it.
const TOO_LARGE: ProtocolError =
    ProtocolError::new(StatusCode::PAYLOAD_TOO_LARGE, "body too large");
/// The body of that answer (HTTP/1.1's: the reason and a newline).
const TOO_LARGE_TEXT: &str = "body too large\n";

impl StreamBody {
    /// Waits (up to the body read timeout) for the next DATA and gives its window back to
    /// the client; `None` at the end of the body.
    fn next_data(&mut self) -> io::Result<Option<Bytes>> {
        let recv = &mut self.recv;
        match self
            .parker
            .poll_until(self.timeout, |cx| recv.poll_data(cx))?
        {
            Some(Ok(data)) => {
                let _ = recv.flow_control().release_capacity(data.len());
                Ok(Some(data))
            }
            Some(Err(e)) => Err(h2_error(e)),
            None => {
                // After the last DATA: a trailing HEADERS frame, if the client sent one
                // (already received, so this does not wait).
                let trailers = self
                    .parker
                    .poll_until(self.timeout, |cx| recv.poll_trailers(cx))?;
                self.trailers = trailers.map_err(h2_error)?;
                Ok(None)
            }
        }
    }

    /// Reads and discards the rest of the body, at most `limit` bytes.
    fn drain(&mut self, limit: u64) {
        let mut left = limit.saturating_sub(self.chunk.len() as u64);
        self.chunk.clear();
        self.respond = None;
        while !self.recv.is_end_stream() {
            match self.next_data() {
                Ok(Some(data)) => match left.checked_sub(data.len() as u64) {
                    Some(l) => left = l,
                    None => return,
                },
                _ => return,
            }
        }
    }
}

impl BodySource for StreamBody {
    fn read_body(&mut self, _seq: u64, out: &mut [u8]) -> io::Result<usize> {
        if self.chunk.is_empty() {
            if let Some(respond) = self.respond.take() {
                let head = http::Response::builder()
                    .status(StatusCode::CONTINUE)
                    .body(())
                    .expect("a valid 100 Continue head");
                respond
                    .borrow_mut()
                    .send_informational(head)
                    .map_err(h2_error)?;
            }
            match self.next_data()? {
                Some(data) => {
                    if data.len() as u64 > self.left {
                        self.left = 0;
                        self.rejected = Some(TOO_LARGE);
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "request body larger than the limit",
                        ));
                    }
                    self.left -= data.len() as u64;
                    self.chunk = data;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len());
        out[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }

    fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn server_name(&self) -> Option<Arc<str>> {
        self.server_name.clone()
    }

    fn remaining_hint(&self, _seq: u64) -> Option<u64> {
        None
    }

    fn trailers(&mut self, _seq: u64) -> Option<HeaderMap> {
        self.trailers.take()
    }
}

/// An `h2` error as an I/O error (the crate's own I/O errors unwrapped).
pub(crate) fn h2_error(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e
            .into_io()
            .unwrap_or_else(|| io::Error::other("HTTP/2 I/O error"));
    }
    io::Error::other(e)
}
