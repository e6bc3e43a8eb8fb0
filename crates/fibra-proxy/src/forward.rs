//! One exchange with an upstream: pick the upstream of the route's group (the `balance`
//! module), take a pooled connection to it (or open one), send the request head and stream
//! the body, read the response head, and hand back a [`Response`] whose body streams the rest
//! (or, for a small body that has arrived whole, holds it).
//!
//! Failures become the proxy's own answers: `502 Bad Gateway` when the upstream refuses,
//! resets, closes early or sends something that is not HTTP, `504 Gateway Timeout` when it
//! does not connect, accept the request or answer within its timeouts; when no upstream of
//! the group is up, `502` at once, or `503 Service Unavailable` with `Retry-After` if active
//! checks found them all down. Once the response head has gone to the client, an upstream
//! failure can only close the client's connection (as nginx does): the client sees a body
//! shorter than announced, or a chunked body without its last chunk.
//!
//! A request is sent again only when it is idempotent (RFC 9110 §9.2.2) and has no body
//! bytes to replay, and only before any byte of the response went to the client:
//!
//! * once on a fresh connection to the same upstream, when it failed on a connection reused
//!   from the pool before any byte of the response arrived: the upstream most likely closed
//!   that connection while it was idle (the keep-alive race every pooling client has);
//! * once on another upstream of the group (the next one its policy gives), when it failed
//!   otherwise. That failure counts against the upstream (passive health) and is logged;
//!   the `on_error` hook sees only what is answered.

use std::io::{Read, Write};

use http::{Method, StatusCode};

use crate::balance::{Group, Lease, NoneUp, OwnedLease};
use crate::error_log::{self, Kind};
use crate::headers::{put_request_head, response_head, upgrade_request, BodyOut, Forwarding};
use crate::pool;
use crate::route::{Route, Upstream};
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

/// Whether a request that failed on one upstream may be sent to another: it is idempotent
/// and has no body (so nothing of it was consumed), and no body byte was taken from the
/// client.
fn replayable(req: &Request, body: BodyOut, sent: u64) -> bool {
    sent == 0 && is_idempotent(req.method()) && matches!(body, BodyOut::None | BodyOut::Length(0))
}

/// The client's IP address, for the ip-hash policy.
pub(crate) fn client_ip(req: &Request) -> Option<std::net::IpAddr> {
    req.peer_addr().map(|a| a.ip())
}

