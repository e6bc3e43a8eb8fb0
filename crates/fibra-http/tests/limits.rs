//! Limits and their status codes: 414, 431, 413 (by Content-Length and by chunked growth),
//! and draining an unread body to keep the connection.

mod util;

use std::io::Write;

use fibra_http::{Response, Settings};
use util::*;

fn echo(mut req: fibra_http::Request) -> Response {
    match req.body_mut().read_to_vec(1 << 20) {
        Ok(b) => Response::new(b.into()),
        Err(e) => Response::new(format!("handler saw: {e}").into()),
    }
}

#[test]
fn codes() {
    let srv = start(small_limits(), echo);
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(300));
    let big_header = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "b".repeat(1100)
    );
    let many: String = (0..10).map(|i| format!("H{i}: v\r\n")).collect();
    let many = format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n");
    let big_cl = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n".to_string();
    let big_chunked = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n{}\r\n0\r\n\r\n",
        "c".repeat(101)
    );
    for (req, want) in [
        (long_target, 414),
        (big_header, 431),
        (many, 431),
        (big_cl, 413),
        (big_chunked, 413),
    ] {
        let out = send_and_read_to_close(srv.addr, req.as_bytes());
        assert_eq!(status_of(&out), want, "{out}");
        assert!(out.contains("Connection: close\r\n"), "{out}");
        assert!(!out.contains("handler saw"), "{out}");
    }
}

#[test]
fn unread_body_is_drained_and_connection_kept() {
    let srv = start(Settings::default(), hello);
    let mut s = connect(srv.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789")
        .unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(!head.contains("Connection: close"), "{head}");
    assert_eq!(body, b"hello");
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s, false).1, b"hello");
}

#[test]
fn unread_body_over_drain_limit_closes() {
    let settings = Settings {
        max_drain_bytes: 10,
        ..Settings::default()
    };
    let srv = start(settings, hello);
    let mut s = connect(srv.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        .unwrap();
    let out = read_to_close(&mut s);
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
}
