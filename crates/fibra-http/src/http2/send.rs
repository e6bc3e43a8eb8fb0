//! A stream's response on the wire: its head as HEADERS (the connection-specific fields of an
//! HTTP/1.1 response left out, `Date` and `Server` added, HPACK-encoded straight into the
//! connection's output), then its body through HTTP/2's [`BodySink`] — DATA frames within
//! the stream's flow-control window — and trailers.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderMap};
use http::StatusCode;

use super::hpack;
use super::stream_io::StreamIo;
use crate::date::with_date;
use crate::digits::itoa_buf;
use crate::going_away::GoingAwayList;
use crate::prepared::Encoding;
use crate::response::{
    each_field, error_response, is_bodiless, put_fields, send_body, BodyBytes, BodySink,
    BodyWriter, Kind, Response, Seen, StreamFn, StreamSink,
};
use crate::settings::Settings;

/// A streamed body's writes are gathered up to this many bytes before they go out as DATA.
const STREAM_BUFFER: usize = 16 * 1024;

/// What [`send`] did: the body bytes it sent, and whether it left the stream without its
/// END_STREAM.
pub(super) struct Sent {
    pub(super) bytes: u64,
    pub(super) unended: bool,
    /// The trailer fields that are to end the unended stream.
    pub(super) trailers: Option<HeaderMap>,
}

/// Why [`send`] failed, and the body bytes it had handed over by then.
pub(super) struct Failed(pub(super) io::Error, pub(super) u64);

/// Sends `response` on the stream: its head, then its body as DATA within the windows,
/// ending the stream unless `leave_open`.
pub(super) fn send(
    io: &Rc<StreamIo>,
    response: Response,
    is_head: bool,
    leave_open: bool,
    settings: &Settings,
    streamed: &Arc<GoingAwayList>,
) -> Result<Sent, Failed> {
    let last = !leave_open;
    let mut response = response;
    let prepared = response.take_prepared_head();
    let (parts, mut body) = response.into_parts();
    if let Kind::Upgrade(_) = body.kind {
        // No connection to hand over on HTTP/2 (RFC 8441's extended CONNECT is not offered).
        let e = error_response(
            StatusCode::NOT_IMPLEMENTED,
            "upgrade not supported on HTTP/2",
        );
        return send(io, e, is_head, leave_open, settings, streamed);
    }
    let bodiless = is_bodiless(parts.status);
    let len = body.len();
    let no_body = is_head || bodiless || len == Some(0);
    let content_type = body.content_type.take();
    let status = parts.status.as_u16();
    // The server's `Alt-Svc` unless the handler gave its own (looked for only where there is
    // one to add).
    let alt_svc = settings.alt_svc.as_ref().filter(|_| {
        let own = match &prepared {
            Some(p) => p.head().fields(),
            None => &parts.headers,
        };
        !own.contains_key(header::ALT_SVC)
    });
    let encode = |out: &mut Vec<u8>| {
        hpack::encode_status(out, status);
        let seen = put_fields(
            out,
            prepared.as_ref(),
            &parts.headers,
            content_type.is_some(),
            Encoding::Hpack,
            encode_fields,
        );
        let Seen {
            content_type: has_type,
            content_length: has_length,
            date: has_date,
            server: has_server,
        } = seen;
        if let Some(ct) = content_type.as_ref().filter(|_| !has_type) {
            hpack::encode_field(out, &header::CONTENT_TYPE, ct.as_bytes(), false);
        }
        if let Some(n) = len.filter(|_| !bodiless && !has_length) {
            let digits = itoa_buf(n);
            hpack::encode_field(out, &header::CONTENT_LENGTH, digits.as_slice(), false);
        }
        if !has_date {
            with_date(|d| hpack::encode_field(out, &header::DATE, d, false));
        }
        if let Some(server) = settings.server_header.as_ref().filter(|_| !has_server) {
            hpack::encode_field(out, &header::SERVER, server.as_bytes(), false);
        }
        if let Some(v) = alt_svc {
            hpack::encode_field(out, &header::ALT_SVC, v.as_bytes(), false);
        }
    };
    if no_body {
        io.send_headers(last, encode).map_err(|e| Failed(e, 0))?;
        return Ok(Sent {
            bytes: 0,
            unended: leave_open,
            trailers: None,
        });
    }
    io.send_headers(false, encode).map_err(|e| Failed(e, 0))?;
    let mut sink = Http2Body {
        io,
        last,
        timeout: settings.write_timeout,
        sent: 0,
        trailers: None,
        streamed,
    };
    let result = send_body(&mut body.kind, &mut sink);
    let Http2Body {
        sent: bytes,
        trailers,
        ..
    } = sink;
    match result {
        Ok(_) => Ok(Sent {
            bytes,
            unended: leave_open,
            trailers,
        }),
        Err(e) => Err(Failed(e, bytes)),
    }
}

