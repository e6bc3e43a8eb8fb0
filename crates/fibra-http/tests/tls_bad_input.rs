//! Bad input on the TLS accept path: a truncated ClientHello, a ClientHello offering only
//! TLS 1.0/1.1, a client that stalls after its ClientHello, and 64 KiB of garbage. Each
//! connection must end (EOF or reset, within a generous client read timeout) without an HTTP
//! response, and a normal TLS client must be served right after.
//!
//! An unknown SNI name getting the default certificate is covered by `tls_certs.rs`
//! (`the_certificate_follows_sni_with_the_first_as_default`).

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::tls::server_config_from_pem;
use fibra_http::{Request, Response, Server, ServerHandle};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

mod tls_util;

use tls_util::{Certs, CLIENT_TIMEOUT};

/// What the tests need of the certificate beyond `tls_util`.
trait ClientHellos {
    fn client_config_for(&self, tls12_only: bool) -> Arc<ClientConfig>;
    fn client_hello(&self, tls12_only: bool) -> Vec<u8>;
}

impl ClientHellos for Certs {
    /// A client configuration trusting this certificate; `tls12_only`: offer TLS 1.2 alone.
    fn client_config_for(&self, tls12_only: bool) -> Arc<ClientConfig> {
        let versions: &[&'static rustls::SupportedProtocolVersion] = if tls12_only {
            &[&rustls::version::TLS12]
        } else {
            rustls::DEFAULT_VERSIONS
        };
        self.client_config_with(rustls::crypto::aws_lc_rs::default_provider(), versions)
    }

    /// The first TLS bytes a rustls client sends: its ClientHello record.
    fn client_hello(&self, tls12_only: bool) -> Vec<u8> {
        let name = ServerName::try_from("localhost").unwrap();
        let mut conn = ClientConnection::new(self.client_config_for(tls12_only), name).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        assert_eq!(out[0], 0x16, "a handshake record");
        assert_eq!(out[5], 0x01, "a ClientHello");
        out
    }
}

fn server(certs: &Certs) -> ServerHandle {
    let config = server_config_from_pem(certs.cert(), certs.key()).expect("server config");
    Server::bind("127.0.0.1:0")
        .workers(2)
        .header_timeout(Duration::from_millis(300))
        .tls(config)
        .serve(|req: Request| Response::new(req.uri().path().to_string().into()))
        .expect("server starts")
}

fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

/// Reads until EOF or a reset (a read timeout fails the test): everything the server sent.
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

/// Nothing the server sent is an HTTP response (in the clear).
fn assert_no_http(got: &[u8]) {
    assert!(
        !got.windows(5).any(|w| w == b"HTTP/"),
        "an HTTP response in the clear: {:?}",
        String::from_utf8_lossy(got)
    );
}

/// What the server sent is only TLS alerts (content type 0x15), or nothing.
fn assert_alerts_or_nothing(got: &[u8]) {
    let mut rest = got;
    while rest.len() >= 5 {
        assert_eq!(rest[0], 0x15, "not an alert record: {got:02x?}");
        let len = u16::from_be_bytes([rest[3], rest[4]]) as usize;
        rest = &rest[(5 + len).min(rest.len())..];
    }
}

/// A normal TLS client gets a response (the server is unaffected).
fn assert_served(certs: &Certs, addr: SocketAddr) {
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(certs.client_config_for(false), name).unwrap();
    let mut s = StreamOwned::new(conn, tcp(addr));
    s.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        // The server closes the TCP connection after its close_notify; tolerate a missing one.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!("read: {e}"),
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("/ok"), "{text}");
}

