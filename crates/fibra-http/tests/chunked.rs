//! Chunked bodies in (decoded for the handler) and out (streaming writer); trailer fields are
//! in `trailers.rs`.

mod util;

use std::io::Write;

use fibra_http::{Response, ResponseBody, Settings};
use util::*;

fn echo(mut req: fibra_http::Request) -> Response {
    let body = req.body_mut().read_to_vec(1 << 20).unwrap();
    Response::new(body.into())
}

#[test]
fn chunked_request_body_is_decoded() {
    let srv = start(Settings::default(), echo);
    let mut s = connect(srv.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        .unwrap();
    s.write_all(b"6;ext=1\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n")
        .unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.contains("Content-Length: 11\r\n"), "{head}");
    assert_eq!(body, b"hello world");
    // The connection is still in sync.
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    assert_eq!(read_response(&mut s, false).1, b"ok");
}

#[test]
fn streaming_response_is_chunked() {
    let srv = start(Settings::default(), |_req| {
        Response::new(ResponseBody::stream(|w| {
            for i in 0..3 {
                write!(w, "part{i};")?;
                w.flush()?;
            }
            Ok(())
        }))
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    assert_eq!(body, b"part0;part1;part2;");
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s, false).1, b"part0;part1;part2;");
}

#[test]
fn sized_stream_uses_content_length_and_http10_stream_closes() {
    let srv = start(Settings::default(), |_req| {
        Response::new(ResponseBody::stream_sized(4, |w| w.write_all(b"abcd")))
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.contains("Content-Length: 4\r\n"), "{head}");
    assert_eq!(body, b"abcd");

    let srv2 = start(Settings::default(), |_req| {
        Response::new(ResponseBody::stream(|w| w.write_all(b"xyz")))
    });
    let out = send_and_read_to_close(srv2.addr, b"GET / HTTP/1.0\r\n\r\n");
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert!(!out.contains("chunked"), "{out}");
    assert!(out.ends_with("\r\n\r\nxyz"), "{out}");
}
