//! A stream's response on the wire: its head as HEADERS (the connection-specific fields of an
//! HTTP/1.1 response left out, `Date` and `Server` added), then its body through HTTP/2's
//! [`BodySink`] — DATA frames within the stream's flow-control window — and trailers.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::rc::Rc;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use h2::server::SendResponse;
use h2::SendStream;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::StatusCode;

use super::park::Parker;
use super::stream::h2_error;
use crate::date::with_date;
use crate::going_away::GoingAwayList;
use crate::response::{
    error_response, is_bodiless, send_body, BodyBytes, BodySink, BodyWriter, Kind, Response,
    StreamFn, StreamSink,
};
use crate::settings::Settings;
use crate::transport::skip_to_line_offset;

/// DATA is handed to the crate in pieces of at most this many bytes, each within the
/// stream's window: a file or stream body holds no more than this in memory per stream.
const PIECE: usize = 64 * 1024;

/// In-memory bodies up to this size are handed over whole, without waiting for window
/// (the crate buffers them): the common small response costs no flow-control round.
const SMALL: usize = 16 * 1024;

/// What [`send`] did: the body bytes it sent, and the stream if it was left without its
/// END_STREAM.
pub(super) struct Sent {
    pub(super) bytes: u64,
    pub(super) unended: Option<SendStream<Bytes>>,
    /// The trailer fields that are to end the unended stream.
    pub(super) trailers: Option<HeaderMap>,
}

/// Why [`send`] failed, and the body bytes it had handed over by then.
pub(super) struct Failed(pub(super) io::Error, pub(super) u64);

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
pub(super) fn send(
    respond: &mut SendResponse<Bytes>,
    response: Response,
    is_head: bool,
    leave_open: bool,
    settings: &Settings,
    parker: &Rc<Parker>,
    streamed: &Arc<GoingAwayList>,
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
        return send(respond, e, is_head, leave_open, settings, parker, streamed);
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
        streamed,
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
    /// Where a streamed body gets its shutdown signal (the connection's GOAWAY).
    streamed: &'a Arc<GoingAwayList>,
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

    fn file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool> {
        let (last, parker, timeout) = (self.last, self.parker, self.timeout);
        let mut sent = 0;
        let result = send_file(
            self.out(),
            file,
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
            // Set when the connection sends its GOAWAY (graceful shutdown).
            going_away: Some(self.streamed.register()),
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
