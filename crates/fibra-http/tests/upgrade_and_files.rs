//! The 101 upgrade path (raw connection handed to the handler) and file-range bodies.

mod util;

use std::io::{Read, Write};

use fibra_http::{FileRange, Response, ResponseBody, Settings};
use util::*;

#[test]
fn upgrade_hands_over_the_connection() {
    let srv = start(Settings::default(), |_req| {
        fibra_http::Response::builder()
            .status(101)
            .header("connection", "upgrade")
            .header("upgrade", "echo")
            .body(ResponseBody::upgrade(|io| {
                // The transport is the server's TCP connection; echo what came with the head,
                // then 3 more bytes read from the socket.
                let Ok((mut tcp, early)) = io.downcast::<fibra_http::Tcp>() else {
                    return;
                };
                let mut more = [0u8; 3];
                if tcp.read_exact(&mut more).is_ok() {
                    let _ = tcp.write_all(&early);
                    let _ = tcp.write_all(&more);
                }
            }))
            .unwrap()
    });
    let mut s = connect(srv.addr);
    // "early" arrives with the head: it must reach the upgraded handler, not the parser.
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly")
        .unwrap();
    let (head, _) = read_response(&mut s, true);
    assert!(
        head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{head}"
    );
    assert!(head.contains("Connection: upgrade\r\n"), "{head}");
    s.write_all(b"new").unwrap();
    let mut echoed = [0u8; 8];
    s.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"earlynew");
}

fn temp_file(name: &str, content: &[u8]) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("fibra-http-test-{}-{name}", std::process::id()));
    std::fs::write(&path, content).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    f
}

#[test]
fn file_ranges_small_and_large() {
    let small = std::sync::Arc::new(temp_file("small", b"0123456789"));
    let big_content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let big = std::sync::Arc::new(temp_file("big", &big_content));
    let srv = start(Settings::default(), move |req: fibra_http::Request| {
        let body = match req.uri().path() {
            "/small" => ResponseBody::file(FileRange::new(small.clone(), 2, 5)),
            _ => ResponseBody::file(FileRange::new(big.clone(), 1000, 150_000)),
        };
        Response::new(body)
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.contains("Content-Length: 5\r\n"), "{head}");
    assert_eq!(body, b"23456");
    s.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, body) = read_response(&mut s, false);
    assert!(head.contains("Content-Length: 150000\r\n"), "{head}");
    assert!(body == big_content[1000..151_000], "file bytes differ");
    s.write_all(b"HEAD /big HTTP/1.1\r\nHost: x\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, _) = read_response(&mut s, true);
    assert!(head.contains("Content-Length: 150000\r\n"), "{head}");
    assert_eq!(read_response(&mut s, false).1, b"23456");
}
