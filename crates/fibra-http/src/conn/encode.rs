//! Encoding responses: the head ([`super::compose`]) and the body — in-memory bytes
//! (`put_bytes`), file ranges (`put_file`, `sendfile` for large ones), streaming writers
//! (`write_stream`, the [`StreamSink`] a `BodyWriter` writes to) — and the server's own error
//! responses (`put_error`).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

use http::StatusCode;

use super::buffered::{not_connected, Shared};
use super::compose::{append_field, compose, put_head, put_raw_head, ConnHeader, Framing, HeadOut};
use crate::error::ProtocolError;
use crate::lazy::NO_HEADERS;
use crate::lifecycle::ConnCtl;
use crate::response::{
    append_file, is_bodiless, send_body, BodyBytes, BodySink, BodyWriter, Kind, Response, StreamFn,
    StreamSink, UpgradeFn, FLUSH_BYTES, INLINE_FILE_BYTES,
};
use crate::settings::Settings;
use crate::transport::Transport;

/// A file body is sent in pieces of this size (see `put_file`).
const SEND_FILE_PIECE: u64 = 1 << 20;

/// In-memory bodies up to this size are copied into the write buffer (one write with the
/// head); bigger ones are written from where they are. (Sending a cached file of a few KiB
/// with `writev` next to the head instead of copying it measured no better: the copy of its
/// cold bytes moved from user to kernel time.)
const INLINE_BODY_BYTES: usize = 64 * 1024;

impl<T: Transport> Shared<T> {
    /// Appends an in-memory body to the output.
    pub(super) fn put_bytes(&mut self, b: &[u8]) -> io::Result<()> {
        if b.len() <= INLINE_BODY_BYTES {
            self.wbuf.extend_from_slice(b);
            Ok(())
        } else {
            self.put_large(b)
        }
    }

