//! Every framing rejection: the right status, `Connection: close`, and the request smuggled
//! behind it never reaches the handler nor gets a response.

mod util;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use fibra_http::{Response, Settings};
use util::*;

const SMUGGLED: &str = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

const TABLE: &[(&str, u16)] = &[
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1_0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", 501),
    ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nz\r\nhello\r\n0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\nhello\r\n0\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\x07b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX@Y: b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nX : b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
    ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
    ("GET /\r\n\r\n", 400),
    ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
];

#[test]
fn each_rejection_closes_and_smuggled_request_is_not_answered() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let srv = start(Settings::default(), move |mut req: fibra_http::Request| {
        c.fetch_add(1, Ordering::SeqCst);
        // Read the body so chunk errors surface.
        let _ = req.body_mut().read_to_vec(1024);
        Response::new("ok".into())
    });
    for (req, want) in TABLE {
        let before = calls.load(Ordering::SeqCst);
        let wire = format!("{req}{SMUGGLED}");
        let out = send_and_read_to_close(srv.addr, wire.as_bytes());
        assert_eq!(status_of(&out), *want, "request {req:?} got {out:?}");
        assert_eq!(count_responses(&out), 1, "request {req:?} got {out:?}");
        assert!(
            out.contains("Connection: close\r\n"),
            "request {req:?} got {out:?}"
        );
        assert!(!out.contains("ok"), "request {req:?} got {out:?}");
        // Head errors never reach the handler; body (chunk) errors reach it once, but the
        // smuggled request after them never does.
        let ran = calls.load(Ordering::SeqCst) - before;
        assert!(ran <= 1, "request {req:?} ran the handler {ran} times");
    }
}
