//! `fibra hello`: the benchmark app (TechEmpower's plaintext and JSON tests, plus `/echo`).

use crate::signals;
use fibra_http::{Request, Response, ResponseBody, Server};
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Method, StatusCode};
use std::time::Duration;

/// Flags of `fibra hello`.
#[derive(clap::Args, Debug)]
pub struct HelloArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Worker threads (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Total deadline for a request head, in seconds.
    #[arg(long, value_name = "SECS")]
    header_timeout: Option<f64>,
    /// Keep-alive idle timeout, in seconds.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Grace period for in-flight requests at shutdown, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    grace: f64,
}

const PLAINTEXT: &[u8] = b"Hello, World!";
const JSON: &[u8] = br#"{"message":"Hello, World!"}"#;

const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");

/// A response with a `Content-Type` (the values are validated once, at compile time).
fn with_type(body: ResponseBody, ctype: HeaderValue) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(CONTENT_TYPE, ctype);
    resp
}

fn status(code: StatusCode) -> Response {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = code;
    r
}

/// The app: `GET /plaintext`, `GET /json`, `/echo` (any method), else 404.
pub fn handler(mut req: Request) -> Response {
    let get = req.method() == Method::GET || req.method() == Method::HEAD;
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

fn secs(s: f64) -> std::io::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("bad duration {s}: {e}"),
        )
    })
}

/// Runs `fibra hello` until SIGINT/SIGTERM.
pub fn run(args: HelloArgs) -> std::io::Result<()> {
    signals::block_shutdown_signals()?;
    let mut server = Server::bind((args.addr.as_str(), args.port));
    if let Some(w) = args.workers {
        server = server.workers(w);
    }
    if let Some(t) = args.header_timeout {
        server = server.header_timeout(secs(t)?);
    }
    if let Some(t) = args.idle_timeout {
        server = server.idle_timeout(secs(t)?);
    }
    let grace = secs(args.grace)?;
    let handle = server.serve(handler)?;
    println!("fibra hello listening on http://{}/", handle.local_addr());
    let sig = signals::wait_for_shutdown_signal();
    eprintln!("fibra hello: {sig}, shutting down (grace {grace:?})");
    handle.shutdown(grace);
    Ok(())
}
