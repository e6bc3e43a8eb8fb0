//! One request stream, in its own fiber: the request as the application sees it over
//! HTTP/1.1 and HTTP/2 (a [`Request`] whose [`crate::Body`] reads the stream's DATA frames),
//! the unchanged handler, and its [`Response`] sent as HEADERS and DATA frames.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Mutex;

use fibra_quic::{RecvStream, SendStream};
use http::{Method, StatusCode};

use super::frame::Carrier;
use super::incoming::{Fail, Incoming, Next};
use super::qpack::Decoder;
use super::request_body::StreamBody;
use super::request_head::{decode_request_cached, Decoded, LastHeads};
use super::send::{send, Failed};
use super::H3Error;
use crate::access_log::LoggedRequest;
use crate::body::Body;
use crate::error::ProtocolError;
use crate::request::Request;
use crate::response::{error_response, Response};
use crate::service::Service;
use crate::settings::Settings;

/// The request line's protocol in the access log (as HTTP/2's is `HTTP/2.0`, and as nginx
/// and Caddy write HTTP/3's).
const PROTOCOL: &str = "HTTP/3.0";

/// A request body over `Settings::max_body_bytes`, as HTTP/1.1 and HTTP/2 answer it.
const TOO_LARGE: ProtocolError =
    ProtocolError::new(StatusCode::PAYLOAD_TOO_LARGE, "body too large");
/// The body of that answer (HTTP/1.1's: the reason and a newline).
const TOO_LARGE_TEXT: &str = "body too large\n";
/// A request head over `Settings::max_head_bytes`.
const HEAD_TOO_LARGE: ProtocolError = ProtocolError::new(
    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
    "request head too large",
);

/// The longest HEADERS frame read whole for a field section limit of `max_section`: twice
/// the limit, and at least 32 KiB, as HTTP/2 bounds a header block. A section encoded
/// larger than the limit may still decode within it (Huffman codes can be longer than their
/// text), and one that decodes larger is answered 431; past this bound the client is
/// flooding, and the connection is closed with H3_EXCESSIVE_LOAD.
pub(super) fn max_frame(max_section: usize) -> u64 {
    2 * max_section.max(16 * 1024) as u64
}

/// Runs one request stream: reads the request's head (through the connection's
/// `last_heads`), runs the handler, sends its response. `Err` is a connection error (the
/// client broke HTTP/3), for the caller to close the connection with; what only concerns
/// the stream is handled here.
pub(crate) fn run<H>(
    mut send_half: SendStream,
    recv: RecvStream,
    settings: &Settings,
    handler: &H,
    peer: Option<SocketAddr>,
    last_heads: &Mutex<LastHeads>,
) -> Result<(), H3Error>
where
    H: Service + ?Sized,
{
    let max_section = settings.max_head_bytes;
    // Opened by 0-RTT data, which an attacker may replay (RFC 8470, RFC 9114 §10.9).
    let early = recv.is_0rtt();
    let mut incoming = Incoming::new(recv, Carrier::Request);
    // Unknown and reserved frames before it are skipped by `Incoming`.
    let section = match incoming.next(max_frame(max_section)) {
        Ok(Next::Headers(section)) => section,
        // DATA before HEADERS (§4.1); `Next::Frame` cannot come on a request stream.
        Ok(Next::Data | Next::Frame(..)) => return Err(H3Error::FrameUnexpected),
        Ok(Next::End) => {
            let _ = send_half.reset(H3Error::RequestIncomplete.code());
            return Ok(());
        }
        Err(Fail::Io(e)) => {
            log::debug!("HTTP/3 stream from {peer:?}: {e}");
            return Ok(());
        }
        Err(Fail::Protocol(e)) => return Err(e),
    };
    let mut decoder = Decoder::new(u64::MAX);
    let (parts, content_length) = match decode_request_cached(
        &mut decoder,
        incoming.section(section),
        max_section,
        last_heads,
    )? {
        Decoded::Request(parts, content_length) => (parts, content_length),
        Decoded::Malformed => {
            // A stream error (§4.1.2): this request only.
            let _ = send_half.reset(H3Error::MessageError.code());
            let _ = incoming.recv_mut().stop(H3Error::MessageError.code());
            return Ok(());
        }
        Decoded::TooLarge => {
            let response = refuse(settings, peer, HEAD_TOO_LARGE, "request head too large\n");
            let _ = incoming.recv_mut().stop(H3Error::NoError.code());
            if let Err(Failed(e, _)) = send(send_half, response, false, settings) {
                log::debug!("HTTP/3 stream from {peer:?}: {e}");
            }
            return Ok(());
        }
    };
    let is_head = parts.method == Method::HEAD;
    let logged = settings.logs_access().then(|| LoggedRequest::of(&parts));
    let declared_too_large = content_length.is_some_and(|n| n > settings.max_body_bytes);
    // A request that doing twice could harm, in early data: 425, which tells the client to
    // send it again once the handshake is done (RFC 8470 §5.2). Safe and idempotent
    // methods are served.
    let too_early = early && !parts.method.is_idempotent();
    let src = Rc::new(RefCell::new(StreamBody {
        incoming,
        in_data: false,
        ended: false,
        left: settings.max_body_bytes,
        max_section,
        peer,
        listener: settings.listener,
        trailers: None,
        too_large: false,
        broken: None,
    }));
    let mut response = if declared_too_large {
        refuse(settings, peer, TOO_LARGE, TOO_LARGE_TEXT)
    } else if too_early {
        error_response(StatusCode::TOO_EARLY, TOO_EARLY_TEXT)
    } else {
        let body = Body::from_conn(src.clone(), 0);
        let request = Request::from(http::Request::from_parts(*parts, body));
        match catch_unwind(AssertUnwindSafe(|| handler.call(request))) {
            Ok(r) => r,
            Err(p) => {
                settings.report_caught(peer, p);
                error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
            }
        }
    };
    if let Some(e) = src.borrow_mut().broken.take() {
        return Err(e);
    }
    let rejected = declared_too_large || too_early || src.borrow().too_large;
    if src.borrow().too_large {
        response = refuse(settings, peer, TOO_LARGE, TOO_LARGE_TEXT);
    }
    // A request body the handler left unread: read what `max_drain_bytes` allows, then ask
    // the client to stop sending (H3_NO_ERROR, §4.1.1) and answer all the same.
    {
        let mut src = src.borrow_mut();
        if !src.ended && (rejected || !src.drain(settings.max_drain_bytes)) {
            let _ = src.incoming.recv_mut().stop(H3Error::NoError.code());
        }
    }
    let status = response.status();
    let sent = match send(send_half, response, is_head, settings) {
        Ok(bytes) => bytes,
        Err(Failed(e, bytes)) => {
            log::debug!("HTTP/3 stream from {peer:?}: {e}");
            bytes
        }
    };
    if let Some(logged) = logged {
        logged.log(peer, PROTOCOL, status, sent, |e| settings.log_access(e));
    }
    Ok(())
}

/// The body of a 425 answer.
const TOO_EARLY_TEXT: &str = "too early: send the request again once the handshake is done\n";

/// The server's own answer, `text`, to a request it refused (`e`, reported to the error
/// hook).
#[cold]
fn refuse(
    settings: &Settings,
    peer: Option<SocketAddr>,
    e: ProtocolError,
    text: &'static str,
) -> Response {
    settings.report_rejected(peer, e);
    error_response(e.status(), text)
}