    /// A body too large to copy: the buffered output goes first, then the body is written.
    // Out of line: rare, and keeps `put_bytes` small where it is inlined.
    #[inline(never)]
    pub(super) fn put_large(&mut self, b: &[u8]) -> io::Result<()> {
        self.flush()?;
        let io = self.io()?;
        let mut written = 0;
        let res = loop {
            if written == b.len() {
                break Ok(());
            }
            match io.write(&b[written..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        if res.is_err() {
            // What the transport took counts in the access log (as for a file).
            self.body_sent = Some(written as u64);
        }
        res
    }

    /// Sends a file range; returns false if the file was shorter than promised. On failure
    /// too, `body_sent` says how much of it left.
    // Out of line: keeps the file path (and its head-before-body write) out of `write_response`.
    #[inline(never)]
    pub(super) fn put_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool> {
        if len <= INLINE_FILE_BYTES {
            let len = len as usize;
            let got = append_file(&mut self.wbuf, file, offset, len)?;
            if got != len {
                self.body_sent = Some(got as u64);
            }
            return Ok(got == len);
        }
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let mut corked = false;
        let mut res = crate::transport::write_before_file(io, &self.wbuf).map(|c| corked = c);
        self.wbuf.clear();
        // In pieces, so that when the client goes away the access log can say how much had
        // left (to within a piece).
        let mut sent = 0;
        while res.is_ok() && sent < len {
            let piece = (len - sent).min(SEND_FILE_PIECE);
            match crate::transport::send_file(io, file, offset + sent, piece) {
                Ok(n) => {
                    sent += n;
                    // Fewer than asked: the file ended, or the connection failed after some
                    // bytes (`sendfile` then reports what left); either way the promised
                    // length cannot be met and the connection closes. (Calling again to tell
                    // the two apart would wait for a writable edge that a short file never
                    // brings.)
                    if n < piece {
                        break;
                    }
                }
                Err(e) => res = Err(e),
            }
        }
        // (A failed head write may have left a cork on: undone too, though the connection ends.)
        if corked || res.is_err() {
            let _ = crate::transport::set_cork(io, false);
        }
        if sent != len {
            self.body_sent = Some(sent);
        }
        res?;
        Ok(sent == len)
    }
}

impl<T: Transport> StreamSink for Shared<T> {
    fn sink_write(&mut self, data: &[u8], chunked: bool) -> io::Result<()> {
        if self.wbuf.len() + data.len() + 32 > FLUSH_BYTES {
            self.flush()?;
        }
        if chunked {
            let _ = write!(self.wbuf, "{:x}\r\n", data.len());
        }
        if data.len() > FLUSH_BYTES {
            self.flush()?;
            self.io()?.write_all(data)?;
        } else {
            self.wbuf.extend_from_slice(data);
        }
        if chunked {
            self.wbuf.extend_from_slice(b"\r\n");
        }
        Ok(())
    }
    fn sink_flush(&mut self) -> io::Result<()> {
        self.flush()?;
        self.io()?.flush()
    }
}

/// Appends the error response for `e` (always `Connection: close`: the connection ends). A
/// `HEAD` request's answer keeps the headers, `Content-Length` included, and leaves out the
/// text.
// Cold and out of line: only rejected requests get here.
#[cold]
#[inline(never)]
pub(super) fn put_error(out: &mut Vec<u8>, e: &ProtocolError, server: Option<&str>, is_head: bool) {
    let reason = e.reason().as_bytes();
    compose(
        out,
        &HeadOut {
            status: e.status(),
            headers: &http::HeaderMap::new(),
            content_type: Some(&http::HeaderValue::from_static("text/plain")),
            server,
            framing: Framing::Length(reason.len() as u64 + 1),
            conn: ConnHeader::Close,
        },
    );
    if !is_head {
        out.extend_from_slice(reason);
        out.push(b'\n');
    }
}

/// Runs a streaming body's writer (out of line: most responses are in memory).
#[cold]
#[inline(never)]
fn write_stream<T: Transport>(
    cell: &RefCell<Shared<T>>,
    len: Option<u64>,
    f: StreamFn,
    chunked: bool,
    settings: &Settings,
    ctl: &ConnCtl<'_>,
    close: &mut bool,
) {
    let mut w = BodyWriter {
        sink: cell as &RefCell<dyn StreamSink>,
        chunked,
        remaining: len,
        written: 0,
        trailers: None,
        going_away: ctl.going_away(),
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut w)));
    cell.borrow_mut().body_sent = Some(w.written);
    match outcome {
        Ok(Ok(())) if w.remaining.unwrap_or(0) == 0 => {
            if chunked {
                let out = &mut cell.borrow_mut().wbuf;
                out.extend_from_slice(b"0\r\n");
                for (name, value) in w.trailers.iter().flatten() {
                    super::compose::put_field(out, name, value);
                }
                out.extend_from_slice(b"\r\n");
            }
        }
        Ok(Ok(())) => *close = true,
        Ok(Err(e)) => {
            log::debug!("streaming body failed: {e}");
            *close = true;
        }
        Err(p) => {
            let peer = cell.borrow().peer;
            settings.report_caught(peer, p);
            *close = true;
        }
    }
}

/// HTTP/1.1's [`BodySink`]: the connection's write buffer (small bodies go out with the
/// head), the socket for large ones, `sendfile` for files, chunks for a stream of unknown
/// length. It holds the connection as `write_response` borrowed it; a stream's writer, which
/// borrows the connection per call, is kept for `write_response` to run once that borrow has
/// ended.
struct Http1Body<'a, T> {
    sh: &'a mut Shared<T>,
    stream: Option<(Option<u64>, StreamFn)>,
}

impl<T: Transport> BodySink for Http1Body<'_, T> {
    #[inline(always)]
    fn bytes(&mut self, data: BodyBytes<'_>) -> io::Result<()> {
        self.sh.put_bytes(data.as_slice())
    }
    #[inline(always)]
    fn file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<bool> {
        self.sh.put_file(file, offset, len)
    }
    fn stream(&mut self, len: Option<u64>, f: StreamFn) -> io::Result<bool> {
        self.stream = Some((len, f));
        Ok(true)
    }
}

