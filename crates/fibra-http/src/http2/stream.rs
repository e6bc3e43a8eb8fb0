//! One request stream, in its own fiber (Warp's thread per stream): the request as the
//! application sees it over HTTP/1.1 (a [`Request`] whose [`crate::Body`] reads the stream's
//! DATA frames), the unchanged handler, and its [`Response`] sent as HEADERS and DATA frames
//! within the peer's flow-control windows.
//!
//! The fiber puts its frames into the connection's shared output; the owner fiber writes
//! them, batched with every other stream's.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use http::header;
use http::{Method, StatusCode};

use super::frame::code;
use super::request_body::StreamBody;
use super::send::{send, Failed};
use super::stream_io::StreamIo;
use crate::access_log::LoggedRequest;
use crate::body::Body;
use crate::error::ProtocolError;
use crate::going_away::GoingAwayList;
use crate::request::Request;
use crate::response::{error_response, Response};
use crate::service::Service;
use crate::settings::Settings;

/// What a stream knows of its connection.
pub(crate) struct ConnInfo {
    /// The client's address.
    pub(crate) peer: Option<SocketAddr>,
    /// The TLS server name (SNI).
    pub(crate) server_name: Option<Arc<str>>,
    /// Where a streamed body gets its shutdown signal.
    pub(crate) streamed: Arc<GoingAwayList>,
}

/// Runs one request stream: the handler, then its response.
pub(crate) fn run<H>(
    parts: http::request::Parts,
    io: StreamIo,
    settings: &Settings,
    handler: &H,
    conn: ConnInfo,
) where
    H: Service + ?Sized,
{
    let ConnInfo {
        peer,
        server_name,
        streamed,
    } = conn;
    let io = Rc::new(io);
    let is_head = parts.method == Method::HEAD;
    let expects_continue = parts
        .headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let recv_ended = io.recv_ended();
    let src = Rc::new(RefCell::new(StreamBody {
        io: io.clone(),
        chunk: Bytes::new(),
        owes_continue: expects_continue && !recv_ended,
        ended: recv_ended,
        timeout: settings.body_read_timeout,
        left: settings.max_body_bytes,
        peer,
        server_name,
        listener: settings.listener,
        trailers: None,
        rejected: None,
    }));
    let logged = settings.logs_access().then(|| LoggedRequest::of(&parts));
    // A body declared larger than the limit is refused before the handler runs, as over
    // HTTP/1.1 (the DATA is checked against the declared length as it comes). A request
    // that has ended (no body: most) is not looked at.
    let declared_too_large = !recv_ended
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
    // WINDOW_UPDATE overflow is a stream error, RFC 9113 §6.9.1), and the response ends
    // after the request, as with a server that reads the body first. Not when a
    // `100 Continue` is still owed: that client sends no body after a final answer.
    let body_open = {
        let src = src.borrow();
        !src.ended && !io.recv_ended() && !src.owes_continue && !rejected
    };
    let sent = match send(&io, response, is_head, body_open, settings, &streamed) {
        Ok(sent) => sent,
        Err(Failed(e, bytes)) => {
            log::debug!("HTTP/2 stream {} from {peer:?}: {e}", io.id());
            io.reset(code::CANCEL);
            // Logged as nginx logs an aborted response: with what had gone.
            if let Some(logged) = logged {
                logged.log(peer, "HTTP/2.0", status, bytes, |e| settings.log_access(e));
            }
            return;
        }
    };
    if let Some(logged) = logged {
        logged.log(peer, "HTTP/2.0", status, sent.bytes, |e| {
            settings.log_access(e)
        });
    }
    if sent.unended {
        if !rejected {
            src.borrow_mut().drain(settings.max_drain_bytes);
        }
        // Past the drain limit or timeout the stream ends all the same, and the fiber's
        // end then resets what is left of the request with NO_ERROR (RFC 9113 §8.1).
        let _ = match sent.trailers {
            Some(t) => io.send_headers(true, |out| super::send::encode_trailers(out, &t)),
            None => io.send_data(&[], true, settings.write_timeout),
        };
    }
}

/// The server's own answer to a request it refused (`e`, reported to the error hook).
#[cold]
fn refuse(settings: &Settings, peer: Option<SocketAddr>, e: ProtocolError) -> Response {
    settings.report_rejected(peer, e);
    error_response(e.status(), TOO_LARGE_TEXT)
}

/// A request body over `Settings::max_body_bytes`, as HTTP/1.1 answers it.
pub(super) const TOO_LARGE: ProtocolError =
    ProtocolError::new(StatusCode::PAYLOAD_TOO_LARGE, "body too large");
/// The body of that answer (HTTP/1.1's: the reason and a newline).
const TOO_LARGE_TEXT: &str = "body too large\n";
