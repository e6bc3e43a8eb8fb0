//! `Server` over TLS (`Server::tls`, `TlsAcceptor`, the `Tls` transport): keep-alive and
//! pipelined requests, a request body, a large response, a client that does not speak TLS,
//! graceful shutdown of an idle TLS connection, and the PEM loader's errors.
//!
//! The client is rustls's `ClientConnection` over a blocking std `TcpStream`, trusting a
//! self-signed certificate rcgen makes for the test.
//!
//! Idle TLS connections holding no stack is observed as in `unix_transport.rs`: the number of
//! the process's memory mappings hardly grows with many of them; the tests of this binary take
//! turns (`SERIAL`) so one does not map stacks while another counts.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fibra_http::tls::{server_config_from_pem, ALPN_HTTP1};
use fibra_http::{Request, Response, Server, ServerHandle};
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

mod tls_util;

use tls_util::{tcp, Certs, CLIENT_TIMEOUT};
/// The large response: over 1 MiB, not a multiple of a TLS record.
const BIG: usize = (1 << 20) + 12_345;

/// Idle connections per mapping count.
const IDLE: usize = 100;

type Tls = StreamOwned<ClientConnection, TcpStream>;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

/// `/echo` returns the request body, `/big` `BIG` patterned bytes, anything else its path.
fn handler(mut req: Request) -> Response {
    match req.uri().path() {
        "/echo" => Response::new(req.body_mut().read_to_vec(8 << 20).unwrap().into()),
        "/big" => Response::new(big_body().into()),
        p => Response::new(p.to_string().into()),
    }
}

fn big_body() -> Vec<u8> {
    (0..BIG).map(|i| (i % 251) as u8).collect()
}

fn tls_server(certs: &Certs) -> ServerHandle {
    let config = server_config_from_pem(certs.cert(), certs.key()).expect("server config");
    Server::bind("127.0.0.1:0")
        .workers(2)
        .tls(config)
        .serve(handler)
        .expect("server starts")
}

fn connect(certs: &Certs, addr: SocketAddr) -> Tls {
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(certs.client_config(), name).unwrap();
    StreamOwned::new(conn, tcp(addr))
}

/// Reads one response with a `Content-Length` body: (head, body).
fn read_response(s: &mut impl Read) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).expect("read head"),
            1,
            "EOF inside a head"
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len: usize = head
        .to_ascii_lowercase()
        .split("\r\n")
        .find_map(|l| {
            l.strip_prefix("content-length: ")
                .map(|v| v.parse().unwrap())
        })
        .expect("content-length");
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("read body");
    (head, body)
}

fn get(s: &mut Tls, path: &str) -> (String, String) {
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    s.flush().unwrap();
    let (head, body) = read_response(s);
    (head, String::from_utf8(body).unwrap())
}

/// Reads until the end of the stream (clean, unclean or a reset): what arrived before.
fn read_to_close(s: &mut impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        io::ErrorKind::UnexpectedEof
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::ConnectionAborted
                    ),
                    "not the end of the stream: {e}"
                );
                return out;
            }
        }
    }
}

