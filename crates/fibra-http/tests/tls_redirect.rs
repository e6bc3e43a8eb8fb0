//! `redirect::redirect_to_https`: a plain HTTP server sending every request to HTTPS (301 for
//! GET/HEAD, 308 otherwise, the Host without its port, the HTTPS port unless 443, 400 without
//! a Host).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fibra_http::{redirect, Server};

/// Sends `request` on a new connection and returns the response head, lower-cased.
fn ask(addr: std::net::SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).expect("response head");
        got.push(b[0]);
    }
    String::from_utf8(got).unwrap().to_ascii_lowercase()
}

#[test]
fn every_request_is_redirected_to_https() {
    let h = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(redirect::redirect_to_https(8443))
        .unwrap();
    let addr = h.local_addr();

    let head = ask(
        addr,
        "GET /a/b?c=1&d HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
    );
    assert!(head.starts_with("http/1.1 301 "), "{head}");
    assert!(
        head.contains("\r\nlocation: https://example.com:8443/a/b?c=1&d\r\n"),
        "{head}"
    );

    let head = ask(addr, "HEAD / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
    assert!(head.starts_with("http/1.1 301 "), "{head}");
    assert!(
        head.contains("\r\nlocation: https://[::1]:8443/\r\n"),
        "{head}"
    );

    let head = ask(
        addr,
        "POST /form HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert!(head.starts_with("http/1.1 308 "), "{head}");
    assert!(
        head.contains("\r\nlocation: https://example.com:8443/form\r\n"),
        "{head}"
    );

    // HTTP/1.0 may omit Host: nowhere to send the client.
    let head = ask(addr, "GET / HTTP/1.0\r\n\r\n");
    assert!(head.starts_with("http/1.1 400 "), "{head}");
    h.shutdown(Duration::from_secs(5));
}

#[test]
fn port_443_is_left_out_of_the_location() {
    let h = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(redirect::redirect_to_https(443))
        .unwrap();
    let head = ask(
        h.local_addr(),
        "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n",
    );
    assert!(head.starts_with("http/1.1 301 "), "{head}");
    assert!(
        head.contains("\r\nlocation: https://example.com/x\r\n"),
        "{head}"
    );
    h.shutdown(Duration::from_secs(5));
}
