//! A request stream's response on the wire: its head as a HEADERS frame (the
//! connection-specific fields of an HTTP/1.1 response left out, `Date` and `Server` added,
//! QPACK-encoded with the static table and literals), then its body as DATA frames through
//! HTTP/3's [`BodySink`], then the stream's FIN. A small body goes out in the same write as
//! the head and the FIN.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};

use bytes::Bytes;
use fibra_quic::SendStream;
use http::header::{self, HeaderMap};
use http::StatusCode;

use super::frame;
use super::qpack::Encoder;
use super::H3Error;
use crate::date::with_date;
use crate::digits::itoa_buf;
use crate::prepared::Encoding;
use crate::response::{
    each_field, error_response, is_bodiless, put_fields, send_body, BodyBytes, BodySink,
    BodyWriter, Kind, Response, Seen, StreamFn, StreamSink,
};
use crate::settings::Settings;

/// A streamed body goes out in DATA frames of up to this many bytes.
const CHUNK: usize = 16 * 1024;

/// A file goes out in DATA frames of up to this many bytes, each read into a buffer of its
/// own that the stream keeps until the client has acknowledged it: file data is copied once
/// on its way to the packets, not three times. (128 KiB against 64: a 1 MiB download cost
/// about 2 % less CPU, in half the reads and hand-overs; the chunk still fits a core's L2,
/// where the packets are made from it.)
const FILE_CHUNK: usize = 128 * 1024;

/// The encoder of every response: strings as they are (as HTTP/2's HPACK encoder does,
/// Huffman coding would cost more CPU than the bytes it saves on responses).
const ENCODER: Encoder = Encoder::new();

/// Why [`send`] failed, and the body bytes it had handed over by then.
pub(crate) struct Failed(pub(crate) io::Error, pub(crate) u64);

/// Sends `response` on `stream` and finishes it; returns the body bytes sent. A stream that
/// fails midway is reset (H3_INTERNAL_ERROR): the client must not take a cut body whole.
pub(crate) fn send(
    stream: SendStream,
    mut response: Response,
    is_head: bool,
    settings: &Settings,
) -> Result<u64, Failed> {
    let prepared = response.take_prepared_head();
    let (parts, mut body) = response.into_parts();
    if let Kind::Upgrade(_) = body.kind {
        // No connection to hand over on HTTP/3 (extended CONNECT is not offered).
        let e = error_response(
            StatusCode::NOT_IMPLEMENTED,
            "upgrade not supported on HTTP/3",
        );
        return send(stream, e, is_head, settings);
    }
    let bodiless = is_bodiless(parts.status);
    let len = body.len();
    let content_type = body.content_type.take();
    let mut out = Vec::with_capacity(256);
    frame::put_headers(&mut out, |out| {
        ENCODER.prefix(out);
        ENCODER.status(out, parts.status.as_u16());
        let seen = put_fields(
            out,
            prepared.as_ref(),
            &parts.headers,
            content_type.is_some(),
            Encoding::Qpack,
            encode_fields,
        );
        let Seen {
            content_type: has_type,
            content_length: has_length,
            date: has_date,
            server: has_server,
        } = seen;
        if let Some(ct) = content_type.as_ref().filter(|_| !has_type) {
            ENCODER.field(out, &header::CONTENT_TYPE, ct.as_bytes(), false);
        }
        if let Some(n) = len.filter(|_| !bodiless && !has_length) {
            let digits = itoa_buf(n);
            ENCODER.field(out, &header::CONTENT_LENGTH, digits.as_slice(), false);
        }
        if !has_date {
            with_date(|d| ENCODER.field(out, &header::DATE, d, false));
        }
        if let Some(server) = settings.server_header.as_ref().filter(|_| !has_server) {
            ENCODER.field(out, &header::SERVER, server.as_bytes(), false);
        }
    });
    let mut sink = Http3Body {
        stream: Some(stream),
        pending: out,
        sent: 0,
        staged: 0,
    };
    let result = if is_head || bodiless || len == Some(0) {
        Ok(true)
    } else {
        send_body(&mut body.kind, &mut sink)
    };
    let ended = result.and_then(|_| {
        let pending = std::mem::take(&mut sink.pending);
        sink.out()?.finish_with(&pending)?;
        sink.sent += sink.staged;
        Ok(())
    });
    match ended {
        Ok(()) => Ok(sink.sent),
        Err(e) => {
            if let Some(stream) = sink.stream.as_mut() {
                let _ = stream.reset(H3Error::InternalError.code());
            }
            Err(Failed(e, sink.sent))
        }
    }
}

/// Encodes `headers`' fields as QPACK field lines (the connection-specific ones left out),
/// noting the ones the server would otherwise add.
fn encode_fields(out: &mut Vec<u8>, headers: &HeaderMap) -> Seen {
    each_field(headers, |name, value| {
        ENCODER.field(out, name, value.as_bytes(), value.is_sensitive())
    })
}