#[test]
fn keep_alive_and_pipelined_requests() {
    let _serial = serial();
    let certs = Certs::new("keepalive");
    let h = tls_server(&certs);
    let mut c = connect(&certs, h.local_addr());
    for i in 0..10 {
        let (head, body) = get(&mut c, &format!("/r{i}"));
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(!head.contains("Connection: close"), "{head}");
        assert_eq!(body, format!("/r{i}"));
    }
    assert_eq!(c.conn.alpn_protocol(), Some(ALPN_HTTP1));

    // Several requests in one write (one TLS record): all answered, in order.
    let mut batch = String::new();
    for i in 0..8 {
        batch.push_str(&format!("GET /p{i} HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    }
    c.write_all(batch.as_bytes()).unwrap();
    c.flush().unwrap();
    for i in 0..8 {
        let (head, body) = read_response(&mut c);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(body, format!("/p{i}").as_bytes());
    }

    // Then one that closes: the server answers and ends the connection.
    c.write_all(b"GET /last HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    c.flush().unwrap();
    let (head, body) = read_response(&mut c);
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert_eq!(body, b"/last");
    assert_eq!(read_to_close(&mut c), b"");
    h.shutdown(Duration::from_secs(5));
}

#[test]
fn request_body_and_large_response() {
    let _serial = serial();
    let certs = Certs::new("bodies");
    let h = tls_server(&certs);
    let mut c = connect(&certs, h.local_addr());

    // A body larger than one TLS record, sent with its head.
    let sent: Vec<u8> = (0..100_000u32).map(|i| (i % 247) as u8).collect();
    let mut req = format!(
        "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        sent.len()
    )
    .into_bytes();
    req.extend_from_slice(&sent);
    c.write_all(&req).unwrap();
    c.flush().unwrap();
    let (head, body) = read_response(&mut c);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(body == sent, "echoed body differs");

    // A response over 1 MiB, byte for byte; the connection stays usable.
    write!(c, "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    c.flush().unwrap();
    let (head, body) = read_response(&mut c);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(body.len(), BIG);
    assert!(body == big_body(), "large body differs");
    assert_eq!(get(&mut c, "/after").1, "/after");
    h.shutdown(Duration::from_secs(5));
}

#[test]
fn plain_http_gets_a_readable_400_and_garbage_the_connection_closed() {
    let _serial = serial();
    let certs = Certs::new("plain");
    let h = tls_server(&certs);

    // Plain HTTP to the TLS port: a readable 400, as nginx answers, then the close.
    let mut plain = tcp(h.local_addr());
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let reply = String::from_utf8(read_to_close(&mut plain)).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{reply:?}"
    );
    assert!(reply.contains("Connection: close\r\n"), "{reply:?}");
    assert!(
        reply.ends_with("\r\n\r\nThe plain HTTP request was sent to HTTPS port\n"),
        "{reply:?}"
    );

    // Garbage that looks like a TLS record header, then nothing more is needed.
    let mut garbage = tcp(h.local_addr());
    garbage
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        .unwrap();
    let reply = read_to_close(&mut garbage);
    assert!(!reply.starts_with(b"HTTP/"), "{reply:?}");

    // The server still serves TLS clients.
    let mut c = connect(&certs, h.local_addr());
    assert_eq!(get(&mut c, "/still").1, "/still");
    h.shutdown(Duration::from_secs(5));
}

#[test]
fn a_silent_client_does_not_block_accepts_and_meets_the_header_timeout() {
    let _serial = serial();
    let certs = Certs::new("silent");
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    // One worker: a handshake run by the accept loop would hold up the next client.
    let h = Server::bind("127.0.0.1:0")
        .workers(1)
        .header_timeout(Duration::from_millis(500))
        .tls(config)
        .serve(handler)
        .unwrap();
    // Connects and never says a word: no ClientHello.
    let mut silent = tcp(h.local_addr());
    // Others are served meanwhile.
    let mut c = connect(&certs, h.local_addr());
    assert_eq!(get(&mut c, "/meanwhile").1, "/meanwhile");
    // The handshake counts against the header timeout: the silent connection is closed
    // (without a byte: there is no TLS session to answer 408 in).
    assert_eq!(read_to_close(&mut silent), b"");
    h.shutdown(Duration::from_secs(5));
}

#[test]
fn graceful_shutdown_closes_an_idle_tls_connection() {
    let _serial = serial();
    let certs = Certs::new("shutdown");
    let h = tls_server(&certs);
    let addr = h.local_addr();
    let mut idle = connect(&certs, addr);
    assert_eq!(get(&mut idle, "/").1, "/");
    // Wait (bounded) until the server counts it, then until it is idle: a moment after its
    // response.
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    while h.connections() != 1 {
        assert!(Instant::now() < deadline, "{} connections", h.connections());
        std::thread::sleep(Duration::from_millis(5));
    }
    let stopper = std::thread::spawn(move || h.shutdown(Duration::from_secs(10)));
    assert_eq!(read_to_close(&mut idle), b"");
    stopper.join().unwrap();
    assert!(TcpStream::connect(addr).is_err(), "still accepting");
}

#[test]
fn idle_tls_connections_hold_no_stack() {
    let _serial = serial();
    let certs = Certs::new("idle");
    let h = tls_server(&certs);
    // Warm up: the first connections map the workers' stacks and the TLS code's buffers.
    for _ in 0..4 {
        let mut c = connect(&certs, h.local_addr());
        assert_eq!(get(&mut c, "/warm").1, "/warm");
    }
    let before = mappings();
    let mut conns: Vec<Tls> = (0..IDLE)
        .map(|i| {
            let mut c = connect(&certs, h.local_addr());
            assert_eq!(get(&mut c, &format!("/{i}")).1, format!("/{i}"));
            c
        })
        .collect();
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    while h.connections() != IDLE {
        assert!(Instant::now() < deadline, "{} connections", h.connections());
        std::thread::sleep(Duration::from_millis(5));
    }
    // Give every connection's fiber the moment it needs to reach its wait after the flush.
    std::thread::sleep(Duration::from_millis(200));
    let growth = mappings().saturating_sub(before);
    eprintln!("new mappings with {IDLE} idle TLS connections: {growth}");
    assert!(growth < IDLE / 10, "{growth} new mappings");
    // Still served after the idle wait.
    assert_eq!(get(&mut conns[0], "/again").1, "/again");
    let stopper = std::thread::spawn(move || h.shutdown(Duration::from_secs(10)));
    for c in &mut conns {
        assert_eq!(read_to_close(c), b"");
    }
    stopper.join().unwrap();
}

#[test]
fn pem_errors_name_the_file() {
    let _serial = serial();
    let certs = Certs::new("pem");
    let missing = certs.dir.join("missing.pem");
    let err = server_config_from_pem(&missing, certs.key()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains("missing.pem"), "{err}");

    // A key where the certificate should be, and the reverse.
    let err = server_config_from_pem(certs.key(), certs.key()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("key.pem: no certificate"), "{err}");
    let err = server_config_from_pem(certs.cert(), certs.cert()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(
        err.to_string().contains("cert.pem: no private key"),
        "{err}"
    );

    // A key that does not belong to the certificate.
    let other = Certs::new("pem-other");
    let err = server_config_from_pem(certs.cert(), other.key()).unwrap_err();
    assert!(err.to_string().contains("cert.pem"), "{err}");

    assert!(server_config_from_pem(certs.cert(), certs.key()).is_ok());
}
