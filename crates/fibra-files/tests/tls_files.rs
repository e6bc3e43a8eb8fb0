//! Static files over TLS (no sendfile: the file is read and encrypted in 256 KiB pieces,
//! `Tls::send_file`): a file over several pieces and not a multiple of a record arrives
//! byte for byte, twice on one keep-alive connection, and so do a range crossing a piece
//! boundary and a small file.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use fibra_files::{FileServer, FileServerConfig};
use fibra_http::tls::server_config_from_pem;
use fibra_http::{Request, Server};
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

#[path = "../../fibra-http/tests/tls_util/mod.rs"]
mod tls_util;

use tls_util::{tcp, Certs};

/// Over three 256 KiB pieces, and not a multiple of 16 KiB.
const BIG: usize = 3 * 256 * 1024 + 12_345;

/// Reads one response with a `Content-Length` body: (head, body).
fn read_response(s: &mut impl Read) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "EOF inside a head");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (head, body)
}

#[test]
fn files_over_tls_arrive_byte_for_byte() {
    let certs = Certs::new("files");
    let root = certs.dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let big: Vec<u8> = (0..BIG).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(root.join("small.txt"), b"small file").unwrap();
    let files = Arc::new(FileServer::new(FileServerConfig::new(&root)).unwrap());
    let config = server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let handle = Server::bind("127.0.0.1:0")
        .workers(1)
        .tls(config)
        .serve(move |req: Request| files.handle(&req))
        .unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(certs.client_config(), name).unwrap();
    let mut s = StreamOwned::new(conn, tcp(handle.local_addr()));
    for _ in 0..2 {
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let (head, body) = read_response(&mut s);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body == big, "the big file differs");
    }
    // A range across the first piece boundary.
    let (from, to) = (256 * 1024 - 100, 256 * 1024 + 5_000);
    s.write_all(
        format!("GET /big.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes={from}-{to}\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let (head, body) = read_response(&mut s);
    assert!(head.starts_with("HTTP/1.1 206"), "{head}");
    assert!(body == big[from..=to], "the range differs");
    s.write_all(b"GET /small.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (head, body) = read_response(&mut s);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, b"small file");
    drop(s);
    handle.shutdown(Duration::from_secs(5));
}