/// Encodes a trailer section's fields (a HEADERS frame after the DATA).
fn put_trailers(out: &mut Vec<u8>, trailers: &HeaderMap) {
    frame::put_headers(out, |out| {
        ENCODER.prefix(out);
        encode_fields(out, trailers);
    });
}

/// HTTP/3's [`BodySink`]: DATA frames on the stream, the first one written with the head.
struct Http3Body {
    /// The stream; lent to a streamed body's sink while it runs.
    stream: Option<SendStream>,
    /// Frames composed and not yet written (the head, until the body's first bytes).
    pending: Vec<u8>,
    /// Body bytes handed over so far (the access log's count).
    sent: u64,
    /// Body bytes in `pending`, handed over with the stream's end.
    staged: u64,
}

impl Http3Body {
    /// The stream, unless a streamed body's sink holds it (never, outside that sink).
    fn out(&mut self) -> io::Result<&mut SendStream> {
        self.stream
            .as_mut()
            .ok_or_else(|| io::Error::other("HTTP/3 stream lent to a streamed body"))
    }

    /// Writes `data` as one DATA frame, after whatever is pending.
    fn data(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        frame::put_data_head(&mut self.pending, data.len() as u64);
        let mut pending = std::mem::take(&mut self.pending);
        let stream = self.out()?;
        if data.len() <= CHUNK {
            pending.extend_from_slice(data);
            stream.write_all(&pending)?;
        } else {
            stream.write_all(&pending)?;
            stream.write_all(data)?;
        }
        self.pending = pending;
        self.pending.clear();
        self.sent += data.len() as u64;
        Ok(())
    }
}

impl BodySink for Http3Body {
    fn bytes(&mut self, data: BodyBytes<'_>) -> io::Result<()> {
        let data = data.as_slice();
        if !data.is_empty() && self.pending.len() + data.len() <= CHUNK {
            // A whole small body: it goes out with the head and the stream's end, in one
            // write (`SendStream::finish_with`).
            frame::put_data_head(&mut self.pending, data.len() as u64);
            self.pending.extend_from_slice(data);
            self.staged += data.len() as u64;
            return Ok(());
        }
        self.data(data)
    }

    fn file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool> {
        let mut at = offset;
        let end = offset + len;
        while at < end {
            let want = FILE_CHUNK.min(usize::try_from(end - at).unwrap_or(usize::MAX));
            let mut data = Vec::with_capacity(want);
            let n = crate::response::append_file(&mut data, file, at, want)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shorter than the range being sent",
                ));
            }
            // The frame's head after whatever is pending (the response head, at first).
            let mut head = std::mem::take(&mut self.pending);
            frame::put_data_head(&mut head, n as u64);
            let mut chunks = [Bytes::from(head), Bytes::from(data)];
            self.out()?.write_chunks(&mut chunks)?;
            self.sent += n as u64;
            at += n as u64;
            if at < end {
                // Wait for the connection's driver to make packets of most of this chunk
                // before the next is read: copied into packets soon after it was read, it is
                // still in the cache. (Flow control would let a whole file be read ahead,
                // and each chunk be cold by the time it is sent.) Half a chunk left keeps a
                // lone download's packets flowing while the next one is read.
                self.out()?.wait_sent(FILE_CHUNK as u64 / 2)?;
            }
        }
        Ok(true)
    }

    fn stream(&mut self, len: Option<u64>, f: StreamFn) -> io::Result<bool> {
        let sink = RefCell::new(Chunks {
            body: Http3Body {
                stream: self.stream.take(),
                pending: std::mem::take(&mut self.pending),
                sent: 0,
                staged: 0,
            },
            buf: Vec::new(),
        });
        let mut writer = BodyWriter {
            sink: &sink,
            chunked: false,
            remaining: len,
            written: 0,
            trailers: None,
            going_away: None,
        };
        let result = f(&mut writer);
        let (written, remaining, trailers) =
            (writer.written, writer.remaining, writer.trailers.take());
        let Chunks { mut body, buf } = sink.into_inner();
        self.stream = body.stream.take();
        self.pending = std::mem::take(&mut body.pending);
        self.sent += written;
        result?;
        if remaining.is_some_and(|n| n > 0) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "streamed body shorter than its declared length",
            ));
        }
        self.data(&buf)?;
        if let Some(t) = trailers {
            put_trailers(&mut self.pending, &t);
        }
        Ok(true)
    }
}

/// Where a streamed body's [`BodyWriter`] writes: a buffer sent as a DATA frame when it
/// fills or is flushed.
struct Chunks {
    body: Http3Body,
    buf: Vec<u8>,
}

impl StreamSink for Chunks {
    fn sink_write(&mut self, data: &[u8], _chunked: bool) -> io::Result<()> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.sink_flush()?;
        }
        Ok(())
    }

    fn sink_flush(&mut self) -> io::Result<()> {
        let r = self.body.data(&self.buf);
        self.buf.clear();
        r
    }
}
