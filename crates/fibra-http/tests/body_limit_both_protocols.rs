//! A request body over `max_body_bytes` gets `413` on HTTP/1.1 and HTTP/2 alike: before the
//! handler runs when its length is declared, and in place of the handler's answer when it
//! grows past the limit while the handler reads it (a chunked body over HTTP/1.1, DATA
//! without `content-length` over HTTP/2). HTTP/2 once answered the second case with
//! whatever the handler made of its failed read (an echo's 400) and never checked the first.

mod h2_util;
mod util;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use fibra_http::{Request, Response, Settings};
use h2_util::{client, exchange, runtime, CLIENT_TIMEOUT};
use http::{Method, StatusCode};

const LIMIT: u64 = 1000;

fn settings() -> Settings {
    Settings {
        max_body_bytes: LIMIT,
        ..Settings::default()
    }
}

/// An echo that answers 400 when reading the body fails (what a user's handler does), and
/// counts its calls.
fn echo(calls: Arc<AtomicUsize>) -> impl Fn(Request) -> Response + Send + Sync + 'static {
    move |mut req: Request| {
        calls.fetch_add(1, Ordering::SeqCst);
        let mut body = Vec::new();
        match req.body_mut().read_to_end(&mut body) {
            Ok(_) => Response::new(body.into()),
            Err(_) => {
                let mut r = Response::new("read failed\n".into());
                *r.status_mut() = StatusCode::BAD_REQUEST;
                r
            }
        }
    }
}

/// Sends a POST of `len` bytes over HTTP/2, declaring its length if asked; sending stops
/// quietly once the server has refused the stream. Returns the status and body.
async fn h2_post(
    send: &mut h2::client::SendRequest<Bytes>,
    len: usize,
    declared: bool,
) -> (StatusCode, Vec<u8>) {
    let mut req = http::Request::builder()
        .method(Method::POST)
        .uri("http://localhost/echo");
    if declared {
        req = req.header("content-length", len);
    }
    let mut ready = send.clone().ready().await.unwrap();
    let (resp, mut stream) = ready.send_request(req.body(()).unwrap(), false).unwrap();
    let mut body = Bytes::from(vec![b'x'; len]);
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let cap = match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(cap)) => cap,
            _ => break, // refused: the answer says why
        };
        let piece = body.split_to(cap.min(body.len()));
        if stream.send_data(piece, body.is_empty()).is_err() {
            break;
        }
    }
    let resp = tokio::time::timeout(CLIENT_TIMEOUT, resp)
        .await
        .expect("an answer in time")
        .expect("an answer, not a reset");
    let (parts, mut recv) = resp.into_parts();
    let mut out = Vec::new();
    while let Some(Ok(chunk)) = recv.data().await {
        let _ = recv.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    (parts.status, out)
}

#[test]
fn http2_declared_length_over_the_limit_is_413_before_the_handler() {
    let calls = Arc::new(AtomicUsize::new(0));
    let srv = util::start(settings(), echo(calls.clone()));
    runtime().block_on(async {
        let mut send = client(srv.addr).await;
        let (status, body) = h2_post(&mut send, 5 * LIMIT as usize, true).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(body, b"body too large\n");
        // The connection serves on, and a body within the limit is echoed.
        let (status, body) = h2_post(&mut send, LIMIT as usize, true).await;
        assert_eq!((status, body.len()), (StatusCode::OK, LIMIT as usize));
        let (status, _, _) = exchange(&mut send, Method::GET, "/", None).await;
        assert_eq!(status, StatusCode::OK);
    });
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "not called for the refused one"
    );
}

#[test]
fn http2_undeclared_body_growing_past_the_limit_is_413_not_the_handlers_answer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let srv = util::start(settings(), echo(calls.clone()));
    runtime().block_on(async {
        let mut send = client(srv.addr).await;
        let (status, body) = h2_post(&mut send, 5 * LIMIT as usize, false).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(body, b"body too large\n");
        let (status, body) = h2_post(&mut send, LIMIT as usize, false).await;
        assert_eq!((status, body.len()), (StatusCode::OK, LIMIT as usize));
    });
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// Writes `req` and reads one response: its status and body.
fn h1_exchange(addr: std::net::SocketAddr, req: &[u8]) -> (u16, Vec<u8>) {
    let mut s = util::connect(addr);
    // The server may answer and close before the whole body is sent.
    let _ = s.write_all(req);
    let (head, body) = util::read_response(&mut s, false);
    (util::status_of(&head), body)
}

#[test]
fn http1_answers_the_same_on_both_paths() {
    let calls = Arc::new(AtomicUsize::new(0));
    let srv = util::start(settings(), echo(calls.clone()));
    let big = vec![b'x'; 5 * LIMIT as usize];
    let mut declared = format!(
        "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
        big.len()
    )
    .into_bytes();
    declared.extend_from_slice(&big);
    assert_eq!(
        h1_exchange(srv.addr, &declared),
        (413, b"body too large\n".to_vec())
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "refused before the handler"
    );

    let mut chunked =
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    chunked.extend_from_slice(format!("{:x}\r\n", big.len()).as_bytes());
    chunked.extend_from_slice(&big);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(
        h1_exchange(srv.addr, &chunked),
        (413, b"body too large\n".to_vec())
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the handler read and failed"
    );
}
