//! `fibra hello`: the benchmark app (TechEmpower's plaintext and JSON tests, plus `/echo`).

use crate::server_flags::ServerFlags;
use fibra_http::{Request, Response, ResponseBody};
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

/// The app: `GET /plaintext`, `GET /json`, `/echo` (any method), else 404.
pub fn handler(mut req: Request) -> Response {
    let get = req.is_get_or_head();
    match req.uri().path() {
        "/plaintext" if get => with_type(PLAINTEXT.into(), TEXT_PLAIN),
        "/json" if get => with_type(JSON.into(), APPLICATION_JSON),
        "/plaintext" | "/json" => {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        }
        "/echo" => match req.body_mut().read_to_vec(8 << 20) {
            Ok(b) => with_type(b.into(), OCTET_STREAM),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                status(StatusCode::REQUEST_TIMEOUT)
            }
            Err(_) => status(StatusCode::BAD_REQUEST),
        },
        _ => status(StatusCode::NOT_FOUND),
    }
}

/// Runs `fibra hello` until SIGINT/SIGTERM.
pub fn run(args: HelloArgs) -> std::io::Result<()> {
    args.server
        .serve_until_signal("fibra hello", "fibra hello listening on", handler)
}
