//! The PROXY protocol under TLS (`Server::proxy_protocol().tls(..)`, a balancer that passes
//! TLS through): the header comes first in the clear, then the handshake; the request sees
//! the header's client address. A client that starts the handshake without a header is
//! closed without a TLS answer.

mod tls_util;

use std::io::{Read, Write};
use std::time::Duration;

use fibra_http::tls::server_config_from_pem;
use fibra_http::{Request, Response};
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};
use tls_util::{tcp, Certs};

#[test]
fn the_header_before_the_handshake_gives_the_client_address() {
    let certs = Certs::new("proxy-protocol");
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let server = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .proxy_protocol()
        .tls(config)
        .serve(|req: Request| {
            Response::new(
                req.peer_addr()
                    .map(|p| p.to_string())
                    .unwrap_or_default()
                    .into(),
            )
        })
        .unwrap();
    let addr = server.local_addr();

    let mut sock = tcp(addr);
    sock.write_all(b"PROXY TCP4 203.0.113.9 192.0.2.1 41000 443\r\n")
        .unwrap();
    let conn = ClientConnection::new(
        certs.client_config(),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tls = StreamOwned::new(conn, sock);
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let _ = tls.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.ends_with("\r\n\r\n203.0.113.9:41000"), "{reply}");

    // A ClientHello without a header: closed, nothing sent back (no alert either).
    let mut conn = ClientConnection::new(
        certs.client_config(),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    assert_eq!(hello[0], 0x16, "a handshake record");
    let mut raw = tcp(addr);
    let _ = raw.write_all(&hello);
    let mut back = Vec::new();
    let _ = raw.read_to_end(&mut back);
    assert!(back.is_empty(), "the server sent {back:?}");
    server.shutdown(Duration::from_secs(1));
}
