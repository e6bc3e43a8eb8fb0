//! Requests that arrive in pieces. Connections read into a buffer their worker lends and keep
//! only the unconsumed bytes between reads: these check that partial heads and bodies survive
//! other connections using the worker's buffer in between, and heads larger than the read
//! buffer.

mod util;

use std::io::{Read, Write};
use std::thread::sleep;
use std::time::Duration;

use fibra_http::{Request, Response, Settings};
use util::*;

/// Answers with the method, path, the `x-fill` field's length and the body.
fn describe(mut req: Request) -> Response {
    let fill = req.headers().get("x-fill").map_or(0, |v| v.len());
    let mut body = Vec::new();
    req.body_mut().read_to_end(&mut body).unwrap();
    let text = format!(
        "{} {} fill={} body={}",
        req.method(),
        req.uri().path(),
        fill,
        String::from_utf8_lossy(&body)
    );
    Response::new(text.into())
}

/// Writes `parts` one at a time with a pause between, so they usually arrive in separate
/// reads (the checks hold either way).
fn send_in_parts(s: &mut std::net::TcpStream, parts: &[&[u8]]) {
    for p in parts {
        s.write_all(p).unwrap();
        s.flush().unwrap();
        sleep(Duration::from_millis(20));
    }
}

fn body_of(s: &mut std::net::TcpStream) -> String {
    let (head, body) = read_response(s, false);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    String::from_utf8(body).unwrap()
}

#[test]
fn partial_heads_survive_other_connections_reading_in_between() {
    let srv = start(Settings::default(), describe);
    let mut a = connect(srv.addr);
    let mut b = connect(srv.addr);
    a.set_nodelay(true).unwrap();
    // A's head stops midway; B is served meanwhile (reading into the same worker buffer);
    // then A's head completes.
    send_in_parts(&mut a, &[b"GET /first-half", b"-and-more HTTP/1.1\r\nHo"]);
    for i in 0..3 {
        b.write_all(format!("GET /b{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        assert_eq!(body_of(&mut b), format!("GET /b{i} fill=0 body="));
    }
    send_in_parts(&mut a, &[b"st: x\r\n", b"\r\n"]);
    assert_eq!(body_of(&mut a), "GET /first-half-and-more fill=0 body=");
    // And the connection goes on.
    a.write_all(b"GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(body_of(&mut a), "GET /again fill=0 body=");
}

#[test]
fn a_head_larger_than_the_read_buffer_arrives_in_pieces() {
    let settings = Settings {
        read_buffer_bytes: 512,
        ..Settings::default()
    };
    let srv = start(settings, describe);
    let mut s = connect(srv.addr);
    s.set_nodelay(true).unwrap();
    let fill = "f".repeat(3000);
    let head = format!("GET /big HTTP/1.1\r\nHost: x\r\nX-Fill: {fill}\r\n\r\n");
    let bytes = head.as_bytes();
    let parts: Vec<&[u8]> = bytes.chunks(700).collect();
    send_in_parts(&mut s, &parts);
    assert_eq!(body_of(&mut s), "GET /big fill=3000 body=");
    // A small request after it, and one more big one, on the same connection.
    s.write_all(b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(body_of(&mut s), "GET /small fill=0 body=");
    send_in_parts(&mut s, &parts);
    assert_eq!(body_of(&mut s), "GET /big fill=3000 body=");
}

#[test]
fn split_bodies_and_pipelined_requests_keep_their_order() {
    let srv = start(Settings::default(), describe);
    let mut s = connect(srv.addr);
    let mut other = connect(srv.addr);
    s.set_nodelay(true).unwrap();
    send_in_parts(
        &mut s,
        &[
            b"POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello",
            b"-worl",
        ],
    );
    // Another connection is served while the body is incomplete.
    other
        .write_all(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(body_of(&mut other), "GET /other fill=0 body=");
    send_in_parts(
        &mut s,
        &[b"dGET /two HTTP/1.1\r\nHost: x\r\n\r\nPOST /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", b"0\r\n\r\n"],
    );
    assert_eq!(body_of(&mut s), "POST /one fill=0 body=hello-world");
    assert_eq!(body_of(&mut s), "GET /two fill=0 body=");
    assert_eq!(body_of(&mut s), "POST /three fill=0 body=abc");
}
