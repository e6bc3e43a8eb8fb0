//! Keep-alive: several requests on one connection, HTTP/1.0 rules, `Connection: close`.

mod util;

use std::io::Write;

use fibra_http::Settings;
use util::*;

#[test]
fn three_requests_on_one_connection() {
    let srv = start(Settings::default(), hello);
    let mut s = connect(srv.addr);
    for _ in 0..3 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut s, false);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains("Date: "), "{head}");
        assert!(head.contains("Content-Length: 5\r\n"), "{head}");
        assert!(!head.contains("Connection:"), "{head}");
        assert_eq!(body, b"hello");
    }
}

#[test]
fn connection_close_closes() {
    let srv = start(Settings::default(), hello);
    let out = send_and_read_to_close(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\nhello"), "{out}");
}

#[test]
fn http10_closes_by_default() {
    let srv = start(Settings::default(), hello);
    let out = send_and_read_to_close(srv.addr, b"GET / HTTP/1.0\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert_eq!(count_responses(&out), 1);
}

#[test]
fn http10_keep_alive_on_request() {
    let srv = start(Settings::default(), hello);
    let mut s = connect(srv.addr);
    for _ in 0..2 {
        s.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let (head, body) = read_response(&mut s, false);
        assert!(head.contains("Connection: keep-alive\r\n"), "{head}");
        assert_eq!(body, b"hello");
    }
}

#[test]
fn keep_alive_disabled_in_settings() {
    let settings = Settings {
        keep_alive: false,
        ..Settings::default()
    };
    let srv = start(settings, hello);
    let out = send_and_read_to_close(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(count_responses(&out), 1, "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
}

#[test]
fn a_handlers_connection_close_ends_the_connection() {
    let srv = start(Settings::default(), |_req| {
        let mut r = fibra_http::Response::new("bye".into());
        r.headers_mut()
            .insert("connection", http::HeaderValue::from_static("close"));
        r
    });
    // The second request is never answered: the connection ends after the first response.
    let out = send_and_read_to_close(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(count_responses(&out), 1, "{out}");
    assert_eq!(out.matches("onnection").count(), 1, "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\nbye"), "{out}");
}