/// Encodes a handler's fields in one pass (the connection-specific ones left out), noting
/// the ones the server would otherwise add.
fn encode_fields(out: &mut Vec<u8>, headers: &HeaderMap) -> Seen {
    each_field(headers, |name, value| {
        hpack::encode_field(out, name, value.as_bytes(), value.is_sensitive())
    })
}

/// Encodes trailer fields (a HEADERS block without pseudo-header fields).
pub(super) fn encode_trailers(out: &mut Vec<u8>, trailers: &HeaderMap) {
    encode_fields(out, trailers);
}

/// HTTP/2's [`BodySink`]: DATA frames on the stream, within its flow-control window, ending
/// the stream with the last one when `last`.
struct Http2Body<'a> {
    io: &'a Rc<StreamIo>,
    last: bool,
    timeout: Duration,
    /// Body bytes handed over so far (the access log's count).
    sent: u64,
    /// Trailer fields a streamed body set, when the stream is left open (`!last`).
    trailers: Option<HeaderMap>,
    /// Where a streamed body gets its shutdown signal (the connection's GOAWAY).
    streamed: &'a Arc<GoingAwayList>,
}

impl BodySink for Http2Body<'_> {
    fn bytes(&mut self, data: BodyBytes<'_>) -> io::Result<()> {
        let data = data.as_slice();
        self.io.send_data(data, self.last, self.timeout)?;
        self.sent += data.len() as u64;
        Ok(())
    }

    fn file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool> {
        self.io
            .send_file(file, offset, len, self.last, self.timeout, &mut self.sent)?;
        Ok(true)
    }

    fn stream(&mut self, len: Option<u64>, f: StreamFn) -> io::Result<bool> {
        let sink = RefCell::new(Sink {
            io: self.io.clone(),
            buf: Vec::new(),
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
        let Sink { buf, .. } = sink.into_inner();
        self.sent = written;
        result?;
        if remaining.is_some_and(|n| n > 0) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "streamed body shorter than its declared length",
            ));
        }
        let last = self.last;
        self.io
            .send_data(&buf, last && trailers.is_none(), self.timeout)?;
        // Trailers end the stream: now, or after the request's body (see `stream::run`).
        if let Some(t) = trailers.take_if(|_| last) {
            self.io.send_headers(true, |out| encode_trailers(out, &t))?;
        }
        self.trailers = trailers;
        Ok(true)
    }
}

/// Where a streamed body's [`BodyWriter`] writes: a buffer sent as DATA when it fills or is
/// flushed.
struct Sink {
    io: Rc<StreamIo>,
    buf: Vec<u8>,
    timeout: Duration,
}

impl StreamSink for Sink {
    fn sink_write(&mut self, data: &[u8], _chunked: bool) -> io::Result<()> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= STREAM_BUFFER {
            self.sink_flush()?;
        }
        Ok(())
    }

    fn sink_flush(&mut self) -> io::Result<()> {
        let r = self.io.send_data(&self.buf, false, self.timeout);
        self.buf.clear();
        r
    }
}
