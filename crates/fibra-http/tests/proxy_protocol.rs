//! The PROXY protocol transport (`Server::proxy_protocol`), over the wire with hand-made v1
//! and v2 headers: the client's address from the header reaches the request and the access
//! log, on every request of a keep-alive connection; LOCAL and UNKNOWN keep the socket's
//! address; a missing, malformed, truncated or oversized header, or one with a wrong
//! signature, closes the connection without an answer; a header still incomplete at the header
//! timeout closes it; none of these leaves a connection or a descriptor behind.

mod util;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::access_log::{AccessLogSink, LogEntry};
use fibra_http::proxy_protocol::{parse_header, MAX_HEADER_BYTES};
use fibra_http::{Request, Response, ServerHandle};
use util::{connect, open_fds, read_response, read_to_close, wait_for_fds_at_most, wait_until};

/// Remembers the peer address of every access log entry.
#[derive(Default, Clone)]
struct Peers(Arc<Mutex<Vec<Option<SocketAddr>>>>);

impl AccessLogSink for Peers {
    fn log(&self, e: &LogEntry<'_>) {
        self.0.lock().unwrap().push(e.peer);
    }
}

/// A server behind the PROXY protocol whose answer is the request's peer address.
fn start(header_timeout: Duration) -> (ServerHandle, Peers) {
    let peers = Peers::default();
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .header_timeout(header_timeout)
        .access_log_sink(peers.clone())
        .proxy_protocol()
        .serve(|req: Request| {
            let peer = req.peer_addr().map(|p| p.to_string()).unwrap_or_default();
            Response::new(peer.into())
        })
        .unwrap();
    (handle, peers)
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

fn v2(command: u8, family: u8, addrs: &[u8]) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.push(0x20 | command);
    h.push(family);
    h.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
    h.extend_from_slice(addrs);
    h
}

fn v2_ipv4(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
    let mut a = Vec::new();
    a.extend_from_slice(&src);
    a.extend_from_slice(&dst);
    a.extend_from_slice(&sport.to_be_bytes());
    a.extend_from_slice(&dport.to_be_bytes());
    v2(1, 0x11, &a)
}

/// Sends `prefix` then one request; returns the body of the answer (the peer address).
fn peer_seen(addr: SocketAddr, prefix: &[u8]) -> String {
    let mut s = connect(addr);
    let mut bytes = prefix.to_vec();
    bytes.extend_from_slice(GET);
    s.write_all(&bytes).unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    String::from_utf8(body).unwrap()
}

