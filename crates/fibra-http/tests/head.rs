//! HEAD: same headers as GET, no body, connection stays usable.

mod util;

use std::io::Write;

use fibra_http::{Response, ResponseBody, Settings};
use util::*;

#[test]
fn head_has_length_but_no_body() {
    let srv = start(Settings::default(), hello);
    let mut s = connect(srv.addr);
    s.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, _) = read_response(&mut s, true);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("Content-Length: 5\r\n"), "{head}");
    // The next bytes are the GET's response, not a body.
    let (head2, body) = read_response(&mut s, false);
    assert!(head2.starts_with("HTTP/1.1 200 OK\r\n"), "{head2}");
    assert_eq!(body, b"hello");
}

#[test]
fn head_of_a_stream_does_not_run_it() {
    let srv = start(Settings::default(), |_req| {
        Response::new(ResponseBody::stream(|_w| panic!("must not run for HEAD")))
    });
    let out = send_and_read_to_close(
        srv.addr,
        b"HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("Transfer-Encoding: chunked\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\n"), "{out}");
}

#[test]
fn head_whose_body_turns_out_malformed_gets_a_bodiless_400() {
    // The handler reads the body; the bad chunk size is found then, after the head was
    // accepted as a HEAD request, so the 400 that answers it carries no text.
    let srv = start(Settings::default(), |mut req: fibra_http::Request| {
        let mut body = Vec::new();
        let _ = std::io::Read::read_to_end(req.body_mut(), &mut body);
        Response::new(body.into())
    });
    let out = send_and_read_to_close(
        srv.addr,
        b"HEAD / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert!(out.contains("Content-Length: "), "{out}");
    // Nothing after the blank line ending the head.
    assert!(out.ends_with("\r\n\r\n"), "{out}");
}
