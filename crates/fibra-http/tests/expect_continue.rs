//! `Expect: 100-continue`: answered on the first body read, not when the body is unused.

mod util;

use std::io::Write;

use fibra_http::{Response, Settings};
use util::*;

#[test]
fn continue_sent_on_first_read() {
    let srv = start(Settings::default(), |mut req: fibra_http::Request| {
        Response::new(req.body_mut().read_to_vec(100).unwrap().into())
    });
    let mut s = connect(srv.addr);
    s.write_all(b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    let (interim, _) = read_response(&mut s, true);
    assert_eq!(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"data").unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(body, b"data");
}

#[test]
fn no_continue_when_body_unread_and_connection_closes() {
    let srv = start(Settings::default(), |_req| {
        let mut r = Response::new("denied".into());
        *r.status_mut() = http::StatusCode::FORBIDDEN;
        r
    });
    let out = send_and_read_to_close(
        srv.addr,
        b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{out}");
    assert!(!out.contains("100 Continue"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
}