/// Forwards `req` to the upstream of `lease`, one of `route`'s group, with `target` (its
/// rewriting of the request's), and answers with the upstream's response (or 502/504).
pub(crate) fn forward<'r>(
    settings: &Settings,
    route: &'r Route<Group>,
    mut req: Request,
    mut lease: Lease<'r>,
    mut target: String,
) -> Response {
    let group = &route.to;
    let is_head = req.method() == Method::HEAD;
    let body = body_out(&req);
    let fwd = Forwarding {
        peer: req.peer_addr(),
        proto: &settings.proto,
        trust: settings.trust_forwarded,
    };
    let upgrade = upgrade_request(&req).cloned();
    let mut sent = 0u64;
    let mut retried = false;
    // Each turn of the outer loop is one upstream (the second, if any, a retry on another
    // one), of the inner loop one connection to it.
    let (mut conn, range, framing) = 'upstream: loop {
        let up = lease.upstream();
        let mut pooled = pool::take(up.id, settings.idle_timeout);
        let failure = loop {
            let mut conn = match pooled.take() {
                Some(c) => c,
                None => match UpConn::connect(up, &settings.timeouts, settings.tls.as_ref()) {
                    Ok(c) => c,
                    Err(f) => break f,
                },
            };
            conn.start(is_head);
            put_request_head(
                &mut conn.wbuf,
                &req,
                &target,
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
                Ok((range, _, framing)) => break 'upstream (conn, range, framing),
                Err(SendError::Client) => return error(StatusCode::BAD_REQUEST, "Bad Request\n"),
                Err(SendError::Upstream(f)) => {
                    // The keep-alive race: the upstream closed the idle connection.
                    if conn.reused && !conn.answered && replayable(&req, body, sent) {
                        continue; // `pooled` is empty now: a fresh connection
                    }
                    break f;
                }
            }
        };
        // Not dialled for its connect backoff: nothing new is known of the upstream.
        if !matches!(failure, Failure::Down { .. }) {
            group.failed(&lease, || failure.to_string());
        }
        if !retried && group.len() > 1 && replayable(&req, body, sent) {
            if let Ok(next) = group.pick(|| client_ip(&req), Some(lease.index())) {
                settings.retrying(up, &failure, next.upstream());
                let base = next.upstream().path.as_deref();
                target = route.rewrite(base, req.uri().path(), req.uri().query());
                lease = next;
                retried = true;
                continue;
            }
        }
        return settings.failed(up, &failure);
    };
    let up = lease.upstream();
    group.succeeded(&lease);
    let head = match response_head(conn.bytes(range)) {
        Ok(h) if h.status != StatusCode::SWITCHING_PROTOCOLS => h,
        Ok(h) if upgrade.is_some() => match h.upgrade {
            Some(protocol) if conn.request_sent => {
                let (stream, early) = conn.into_parts();
                return switched(stream, early, h.headers, protocol, lease.into_owned());
            }
            Some(_) => return settings.failed_with(up, "switched protocols before the body"),
            None => return settings.failed_with(up, "101 without Upgrade"),
        },
        Ok(_) => return settings.failed_with(up, "switched protocols unasked"),
        Err(why) => return settings.failed_with(up, why),
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
        // The upstream stays busy until its body has been copied (or the client is gone).
        let lease = lease.into_owned();
        let copy = move |w: &mut fibra_http::BodyWriter<'_>| {
            let reusable = conn.copy_body(w);
            drop(lease);
            if reusable? {
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
/// on, never pooled again; it holds the upstream busy (`lease`) until it ends.
#[cold]
fn switched(
    stream: crate::tls::UpStream,
    early: Vec<u8>,
    headers: http::HeaderMap,
    protocol: http::HeaderValue,
    lease: OwnedLease,
) -> Response {
    let mut resp = Response::new(ResponseBody::upgrade(move |client| {
        tunnel::run(client, stream, early);
        drop(lease);
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
    fn failed(&self, up: &Upstream, f: &Failure) -> Response {
        let status = if f.is_timeout() {
            StatusCode::GATEWAY_TIMEOUT
        } else {
            StatusCode::BAD_GATEWAY
        };
        self.report(&up.authority, up.id, status, f.kind(), f.to_string())
    }

    /// Logs (throttled) a failure on `up` whose request is sent to `next` instead; the
    /// `on_error` hook sees only what is answered.
    #[cold]
    fn retrying(&self, up: &Upstream, f: &Failure, next: &Upstream) {
        error_log::warn(
            up.id,
            f.kind(),
            format_args!(
                "upstream {}: {f}; sending the request to {} instead",
                up.authority, next.authority
            ),
        );
    }

    /// Reports an unusable response head and answers 502.
    #[cold]
    fn failed_with(&self, up: &Upstream, why: &str) -> Response {
        self.report(
            &up.authority,
            up.id,
            StatusCode::BAD_GATEWAY,
            Kind::Malformed,
            format!("malformed response: {why}"),
        )
    }

    /// Reports that no upstream of `group` is up and answers 502, or 503 with `Retry-After`
    /// when active checks found them all down.
    #[cold]
    pub(crate) fn none_up(&self, group: &Group, none: NoneUp) -> Response {
        let (status, why) = match none {
            NoneUp::Failing => (StatusCode::BAD_GATEWAY, "no upstream is up"),
            NoneUp::Unhealthy { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "no upstream is up: health checks found every one down",
            ),
        };
        let mut r = self.report(
            &group.authorities(),
            group.id,
            status,
            Kind::Connect,
            why.to_owned(),
        );
        if let NoneUp::Unhealthy { retry_after } = none {
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, retry_after.into());
        }
        r
    }

    /// Logs the failure (throttled: [`error_log`], by `id`), hands it to the `on_error` hook
    /// (every one) and makes the answer.
    fn report(
        &self,
        upstream: &str,
        id: u64,
        status: StatusCode,
        kind: Kind,
        message: String,
    ) -> Response {
        let e = UpstreamError {
            upstream: upstream.to_owned(),
            status,
            message,
        };
        error_log::warn(id, kind, &e);
        if let Some(hook) = &self.on_error {
            hook(&e);
        }
        match status {
            StatusCode::GATEWAY_TIMEOUT => error(status, "Gateway Timeout\n"),
            StatusCode::SERVICE_UNAVAILABLE => error(status, "Service Unavailable\n"),
            _ => error(status, "Bad Gateway\n"),
        }
    }
}
