//! HTTP/2 over TLS: ALPN `h2` chosen by the server's configuration, the connection served as
//! HTTP/2 from its first byte; a client offering only `http/1.1` still gets HTTP/1.1; idle
//! HTTP/2 connections hold no stack (the mappings count, as in `unix_transport.rs`).

mod h2_util;
mod tls_util;

use std::io::{Read, Write};

use fibra_http::tls::{server_config_from_pem, ALPN_H2, ALPN_HTTP1};
use fibra_http::{Request, Response, Server, ServerHandle};
use h2_util::*;
use tls_util::Certs;

fn server(certs: &Certs) -> ServerHandle {
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    Server::bind("127.0.0.1:0")
        .workers(1)
        .tls(config)
        .serve(|req: Request| Response::new(format!("{:?}", req.version()).into()))
        .unwrap()
}

#[test]
fn alpn_h2_is_served_as_http2() {
    let certs = Certs::new("h2-alpn");
    let h = server(&certs);
    let mut s = certs.client_offering(h.local_addr(), &[ALPN_H2, ALPN_HTTP1]);
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(get(1, "/"));
    s.write_all(&out).unwrap();
    let data = read_until(&mut s, |f| f.ty == DATA && f.stream == 1).expect("a response");
    assert_eq!(s.conn.alpn_protocol(), Some(ALPN_H2));
    assert_eq!(data.payload, b"HTTP/2.0");
    h.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn a_bad_preface_after_alpn_h2_ends_the_connection() {
    let certs = Certs::new("h2-bad-preface");
    let h = server(&certs);
    let mut s = certs.client_offering(h.local_addr(), &[ALPN_H2]);
    // After ALPN chose h2, even a line that looks like HTTP/1.1 is not: the connection ends
    // (a GOAWAY at most), with no HTTP/1.1 answer.
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    assert!(
        !reply.starts_with(b"HTTP/1.1"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    h.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn http1_client_still_gets_http1() {
    let certs = Certs::new("h2-alpn-h1");
    let h = server(&certs);
    let mut s = certs.client_offering(h.local_addr(), &[ALPN_HTTP1]);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("HTTP/1.1"), "{reply}");
    assert_eq!(s.conn.alpn_protocol(), Some(ALPN_HTTP1));
    h.shutdown(std::time::Duration::from_secs(1));
}

/// After ALPN chose `h2` the server starts HTTP/2 at once: its SETTINGS frame comes before
/// the client has sent a byte of its preface.
#[test]
fn alpn_h2_starts_http2_before_the_client_speaks() {
    let certs = Certs::new("h2-alpn-first");
    let h = server(&certs);
    let mut s = certs.client_offering(h.local_addr(), &[ALPN_H2]);
    // The handshake alone, no application data.
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    assert_eq!(s.conn.alpn_protocol(), Some(ALPN_H2));
    let first = read_frame(&mut s).expect("the server's first frame");
    assert_eq!((first.ty, first.stream), (SETTINGS, 0), "{first:?}");
    // And the connection then goes on as usual.
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(get(1, "/"));
    s.write_all(&out).unwrap();
    let data = read_until(&mut s, |f| f.ty == DATA && f.stream == 1).expect("a response");
    assert_eq!(data.payload, b"HTTP/2.0");
    h.shutdown(std::time::Duration::from_secs(1));
}
