//! Each timeout, with short settings: header (408 for a partial head), idle (silent close),
//! body read (408).

mod util;

use std::io::Write;
use std::time::Duration;

use fibra_http::{Response, Settings};
use util::*;

fn short() -> Settings {
    Settings {
        header_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        ..Settings::default()
    }
}

#[test]
fn partial_head_gets_408() {
    let srv = start(short(), hello);
    let mut s = connect(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    let out = read_to_close(&mut s);
    assert!(out.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
}

#[test]
fn slowloris_trickle_still_hits_the_total_deadline() {
    let srv = start(short(), hello);
    let mut s = connect(srv.addr);
    // One byte every 50 ms never completes the head; each byte would reset a per-read timer,
    // but the header timeout is a total deadline. Bounded: 200 bytes at most.
    let mut got_408 = false;
    for b in b"GET / HTTP/1.1\r\nX-Slow: "
        .iter()
        .chain([b'a'; 176].iter())
    {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        let r = std::io::Read::read(&mut s, &mut buf);
        s.set_nonblocking(false).unwrap();
        if let Ok(n) = r {
            got_408 = n > 0 && buf.starts_with(b"HTTP/1.1 408");
            break;
        }
    }
    assert!(got_408, "the connection was never timed out");
}

#[test]
fn idle_connection_is_closed_silently() {
    let srv = start(short(), hello);
    let mut s = connect(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s, false).1, b"hello");
    let rest = read_to_close(&mut s);
    assert_eq!(rest, "");
}

#[test]
fn silent_new_connection_is_closed() {
    let srv = start(short(), hello);
    let mut s = connect(srv.addr);
    assert_eq!(read_to_close(&mut s), "");
}

#[test]
fn stalled_body_gets_408() {
    let srv = start(short(), |mut req: fibra_http::Request| {
        let r = req.body_mut().read_to_vec(100);
        Response::new(format!("{r:?}").into())
    });
    let mut s = connect(srv.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        .unwrap();
    let out = read_to_close(&mut s);
    assert!(out.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{out}");
}
