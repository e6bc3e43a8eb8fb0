//! The configuration chosen by the ClientHello (`tls::choose_config_with_resolver`,
//! `Server::tls_choosing`, what `fibra serve`/`hello` run): the server prefers AES-128-GCM
//! whatever the client's order, a client that lists ChaCha20 first gets ChaCha20, a client
//! offering only AES-256-GCM gets it, TLS 1.2 follows the same rule; and the accept path of
//! this mode handles bad input as the fixed one does (plain HTTP gets the readable 400,
//! garbage and a truncated ClientHello end the connection, the server keeps serving).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::tls::{choose_config_with_resolver, CertResolver};
use fibra_http::{Request, Response, Server, ServerHandle};
use rustls::pki_types::ServerName;
use rustls::{CipherSuite, ClientConfig, ClientConnection, StreamOwned};

mod tls_util;

use tls_util::{tcp, Certs};

fn server(certs: &Certs) -> ServerHandle {
    let resolver = CertResolver::from_pem(&[(certs.cert(), certs.key())]).expect("certificates");
    let choose = choose_config_with_resolver(resolver).expect("configurations");
    Server::bind("127.0.0.1:0")
        .workers(1)
        .tls_choosing(choose)
        .serve(|_req: Request| Response::new("ok".into()))
        .expect("server starts")
}

/// A client offering exactly `suites`, in that order, over `version`.
fn client(
    certs: &Certs,
    suites: &[CipherSuite],
    version: &'static rustls::SupportedProtocolVersion,
) -> Arc<ClientConfig> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    let all = provider.cipher_suites.clone();
    provider.cipher_suites = suites
        .iter()
        .map(|want| *all.iter().find(|s| s.suite() == *want).expect("suite"))
        .collect();
    certs.client_config_with(provider, &[version])
}

/// One request over a new connection; returns the negotiated suite and the response.
fn negotiate(addr: SocketAddr, config: Arc<ClientConfig>) -> (CipherSuite, String) {
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(config, name).unwrap();
    let mut s = StreamOwned::new(conn, tcp(addr));
    s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!("read: {e}"),
    }
    let suite = s.conn.negotiated_cipher_suite().unwrap().suite();
    (suite, String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn the_server_prefers_aes128_unless_the_client_prefers_chacha() {
    use CipherSuite as S;
    let certs = Certs::new("prefer");
    let handle = server(&certs);
    let addr = handle.local_addr();
    let v13 = &rustls::version::TLS13;
    let v12 = &rustls::version::TLS12;
    let cases: &[(
        &[CipherSuite],
        &'static rustls::SupportedProtocolVersion,
        CipherSuite,
    )] = &[
        // OpenSSL's order: AES-256 first.
        (
            &[
                S::TLS13_AES_256_GCM_SHA384,
                S::TLS13_CHACHA20_POLY1305_SHA256,
                S::TLS13_AES_128_GCM_SHA256,
            ],
            v13,
            S::TLS13_AES_128_GCM_SHA256,
        ),
        // A phone without AES instructions.
        (
            &[
                S::TLS13_CHACHA20_POLY1305_SHA256,
                S::TLS13_AES_128_GCM_SHA256,
            ],
            v13,
            S::TLS13_CHACHA20_POLY1305_SHA256,
        ),
        // Only AES-256 offered.
        (
            &[S::TLS13_AES_256_GCM_SHA384],
            v13,
            S::TLS13_AES_256_GCM_SHA384,
        ),
        // TLS 1.2, the same rule.
        (
            &[
                S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            ],
            v12,
            S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            &[
                S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
                S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            ],
            v12,
            S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ];
    for (offered, version, want) in cases {
        let (got, response) = negotiate(addr, client(&certs, offered, version));
        assert_eq!(got, *want, "offered {offered:?}");
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("ok"), "{response}");
    }
    handle.shutdown(Duration::from_secs(5));
}

/// Everything the server sends until it closes.
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
            Err(e) => panic!("read: {e}"),
        }
    }
}

#[test]
fn bad_input_before_the_client_hello_ends_the_connection_and_the_server_goes_on() {
    let certs = Certs::new("bad");
    let handle = server(&certs);
    let addr = handle.local_addr();
    let good = || {
        let all = [
            CipherSuite::TLS13_AES_128_GCM_SHA256,
            CipherSuite::TLS13_AES_256_GCM_SHA384,
        ];
        let (_, response) = negotiate(addr, client(&certs, &all, &rustls::version::TLS13));
        assert!(response.ends_with("ok"), "{response}");
    };

    // Plain HTTP: nginx's readable 400.
    let mut s = tcp(addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let got = String::from_utf8_lossy(&read_to_close(&mut s)).into_owned();
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert!(
        got.contains("The plain HTTP request was sent to HTTPS port"),
        "{got}"
    );
    good();

    // Garbage: no HTTP response, the connection ends.
    let mut s = tcp(addr);
    let garbage: Vec<u8> = (0..16 * 1024u32).map(|i| (i * 7 + 3) as u8).collect();
    let _ = s.write_all(&garbage);
    let got = read_to_close(&mut s);
    assert!(
        !got.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    good();

    // A truncated ClientHello, then the client's end of stream.
    let mut s = tcp(addr);
    s.write_all(&[
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ])
    .unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let got = read_to_close(&mut s);
    assert!(
        !got.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    good();

    handle.shutdown(Duration::from_secs(5));
}