#[test]
fn a_truncated_client_hello_is_closed() {
    let certs = Certs::new("truncated");
    let server = server(&certs);
    let addr = server.local_addr();
    let hello = certs.client_hello(false);
    let mut s = tcp(addr);
    s.write_all(&hello[..40]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let got = read_to_close(&mut s);
    assert_no_http(&got);
    assert_alerts_or_nothing(&got);
    assert_served(&certs, addr);
    server.shutdown(Duration::from_secs(1));
}

/// The ClientHello `hello` (one record) without its `supported_versions` extension, if any.
fn without_supported_versions(hello: &[u8]) -> Vec<u8> {
    let body = &hello[9..]; // record header (5), handshake type and length (4)
    let mut at = 2 + 32; // client_version, random
    at += 1 + body[at] as usize; // session_id
    at += 2 + u16::from_be_bytes([body[at], body[at + 1]]) as usize; // cipher_suites
    at += 1 + body[at] as usize; // compression_methods
    let ext_start = at + 2;
    let mut exts = Vec::new();
    let mut i = ext_start;
    while i + 4 <= body.len() {
        let kind = u16::from_be_bytes([body[i], body[i + 1]]);
        let len = u16::from_be_bytes([body[i + 2], body[i + 3]]) as usize;
        if kind != 43 {
            exts.extend_from_slice(&body[i..i + 4 + len]);
        }
        i += 4 + len;
    }
    let mut new_body = body[..at].to_vec();
    new_body.extend_from_slice(&(exts.len() as u16).to_be_bytes());
    new_body.extend_from_slice(&exts);
    let mut out = vec![0x16, hello[1], hello[2]];
    out.extend_from_slice(&((new_body.len() + 4) as u16).to_be_bytes());
    out.push(0x01);
    out.extend_from_slice(&(new_body.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&new_body);
    out
}

#[test]
fn a_client_hello_offering_only_tls10_or_tls11_fails_the_handshake() {
    let certs = Certs::new("old");
    let server = server(&certs);
    let addr = server.local_addr();
    // Control: the rewritten ClientHello, left at TLS 1.2, is answered by a ServerHello, so
    // the failures below come from the versions alone.
    let mut s = tcp(addr);
    s.write_all(&without_supported_versions(&certs.client_hello(true)))
        .unwrap();
    let mut first = [0u8; 6];
    s.read_exact(&mut first).unwrap();
    assert_eq!(
        (first[0], first[5]),
        (0x16, 0x02),
        "a ServerHello: {first:02x?}"
    );
    drop(s);
    for version in [0x0301u16, 0x0302] {
        let mut hello = without_supported_versions(&certs.client_hello(true));
        hello[1..3].copy_from_slice(&0x0301u16.to_be_bytes()); // record version
        hello[9..11].copy_from_slice(&version.to_be_bytes()); // client_version
        let mut s = tcp(addr);
        s.write_all(&hello).unwrap();
        let got = read_to_close(&mut s);
        assert_no_http(&got);
        assert_alerts_or_nothing(&got);
        assert_served(&certs, addr);
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn a_client_stalling_after_its_client_hello_is_closed_at_the_header_timeout() {
    let certs = Certs::new("stall");
    let server = server(&certs);
    let addr = server.local_addr();
    let mut s = tcp(addr);
    s.write_all(&certs.client_hello(false)).unwrap();
    // Never answer the server's flight: it must give up (300 ms header timeout; the client
    // allows CLIENT_TIMEOUT).
    let got = read_to_close(&mut s);
    assert_no_http(&got);
    assert_eq!(got.first(), Some(&0x16), "the server's flight came first");
    assert_served(&certs, addr);
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn random_garbage_is_closed() {
    let certs = Certs::new("garbage");
    let server = server(&certs);
    let addr = server.local_addr();
    // 64 KiB of pseudo-random bytes (xorshift, fixed seed), not starting like an HTTP request.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let garbage: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let mut s = tcp(addr);
    // The server may close before reading everything: a write error is fine.
    let _ = s.write_all(&garbage);
    let _ = s.shutdown(Shutdown::Write);
    let got = read_to_close(&mut s);
    assert_no_http(&got);
    assert_served(&certs, addr);
    server.shutdown(Duration::from_secs(1));
}
