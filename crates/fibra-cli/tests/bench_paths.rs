//! `fibra bench --paths` (a random path from a list for each request) and `--drop-bodies`
//! (bodies dropped by the kernel unread) against a std-thread server that records every
//! path asked for and every byte it sent: the client must ask only for listed paths, reach
//! every one of them, and count exactly the bytes the server sent, dropped or read.

mod bench_util;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use bench_util::bench;

/// Body size per path: a small body, and one larger than the client's receive buffer and
/// the socket buffers, so `--drop-bodies` drops most of it in several calls.
fn body_len(path: &str) -> Option<usize> {
    match path {
        "/small.css" => Some(5),
        "/big.png" => Some(3_000_000),
        "/empty.js" => Some(0),
        _ => None,
    }
}

#[derive(Default)]
struct Seen {
    paths: BTreeMap<String, u64>,
    sent: u64,
}

/// A keep-alive server answering each listed path with its body (404 otherwise).
fn start() -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let state = seen.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let state = state.clone();
            thread::spawn(move || serve(conn, &state));
        }
    });
    (url, seen)
}

fn serve(mut conn: TcpStream, seen: &Mutex<Seen>) {
    let big = vec![b'x'; 3_000_000];
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let path = head.split(' ').nth(1).unwrap_or("").to_string();
            let reply = match body_len(&path) {
                Some(n) => {
                    let mut r =
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                    r.extend_from_slice(&big[..n]);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
            };
            {
                let mut s = seen.lock().unwrap();
                *s.paths.entry(path).or_default() += 1;
                s.sent += reply.len() as u64;
            }
            if conn.write_all(&reply).is_err() {
                return;
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn list_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("fibra-bench-{name}-{}", std::process::id()));
    std::fs::write(&path, "/small.css\n/big.png\n\n/empty.js\n").unwrap();
    path
}

fn run(extra: &[&str], name: &str) {
    let (url, seen) = start();
    let list = list_file(name);
    let list_arg = list.display().to_string();
    let mut args = vec!["-n", "300", "-c", "4", "-k", "--json", "--paths", &list_arg];
    args.extend_from_slice(extra);
    let (code, v) = bench(&args, &url);
    std::fs::remove_file(&list).unwrap();
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["requests"]["succeeded"], 300, "{v}");
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.paths.keys().collect::<Vec<_>>(),
        ["/big.png", "/empty.js", "/small.css"],
        "only listed paths, and every one of them: {:?}",
        seen.paths
    );
    assert_eq!(seen.paths.values().sum::<u64>(), 300);
    assert_eq!(
        v["traffic"]["received"].as_u64(),
        Some(seen.sent),
        "the client counts every byte the server sent: {v}"
    );
}

#[test]
fn paths_are_drawn_from_the_list_and_bodies_counted() {
    run(&[], "read");
}

#[test]
fn dropped_bodies_are_counted_the_same() {
    run(&["--drop-bodies", "--seed", "5"], "drop");
}
