//! `--error-log FILE`: the servers' `log` records go to FILE, each naming the address or path
//! involved — here TLS failures, with the client's address — and an error log that cannot be
//! opened is refused at start, naming the file.

use std::io::{Read, Write};

mod serve_util;
mod tls_util;

use serve_util::{connect, start};
use tls_util::Certs;

#[test]
fn tls_failures_reach_the_error_log_with_the_client_address() {
    let certs = Certs::new("error-log");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let log = certs.path("error.log");
    let mut s = start(&[
        "hello",
        "-p",
        "0",
        "--workers",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--error-log",
        &log,
    ]);
    let addr = s.addr.clone();
    // A broken ClientHello, then plain HTTP on the TLS port.
    let mut bad = connect(&addr);
    let bad_peer = bad.local_addr().unwrap();
    bad.write_all(b"\x16\x03\x01\x00\x05hello").unwrap();
    let _ = bad.read_to_end(&mut Vec::new());
    let mut plain = connect(&addr);
    let plain_peer = plain.local_addr().unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    let _ = plain.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    s.signal(libc::SIGTERM);
    assert!(s.wait_exit().success());

    let text = std::fs::read_to_string(&log).expect("the error log exists");
    let line_of = |peer: std::net::SocketAddr| {
        text.lines()
            .find(|l| l.contains(&peer.to_string()))
            .unwrap_or_else(|| panic!("nothing about {peer} in:\n{text}"))
            .to_string()
    };
    let l = line_of(bad_peer);
    assert!(l.contains("TLS failed"), "{l}");
    assert!(l.starts_with("20") && l.contains("Z info "), "{l}");
    assert!(line_of(plain_peer).contains("plain HTTP on the TLS port"));
}

#[test]
fn an_error_log_that_cannot_be_opened_is_named() {
    let certs = Certs::new("error-log-bad");
    let log = certs.path("missing-dir/error.log");
    let out = serve_util::fibra(&["hello", "-p", "0", "--error-log", &log])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&log), "{err}");
}