#[test]
fn v1_and_v2_give_the_client_address_to_the_request_and_the_access_log() {
    let (server, peers) = start(Duration::from_secs(10));
    let addr = server.local_addr();
    assert_eq!(
        peer_seen(addr, b"PROXY TCP4 203.0.113.7 192.0.2.1 40001 443\r\n"),
        "203.0.113.7:40001"
    );
    assert_eq!(
        peer_seen(addr, b"PROXY TCP6 2001:db8::7 2001:db8::1 40002 443\r\n"),
        "[2001:db8::7]:40002"
    );
    assert_eq!(
        peer_seen(addr, &v2_ipv4([198, 51, 100, 9], 40003, [192, 0, 2, 1], 80)),
        "198.51.100.9:40003"
    );
    let mut v6 = Vec::new();
    v6.extend_from_slice(
        &"2001:db8::9"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    v6.extend_from_slice(
        &"2001:db8::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    v6.extend_from_slice(&40004u16.to_be_bytes());
    v6.extend_from_slice(&80u16.to_be_bytes());
    v6.extend_from_slice(&[0x04, 0, 1, 0]); // a NOOP TLV, skipped
    assert_eq!(peer_seen(addr, &v2(1, 0x21, &v6)), "[2001:db8::9]:40004");
    let logged: Vec<String> = peers
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.unwrap().to_string())
        .collect();
    assert_eq!(
        logged,
        [
            "203.0.113.7:40001",
            "[2001:db8::7]:40002",
            "198.51.100.9:40003",
            "[2001:db8::9]:40004"
        ]
    );
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn local_and_unknown_keep_the_socket_address() {
    let (server, _) = start(Duration::from_secs(10));
    let addr = server.local_addr();
    // A balancer's health check (v2 LOCAL, no addresses) and v1 UNKNOWN.
    let local = peer_seen(addr, &v2(0, 0x00, &[]));
    assert!(local.starts_with("127.0.0.1:"), "{local}");
    let unknown = peer_seen(addr, b"PROXY UNKNOWN\r\n");
    assert!(unknown.starts_with("127.0.0.1:"), "{unknown}");
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn a_header_in_pieces_and_keep_alive_requests_after_it() {
    let (server, _) = start(Duration::from_secs(10));
    let mut s = connect(server.local_addr());
    let header = v2_ipv4([203, 0, 113, 50], 5000, [192, 0, 2, 1], 80);
    // In three writes: inside the signature, inside the addresses, then the rest with a
    // request.
    s.write_all(&header[..5]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(&header[5..20]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut rest = header[20..].to_vec();
    rest.extend_from_slice(GET);
    s.write_all(&rest).unwrap();
    for _ in 0..3 {
        let (head, body) = read_response(&mut s, false);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(body, b"203.0.113.50:5000");
        s.write_all(GET).unwrap();
    }
    server.shutdown(Duration::from_secs(1));
}

/// Sends `bytes` and expects the connection closed with nothing sent back.
fn closed_without_answer(addr: SocketAddr, bytes: &[u8]) {
    let mut s = connect(addr);
    // The server may close (and reset) before all is written.
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let reply = read_to_close(&mut s);
    assert_eq!(reply, "", "answered {:?}", String::from_utf8_lossy(bytes));
}

#[test]
fn bad_headers_close_the_connection_and_leave_nothing_open() {
    let (server, _) = start(Duration::from_secs(10));
    let addr = server.local_addr();
    // Warm up (the worker's buffers, the accept fiber), then count descriptors.
    peer_seen(addr, b"PROXY UNKNOWN\r\n");
    let fds = open_fds();
    let mut wrong_signature = v2_ipv4([1, 2, 3, 4], 1, [5, 6, 7, 8], 2);
    wrong_signature[3] = b'X';
    let mut bad_version = v2_ipv4([1, 2, 3, 4], 1, [5, 6, 7, 8], 2);
    bad_version[12] = 0x31;
    let mut too_long = b"\r\n\r\n\0\r\nQUIT\n\x21\x11\xff\xff".to_vec();
    too_long.extend_from_slice(&[0; 100]);
    let short_addresses = v2(1, 0x11, &[1, 2, 3, 4]); // IPv4 needs 12 bytes
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("no header", GET.to_vec()),
        ("wrong v2 signature", wrong_signature),
        ("v2 version 3", bad_version),
        ("v2 length beyond the buffer", too_long),
        ("v2 addresses shorter than the family", short_addresses),
        (
            "v1 bad address",
            b"PROXY TCP4 203.0.113 192.0.2.1 1 2\r\nGET / HTTP/1.1\r\n\r\n".to_vec(),
        ),
        (
            "v1 bad port",
            b"PROXY TCP4 203.0.113.1 192.0.2.1 99999 2\r\n".to_vec(),
        ),
        (
            "v1 without its CRLF",
            [b"PROXY TCP4 ".as_slice(), &[b'1'; 120]].concat(),
        ),
        ("v1 truncated", b"PROXY TCP4 203.0.113.1 192.".to_vec()),
        (
            "v1 fields missing",
            b"PROXY TCP4 203.0.113.1 192.0.2.1 1\r\nGET / HTTP/1.1\r\n\r\n".to_vec(),
        ),
        (
            "v2 truncated",
            v2_ipv4([1, 2, 3, 4], 1, [5, 6, 7, 8], 2)[..20].to_vec(),
        ),
        ("binary noise", vec![0x16, 0x03, 0x01, 0x00, 0xff, 0x01]),
    ];
    for (name, bytes) in &cases {
        eprintln!("case: {name}");
        closed_without_answer(addr, bytes);
    }
    assert!(
        wait_until(|| server.connections() == 0),
        "connections left open"
    );
    let now = wait_for_fds_at_most(fds);
    assert!(now <= fds, "{now} descriptors open, {fds} before");
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn a_header_must_arrive_within_the_header_timeout() {
    let (server, _) = start(Duration::from_millis(300));
    let addr = server.local_addr();
    // Silent after part of a header.
    let mut s = connect(addr);
    s.write_all(b"PROXY TCP4 203.0").unwrap();
    assert_eq!(read_to_close(&mut s), "");

    // A byte at a time, each well within the timeout, of a v2 header announcing 2,000 bytes:
    // one deadline for the whole header, so the server closes long before the last byte.
    let mut s = connect(addr);
    let mut header = b"\r\n\r\n\0\r\nQUIT\n\x21\x11".to_vec();
    header.extend_from_slice(&2000u16.to_be_bytes());
    header.extend_from_slice(&[0; 2000]);
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut sent = 0;
    let mut closed = false;
    for b in &header {
        if s.write_all(std::slice::from_ref(b)).is_err() {
            closed = true;
            break;
        }
        sent += 1;
        let mut buf = [0u8; 16];
        match s.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => panic!("answered {:?}", &buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                closed = true;
                break;
            }
            Err(_) => {} // the read timeout: still open
        }
    }
    assert!(
        closed && sent < header.len(),
        "sent {sent} of {} bytes",
        header.len()
    );
    assert!(wait_until(|| server.connections() == 0));
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn parse_header_reports_incomplete_complete_and_invalid() {
    assert_eq!(parse_header(b"PROXY TCP4 1.2.3.4").unwrap(), None);
    assert_eq!(parse_header(b"\r\n\r\n").unwrap(), None);
    let h = parse_header(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\nGET")
        .unwrap()
        .unwrap();
    assert_eq!(h.len, 32);
    assert_eq!(h.source, Some("1.2.3.4:1".parse().unwrap()));
    assert_eq!(h.destination, Some("5.6.7.8:2".parse().unwrap()));
    // Found by the fuzz target: a v1 line whose CRLF has come is final, fields missing or not.
    let e = parse_header(b"PROXY TCP6 200+:d200 20\r\n:1 1 2\r\n").unwrap_err();
    assert!(e.to_string().contains("bad v1 header"), "{e}");
    assert_eq!(
        parse_header(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r").unwrap(),
        None
    );
    let e = parse_header(b"GET / HTTP/1.1\r\n").unwrap_err();
    assert!(e.to_string().contains("wrong signature"), "{e}");
    let mut big = b"\r\n\r\n\0\r\nQUIT\n\x21\x11".to_vec();
    big.extend_from_slice(&(MAX_HEADER_BYTES as u16).to_be_bytes());
    let e = parse_header(&big).unwrap_err();
    assert!(e.to_string().contains("more than the 4096 accepted"), "{e}");
}
