//! `fibra hello`: the benchmark app (TechEmpower's plaintext and JSON tests, plus `/echo`).

use crate::server_flags::ServerFlags;
use fibra_http::{ws, Request, Response, ResponseBody};
use http::header::HeaderValue;
use http::StatusCode;

/// Flags of `fibra hello`.
#[derive(clap::Args, Debug)]
pub struct HelloArgs {
    #[command(flatten)]
    server: ServerFlags,
}

const PLAINTEXT: &[u8] = b"Hello, World!";
const JSON: &[u8] = br#"{"message":"Hello, World!"}"#;

const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");

/// A response with a `Content-Type` (the values are validated once, at compile time). The
/// type goes with the body, so no header map is built for these responses.
fn with_type(body: ResponseBody, ctype: HeaderValue) -> Response {
    Response::new(body.with_content_type(ctype))
}

fn status(code: StatusCode) -> Response {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = code;
    r
}

/// The app: `GET /plaintext`, `GET /json`, `/echo` (any method), `/ws` (a WebSocket echo of
/// text and binary messages up to 16 MiB), `OPTIONS` (200 with `Allow`), `CONNECT` (405),
/// else 404.
///
/// The two benchmark routes are looked at first, in a function whose frame saves two
/// registers and 56 bytes (six and 344 with every route in it); everything else is answered
/// out of line ([`other_routes`]).
#[inline]
pub fn handler(req: Request) -> Response {
    if req.is_get_or_head() {
        match req.uri().path() {
            "/plaintext" => return with_type(PLAINTEXT.into(), TEXT_PLAIN),
            "/json" => return with_type(JSON.into(), APPLICATION_JSON),
            _ => {}
        }
    }
    other_routes(req)
}

/// [`handler`] for everything but `GET`/`HEAD` of `/plaintext` and `/json`.
#[inline(never)]
fn other_routes(mut req: Request) -> Response {
    let get = req.is_get_or_head();
    if !get {
        if let Some(resp) = options_or_connect(&req) {
            return resp;
        }
    }
    match req.uri().path() {
        path @ ("/plaintext" | "/json") => {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static(allowed(path)));
            r
        }
        "/echo" => match req.body_mut().read_to_vec(8 << 20) {
            Ok(b) => with_type(b.into(), OCTET_STREAM),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                status(StatusCode::REQUEST_TIMEOUT)
            }
            Err(_) => status(StatusCode::BAD_REQUEST),
        },
        "/ws" => ws::upgrade(&req, ws_config(), echo_messages),
        _ => status(StatusCode::NOT_FOUND),
    }
}

/// The methods `path` answers (`Allow` of its `405` and `OPTIONS` responses).
fn allowed(path: &str) -> &'static str {
    match path {
        "/plaintext" | "/json" => "GET, HEAD, OPTIONS",
        "/ws" => "GET, OPTIONS",
        // `*` and `/echo`: the server takes any method on `/echo`.
        _ => "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS",
    }
}

/// `OPTIONS` (of a path, or `*` for the server) answered `200` with the methods allowed, and
/// `CONNECT` (no tunnels here) `405`; `None` for other methods.
#[cold]
fn options_or_connect(req: &Request) -> Option<Response> {
    let method = req.method();
    if method != http::Method::OPTIONS && method != http::Method::CONNECT {
        return None;
    }
    let allow = allowed(req.uri().path());
    let code = if method == http::Method::OPTIONS {
        StatusCode::OK
    } else {
        StatusCode::METHOD_NOT_ALLOWED
    };
    let mut r = status(code);
    r.headers_mut()
        .insert(http::header::ALLOW, HeaderValue::from_static(allow));
    Some(r)
}

/// The largest message (and frame) `/ws` takes: 16 MiB (close code 1009 beyond).
const WS_MAX_MESSAGE: usize = 16 << 20;

fn ws_config() -> ws::WebSocketConfig {
    ws::default_frames()
        .max_message_size(Some(WS_MAX_MESSAGE))
        .max_frame_size(Some(WS_MAX_MESSAGE))
}

/// `/ws`: sends every text and binary message back until the client closes (pings are
/// answered and the close handshake completed by the framing); bad input closes with its
/// code.
fn echo_messages(mut socket: ws::WebSocket) {
    loop {
        match socket.read() {
            Ok(msg) if msg.is_text() || msg.is_binary() => {
                if socket.send(msg).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(e) => return ws::fail(&mut socket, &e),
        }
    }
}

/// Runs `fibra hello` until SIGINT/SIGTERM.
pub fn run(args: HelloArgs) -> std::io::Result<()> {
    let workers = args.server.workers();
    let plural = if workers == 1 { "" } else { "s" };
    let banner = format!("fibra hello ({workers} worker{plural}) listening on");
    args.server
        .serve_until_signal("fibra hello", &banner, serve_handler())
}

/// [`handler`] as the server calls it. A function item given as the handler is called
/// through `Fn::call`'s shim, which LLVM keeps out of line: the shim copies the 56-byte
/// request with 16-byte loads right after the connection loop wrote it with 8-byte stores,
/// and those loads wait for the stores to reach the cache (store-to-load forwarding fails;
/// 20 % of a pipelined request's user time). Through a closure, `handler` is inlined into
/// the closure and the request read where the loop wrote it: 712 instructions per 16-deep
/// pipelined request instead of 741, CPU per request 0.964× (`bench/ab_cpu.sh`,
/// docs/lab/http1-pong-2026-11-30.md). (The loop calls this closure; it does not inline it.)
#[allow(clippy::redundant_closure)]
fn serve_handler() -> impl Fn(Request) -> Response + Send + Sync + 'static {
    |req| handler(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fibra_http::Body;

    fn call(method: &str, target: &str) -> Response {
        let req = http::Request::builder()
            .method(method)
            .uri(target)
            .body(Body::empty())
            .unwrap();
        handler(Request::from(req))
    }

    #[test]
    fn options_gets_allow_and_connect_gets_405() {
        for (target, allow) in [
            ("*", "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS"),
            ("/plaintext", "GET, HEAD, OPTIONS"),
            ("/ws", "GET, OPTIONS"),
        ] {
            let r = call("OPTIONS", target);
            assert_eq!(r.status(), StatusCode::OK, "OPTIONS {target}");
            assert_eq!(r.headers()[http::header::ALLOW], allow, "OPTIONS {target}");
        }
        let r = call("CONNECT", "x:443");
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert!(r.headers().contains_key(http::header::ALLOW));
        assert_eq!(call("GET", "/plaintext").status(), StatusCode::OK);
        assert_eq!(
            call("POST", "/plaintext").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }
}
