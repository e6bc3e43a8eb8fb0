//! One exchange with an upstream: take a pooled connection (or open one), send the request
//! head and stream the body, read the response head, and hand back a [`Response`] whose body
//! streams the rest (or, for a small body that has arrived whole, holds it).
//!
//! Failures become the proxy's own answers: `502 Bad Gateway` when the upstream refuses,
//! resets, closes early or sends something that is not HTTP, `504 Gateway Timeout` when it
//! does not connect, accept the request or answer within its timeouts. Once the response head
//! has gone to the client, an upstream failure can only close the client's connection (as
//! nginx does): the client sees a body shorter than announced, or a chunked body without its
//! last chunk.
//!
//! A request is sent again, once and on a fresh connection, only when it is idempotent (RFC
//! 9110 §9.2.2), has no body bytes to replay, and failed on a connection reused from the pool
//! before any byte of the response arrived: the upstream most likely closed that connection
//! while it was idle (the keep-alive race every pooling client has).

use std::io::{Read, Write};

use http::{Method, StatusCode};

use crate::error_log::{self, Kind};
use crate::headers::{put_request_head, response_head, upgrade_request, BodyOut, Forwarding};
use crate::pool;
use crate::route::Route;
use crate::settings::{Settings, UpstreamError};
use crate::tunnel;
use crate::upstream::{Failure, UpConn};
use fibra_http::client::Framing;
use fibra_http::request::Request;
use fibra_http::response::{Response, ResponseBody};

/// Response bodies up to this size that have arrived with the head are copied into the
/// response (the connection goes back to the pool before the handler returns); larger or
/// later ones stream.
const SMALL_BODY: u64 = 16 * 1024;
/// Request bodies up to this size are sent with the head in one write.
const SMALL_UPLOAD: u64 = 16 * 1024;
/// Request body bytes read from the client (and written upstream) at a time.
const UPLOAD_PIECE: usize = 64 * 1024;

/// Why the request could not be sent.
enum SendError {
    /// The upstream failed.
    Upstream(Failure),
    /// Reading the client's body failed: the server answers that itself (400, 408, or a
    /// closed connection) and drops whatever the handler returns.
    Client,
}

/// How the request body goes upstream, from what the client sent.
fn body_out(req: &Request) -> BodyOut {
    match req.body().remaining() {
        None => BodyOut::Chunked,
        Some(0) if !req.headers().contains_key(http::header::CONTENT_LENGTH) => BodyOut::None,
        Some(n) => BodyOut::Length(n),
    }
}

