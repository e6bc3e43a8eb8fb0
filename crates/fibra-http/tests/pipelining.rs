//! Pipelining: requests sent in one write are answered in order (that they leave in one
//! write is checked with a counting transport in `conn`'s unit tests).

mod util;

use std::io::{Read, Write};

use fibra_http::{Response, Settings};
use util::*;

fn echo_path(req: fibra_http::Request) -> Response {
    Response::new(req.uri().path().to_string().into())
}

#[test]
fn answers_in_order() {
    let srv = start(Settings::default(), echo_path);
    let mut s = connect(srv.addr);
    let mut batch = Vec::new();
    for i in 0..16 {
        batch.extend_from_slice(format!("GET /r{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    }
    s.write_all(&batch).unwrap();
    for i in 0..16 {
        let (head, body) = read_response(&mut s, false);
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        assert_eq!(String::from_utf8(body).unwrap(), format!("/r{i}"));
    }
}

#[test]
fn batch_ends_with_close_after_last() {
    let srv = start(Settings::default(), echo_path);
    let mut s = connect(srv.addr);
    let batch = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    s.write_all(batch).unwrap();
    // The server closes after the third response (`Connection: close`).
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(count_responses(&out), 3, "{out}");
    let a = out.find("\r\n\r\n/a").unwrap();
    let b = out.find("\r\n\r\n/b").unwrap();
    let c = out.find("\r\n\r\n/c").unwrap();
    assert!(a < b && b < c, "{out}");
}

#[test]
fn pipelined_post_bodies_are_kept_apart() {
    let srv = start(Settings::default(), |mut req: fibra_http::Request| {
        let body = req.body_mut().read_to_vec(1024).unwrap();
        Response::new(body.into())
    });
    let out = send_and_read_to_close(
        srv.addr,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcPOST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(count_responses(&out), 3, "{out}");
    assert!(out.contains("\r\n\r\nabcHTTP/1.1"), "{out}");
    assert!(out.contains("\r\n\r\ndeHTTP/1.1"), "{out}");
}

/// Byte-identical heads share one parsed head between their requests (copy on write): a
/// handler that changes its request's method, target and fields must not change what the next
/// identical request sees, on the same connection or on another one of the same worker.
#[test]
fn changes_to_a_repeated_head_stay_in_its_request() {
    // (`start` runs one worker, so both connections go through the same parse cache.)
    let srv = start(Settings::default(), |mut req: fibra_http::Request| {
        let seen = format!(
            "{} {} {}",
            req.method(),
            req.uri().path(),
            req.headers()["x-n"].to_str().unwrap()
        );
        req.headers_mut()
            .insert("x-n", http::HeaderValue::from_static("changed"));
        *req.uri_mut() = http::Uri::from_static("/changed");
        *req.method_mut() = http::Method::PUT;
        Response::new(seen.into())
    });
    let one = b"GET /same HTTP/1.1\r\nHost: x\r\nX-N: 1\r\n\r\n";
    for _ in 0..2 {
        let mut s = connect(srv.addr);
        s.write_all(&one.repeat(12)).unwrap();
        for i in 0..12 {
            let (head, body) = read_response(&mut s, false);
            assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
            assert_eq!(
                String::from_utf8(body).unwrap(),
                "GET /same 1",
                "request {i}"
            );
        }
    }
}
