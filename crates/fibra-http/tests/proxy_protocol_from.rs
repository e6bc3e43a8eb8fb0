//! `Server::proxy_protocol_from`: the PROXY header is expected only from trusted networks
//! (HAProxy's `expect-proxy layer4 if { src ... }`). From a trusted source it works as
//! `proxy_protocol` (the header's address is the peer's; no header closes the connection);
//! from any other source the connection is served without a header, with its socket's
//! address, and a PROXY header it sends is no header but a malformed request.

mod util;

use std::io::Write;
use std::net::SocketAddr;

use fibra_http::{IpNet, Request, Response, ServerHandle};
use util::{connect, read_response, read_to_close, status_of};

/// A server trusting `nets` to send PROXY headers, answering with the request's peer.
fn start(nets: &[&str]) -> ServerHandle {
    let nets: Vec<IpNet> = nets.iter().map(|n| n.parse().unwrap()).collect();
    fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .proxy_protocol_from(nets)
        .serve(|req: Request| {
            let peer = req.peer_addr().map(|p| p.to_string()).unwrap_or_default();
            Response::new(peer.into())
        })
        .unwrap()
}

const V1: &[u8] = b"PROXY TCP4 203.0.113.9 192.0.2.1 4711 80\r\n";
const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

/// Sends `bytes`; the answer's status and body.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> (u16, String) {
    let mut s = connect(addr);
    s.write_all(bytes).unwrap();
    let (head, body) = read_response(&mut s, false);
    (status_of(&head), String::from_utf8(body).unwrap())
}

#[test]
fn trusted_sources_must_send_the_header() {
    // The test's client is 127.0.0.1: inside 127.0.0.0/8 (and the other networks listed).
    let server = start(&["10.0.0.0/8", "127.0.0.0/8", "::1"]);
    let addr = server.local_addr();
    let (status, peer) = exchange(addr, &[V1, GET].concat());
    assert_eq!((status, peer.as_str()), (200, "203.0.113.9:4711"));
    // No header from a trusted source: closed without an answer.
    let mut s = connect(addr);
    s.write_all(GET).unwrap();
    assert_eq!(read_to_close(&mut s), "");
    server.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn other_sources_are_served_without_a_header() {
    let server = start(&["10.0.0.0/8", "2001:db8::/32"]);
    let addr = server.local_addr();
    let (status, peer) = exchange(addr, GET);
    assert_eq!(status, 200);
    assert!(
        peer.starts_with("127.0.0.1:"),
        "the socket's address: {peer}"
    );
    // A PROXY header from an untrusted source is not believed: it is taken for a request
    // line, not HTTP, and the connection is closed unserved.
    let mut s = connect(addr);
    s.write_all(&[V1, GET].concat()).unwrap();
    let answer = read_to_close(&mut s);
    assert!(!answer.contains("200 OK"), "{answer}");
    assert!(!answer.contains("203.0.113.9"), "{answer}");
    server.shutdown(std::time::Duration::from_secs(1));
}