/// RFC 9110 §9.2.2.
fn is_idempotent(m: &Method) -> bool {
    matches!(
        *m,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}

/// Forwards `req` to `route`'s upstream with `target`, and answers with the upstream's
/// response (or 502/504).
pub(crate) fn forward(
    settings: &Settings,
    route: &Route,
    mut req: Request,
    target: &str,
) -> Response {
    let up = &route.upstream;
    let is_head = req.method() == Method::HEAD;
    let body = body_out(&req);
    let fwd = Forwarding {
        peer: req.peer_addr(),
        proto: &settings.proto,
        trust: settings.trust_forwarded,
    };
    let upgrade = upgrade_request(&req).cloned();
    let mut pooled = pool::take(up.id, settings.idle_timeout);
    let mut sent = 0u64;
    let (mut conn, range, framing) = loop {
        let mut conn = match pooled.take() {
            Some(c) => c,
            None => match UpConn::connect(up, &settings.timeouts, settings.tls.as_ref()) {
                Ok(c) => c,
                Err(f) => return settings.failed(route, &f),
            },
        };
        conn.start(is_head);
        put_request_head(
            &mut conn.wbuf,
            &req,
            target,
            &up.authority,
            body,
            &fwd,
            upgrade.as_ref(),
        );
        let outcome = match send(&mut conn, &mut req, body, &mut sent) {
            Ok(()) => {
                conn.request_sent = true;
                conn.read_head().map_err(SendError::Upstream)
            }
            // The upstream may have answered early (a 413, say) and stopped reading.
            Err(SendError::Upstream(Failure::Send(e)))
                if !fibra_http::transport::is_timeout(&e) =>
            {
                conn.read_head()
                    .map_err(|_| SendError::Upstream(Failure::Send(e)))
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok((range, _, framing)) => break (conn, range, framing),
            Err(SendError::Client) => return error(StatusCode::BAD_REQUEST, "Bad Request\n"),
            Err(SendError::Upstream(f)) => {
                let retry = conn.reused
                    && !conn.answered
                    && sent == 0
                    && is_idempotent(req.method())
                    && matches!(body, BodyOut::None | BodyOut::Length(0));
                if retry {
                    continue; // `pooled` is empty now: a fresh connection
                }
                return settings.failed(route, &f);
            }
        }
    };
    let head = match response_head(conn.bytes(range)) {
        Ok(h) if h.status != StatusCode::SWITCHING_PROTOCOLS => h,
        Ok(h) if upgrade.is_some() => match h.upgrade {
            Some(protocol) if conn.request_sent => {
                let (stream, early) = conn.into_parts();
                return switched(stream, early, h.headers, protocol);
            }
            Some(_) => return settings.failed_with(route, "switched protocols before the body"),
            None => return settings.failed_with(route, "101 without Upgrade"),
        },
        Ok(_) => return settings.failed_with(route, "switched protocols unasked"),
        Err(why) => return settings.failed_with(route, why),
    };
    let (max_idle, idle_timeout) = (settings.max_idle, settings.idle_timeout);
    let body = if let Some((bytes, reusable)) = conn.take_small_body(framing, SMALL_BODY) {
        if reusable {
            pool::put(conn, max_idle, idle_timeout);
        }
        match (is_head, head.content_length) {
            // The server leaves a `HEAD` answer's body out but sends its framing: the
            // upstream's length, or chunked as a `GET` would be answered.
            (true, Some(n)) => ResponseBody::stream_sized(n, |_| Ok(())),
            (true, None) if head.status.is_success() => ResponseBody::stream(|_| Ok(())),
            _ => ResponseBody::from(bytes),
        }
    } else {
        let copy = move |w: &mut fibra_http::BodyWriter<'_>| {
            if conn.copy_body(w)? {
                pool::put(conn, max_idle, idle_timeout);
            }
            Ok(())
        };
        match framing {
            Framing::Length(n) => ResponseBody::stream_sized(n, copy),
            _ => ResponseBody::stream(copy),
        }
    };
    let body = match head.content_type {
        Some(t) => body.with_content_type(t),
        None => body,
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = head.status;
    if !head.headers.is_empty() {
        *resp.headers_mut() = head.headers;
    }
    resp
}

/// The upstream switched protocols: the `101` goes to the client (with the upstream's
/// `Upgrade` and its end-to-end fields, `Sec-WebSocket-Accept` among them), then the two
/// connections are joined ([`tunnel`]). The upstream connection is the tunnel's from now
/// on, never pooled again.
#[cold]
fn switched(
    stream: crate::tls::UpStream,
    early: Vec<u8>,
    headers: http::HeaderMap,
    protocol: http::HeaderValue,
) -> Response {
    let mut resp = Response::new(ResponseBody::upgrade(move |client| {
        tunnel::run(client, stream, early)
    }));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *resp.headers_mut() = headers;
    let h = resp.headers_mut();
    h.insert(http::header::UPGRADE, protocol);
    h.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("Upgrade"),
    );
    resp
}

/// Sends the composed head and the request body. `sent` counts the body bytes taken from
/// the client (a request with some cannot be sent again).
fn send(
    conn: &mut UpConn,
    req: &mut Request,
    body: BodyOut,
    sent: &mut u64,
) -> Result<(), SendError> {
    let small = match body {
        BodyOut::None | BodyOut::Length(0) => true,
        BodyOut::Length(n) => n <= SMALL_UPLOAD,
        BodyOut::Chunked => false,
    };
    if small {
        // Head and body in one write.
        if let BodyOut::Length(n) = body {
            let start = conn.wbuf.len();
            conn.wbuf.resize(start + n as usize, 0);
            let mut got = 0;
            while got < n as usize {
                match req.body_mut().read(&mut conn.wbuf[start + got..]) {
                    Ok(0) | Err(_) => return Err(SendError::Client),
                    Ok(k) => got += k,
                }
            }
            *sent += n;
        }
        return conn.send_buffered().map_err(SendError::Upstream);
    }
    conn.send_buffered().map_err(SendError::Upstream)?;
    let chunked = body == BodyOut::Chunked;
    // Room for a chunk-size line before the data and its CRLF after.
    let mut buf = vec![0u8; UPLOAD_PIECE + 16];
    loop {
        let n = match req.body_mut().read(&mut buf[10..10 + UPLOAD_PIECE]) {
            Ok(n) => n,
            Err(_) => return Err(SendError::Client),
        };
        *sent += n as u64;
        if !chunked {
            if n == 0 {
                return Ok(());
            }
            conn.send(&buf[10..10 + n]).map_err(SendError::Upstream)?;
            continue;
        }
        if n == 0 {
            return conn.send(b"0\r\n\r\n").map_err(SendError::Upstream);
        }
        let mut line = [0u8; 10];
        let mut w = &mut line[..];
        let _ = write!(w, "{n:x}\r\n");
        let len = 10 - w.len();
        buf[10 - len..10].copy_from_slice(&line[..len]);
        buf[10 + n..12 + n].copy_from_slice(b"\r\n");
        conn.send(&buf[10 - len..12 + n])
            .map_err(SendError::Upstream)?;
    }
}

/// The proxy's own answer: `status` with a one-line text.
pub(crate) fn error(status: StatusCode, text: &'static str) -> Response {
    let body =
        ResponseBody::from(text).with_content_type(http::HeaderValue::from_static("text/plain"));
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

impl Settings {
    /// Reports an upstream failure and answers 502 or 504.
    #[cold]
    fn failed(&self, route: &Route, f: &Failure) -> Response {
        let status = if f.is_timeout() {
            StatusCode::GATEWAY_TIMEOUT
        } else {
            StatusCode::BAD_GATEWAY
        };
        let (kind, what) = match f {
            Failure::Connect(e) => (Kind::Connect, format!("connecting: {e}")),
            Failure::Down { failures, wait } => (
                Kind::Connect,
                format!(
                    "not connecting: {failures} connects failed in a row, next try in {} ms",
                    wait.as_millis()
                ),
            ),
            Failure::Send(e) => (Kind::Send, format!("sending the request: {e}")),
            Failure::Recv(e) => (Kind::Recv, format!("reading the response: {e}")),
            Failure::Parse(e) => (Kind::Malformed, e.to_string()),
        };
        self.report(route, status, kind, what)
    }

    /// Reports an unusable response head and answers 502.
    #[cold]
    fn failed_with(&self, route: &Route, why: &str) -> Response {
        self.report(
            route,
            StatusCode::BAD_GATEWAY,
            Kind::Malformed,
            format!("malformed response: {why}"),
        )
    }

    /// Logs the failure (throttled: [`error_log`]), hands it to the `on_error` hook (every
    /// one) and makes the answer.
    fn report(&self, route: &Route, status: StatusCode, kind: Kind, message: String) -> Response {
        let e = UpstreamError {
            upstream: route.upstream.authority.clone(),
            status,
            message,
        };
        error_log::warn(route.upstream.id, kind, &e);
        if let Some(hook) = &self.on_error {
            hook(&e);
        }
        if status == StatusCode::GATEWAY_TIMEOUT {
            error(status, "Gateway Timeout\n")
        } else {
            error(status, "Bad Gateway\n")
        }
    }
}