/// A 101 without an upgrade body is the handler's mistake: answer 500 instead.
// Cold and out of line: a handler bug, kept off the send path.
#[cold]
#[inline(never)]
pub(super) fn bad_101(resp: &mut Response) {
    *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    *resp.body_mut() = "101 without an upgrade body\n".into();
}

/// Composes the head and sends or buffers the body. Returns the upgrade callback of a 101.
// Forced inline into `Conn::send`: the response is read in place, never copied (see
// `Conn::respond` on store forwarding).
#[inline(always)]
pub(super) fn write_response<T: Transport>(
    cell: &RefCell<Shared<T>>,
    resp: &mut Response,
    is_head: bool,
    http11: bool,
    settings: &Settings,
    ctl: &ConnCtl<'_>,
    close: &mut bool,
) -> io::Result<Option<UpgradeFn>> {
    let server = settings.server_header.as_deref();
    // The response is read in place (by reference): a copy of a value just built field by
    // field stalls on store forwarding. Only a stream's or an upgrade's callback is moved out.
    let status = resp.status;
    let no_framing = is_bodiless(status);
    // One look at the body kind for an in-memory body (most responses): its bytes give the
    // length too.
    let memory = resp.body.as_bytes();
    let len = match memory {
        Some(b) => Some(b.len() as u64),
        None => resp.body.len(),
    };
    let framing = match len {
        _ if no_framing => Framing::None,
        Some(n) => Framing::Length(n),
        None if http11 => Framing::Chunked,
        None => {
            *close = true;
            Framing::None
        }
    };
    let upgrade = status == StatusCode::SWITCHING_PROTOCOLS;
    let conn = if upgrade {
        ConnHeader::Handler
    } else if *close {
        ConnHeader::Close
    } else if !http11 {
        ConnHeader::KeepAlive
    } else {
        ConnHeader::Omit
    };
    let mut sh = cell.borrow_mut();
    if let Some(raw) = &resp.raw {
        // Fields rendered ahead of time (a cached file's): copied as they are.
        put_raw_head(
            &mut sh.wbuf,
            status,
            raw.head().lines(super::render_fields),
            server,
            framing,
            conn,
        );
    } else {
        let head = HeadOut {
            status,
            headers: resp.headers.get_or(&NO_HEADERS),
            content_type: resp.body.content_type.as_ref(),
            server,
            framing,
            conn,
        };
        if put_head(&mut sh.wbuf, &head) {
            *close = true;
        }
    }
    // The server's `Alt-Svc` (`--http3`), unless the handler gave its own: added to the head
    // just written, so that the composer and its cache stay as they are without one.
    if let Some(v) = &settings.alt_svc {
        if !resp.headers().contains_key(http::header::ALT_SVC) {
            append_field(&mut sh.wbuf, b"Alt-Svc: ", v.as_bytes());
        }
    }
    if let Kind::Upgrade(_) = resp.body.kind {
        super::cold_path();
        let Kind::Upgrade(f) = std::mem::replace(&mut resp.body.kind, Kind::Empty) else {
            unreachable!()
        };
        return Ok(upgrade.then_some(f));
    }
    if is_head || no_framing {
        return Ok(None);
    }
    // Bytes in memory (most responses) straight into the buffer; any other body through the
    // one match over the body kinds. (All through `send_body`, a pipelined request cost ~10
    // more instructions, 1.4 %: bench/arch_gate.sh.)
    if let Some(bytes) = memory {
        sh.put_bytes(bytes)?;
    } else {
        let mut sink = Http1Body {
            sh: &mut sh,
            stream: None,
        };
        if !send_body(&mut resp.body.kind, &mut sink)? {
            *close = true;
        }
        if let Some((len, f)) = sink.stream {
            drop(sh);
            let chunked = framing == Framing::Chunked;
            write_stream(cell, len, f, chunked, settings, ctl, close);
            sh = cell.borrow_mut();
        }
    }
    if sh.wbuf.len() > FLUSH_BYTES {
        sh.flush()?;
    }
    Ok(None)
}
