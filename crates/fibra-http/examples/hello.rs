//! The benchmark app's routes (`/plaintext`, `/json`, `/echo`) on a fibra-http server.
//!
//! Run: `cargo run --release -p fibra-http --example hello -- 127.0.0.1:8080`, stop with Enter.

use std::io::BufRead;
use std::time::Duration;

use fibra_http::{Request, Response, ResponseBody, Server};
use http::header::{HeaderValue, CONTENT_TYPE};
use http::StatusCode;

fn handler(mut req: Request) -> Response {
    let (ctype, body): (&'static str, ResponseBody) = match req.uri().path() {
        "/plaintext" => ("text/plain", "Hello, World!".into()),
        "/json" => ("application/json", r#"{"message":"Hello, World!"}"#.into()),
        "/echo" => match req.body_mut().read_to_vec(8 << 20) {
            Ok(b) => ("application/octet-stream", b.into()),
            Err(_) => return status(StatusCode::BAD_REQUEST),
        },
        _ => return status(StatusCode::NOT_FOUND),
    };
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    resp
}

fn status(code: StatusCode) -> Response {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = code;
    r
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let workers = std::env::args()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let server = Server::bind(addr).workers(workers).serve(handler)?;
    eprintln!("listening on http://{}", server.local_addr());
    let _ = std::io::stdin().lock().lines().next();
    server.shutdown(Duration::from_secs(5));
    Ok(())
}
