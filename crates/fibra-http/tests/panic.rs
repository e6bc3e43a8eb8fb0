//! A panicking handler: 500 for that request, the connection closes, the server lives on.

mod util;

use fibra_http::{Response, Settings};
use util::*;

#[test]
fn panic_gives_500_and_server_survives() {
    let srv = start(Settings::default(), |req: fibra_http::Request| {
        if req.uri().path() == "/boom" {
            panic!("handler exploded (expected by the test)");
        }
        Response::new("fine".into())
    });
    let out = send_and_read_to_close(
        srv.addr,
        b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert!(
        out.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
        "{out}"
    );
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert_eq!(count_responses(&out), 1, "{out}");
    let out = send_and_read_to_close(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(out.ends_with("\r\n\r\nfine"), "{out}");
}

#[test]
fn panic_inside_stream_closes_connection() {
    let srv = start(Settings::default(), |_req| {
        Response::new(fibra_http::ResponseBody::stream(|w| {
            std::io::Write::write_all(w, b"partial")?;
            panic!("stream exploded (expected by the test)");
        }))
    });
    let out = send_and_read_to_close(srv.addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(
        !out.ends_with("0\r\n\r\n"),
        "a broken stream must not look complete: {out}"
    );
}
