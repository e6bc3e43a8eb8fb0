//! Helpers for the reverse-proxy tests: hand-made upstreams on plain threads (they answer
//! with whatever bytes a test scripts, well formed or not), and a front server running a
//! `Proxy`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::{Request, Settings};
use fibra_proxy::Proxy;

use crate::util;

/// An upstream on plain threads: each connection runs the script on its own thread.
pub struct RawUpstream {
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
}

impl RawUpstream {
    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Starts an upstream; `script(stream, n)` serves its `n`th connection (from 0).
pub fn raw_upstream<F>(script: F) -> RawUpstream
where
    F: Fn(TcpStream, usize) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            stream.set_read_timeout(Some(util::CLIENT_TIMEOUT)).unwrap();
            stream
                .set_write_timeout(Some(util::CLIENT_TIMEOUT))
                .unwrap();
            let n = count.fetch_add(1, Ordering::SeqCst);
            let script = script.clone();
            std::thread::spawn(move || script(stream, n));
        }
    });
    RawUpstream { addr, accepted }
}

/// Reads one request head (through the empty line) from a socket or a TLS session; `None` at
/// end of stream.
pub fn read_head(s: &mut impl Read) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8(head).unwrap())
}

/// The value of field `name` in a head (case-insensitive name), if present.
pub fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Reads and discards until the peer closes.
pub fn wait_for_close(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

/// Sends `GET path` with `Connection: close` on a new connection and reads the whole exchange
/// until the front closes: the status and everything received.
pub fn get_closing(front: SocketAddr, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let all = util::send_and_read_to_close(front, req.as_bytes());
    (util::status_of(&all), all)
}

/// Answers every request on the connection with `response` until the peer closes.
pub fn answer_all(mut s: TcpStream, response: &'static [u8]) {
    while read_head(&mut s).is_some() {
        if s.write_all(response).is_err() {
            return;
        }
    }
}

/// A one-worker front server that proxies with `proxy` (no body size limit) and answers
/// `fallback` for the paths it does not route.
pub fn front(proxy: Proxy) -> util::TestServer {
    let settings = Settings {
        max_body_bytes: u64::MAX,
        ..Settings::default()
    };
    util::start(settings, move |req: Request| {
        proxy.handle(req).unwrap_or_else(|req| {
            fibra_http::Response::new(format!("fallback {}", req.uri().path()).into())
        })
    })
}

/// `len` bytes of a fixed pseudo-random pattern (so misplaced or lost bytes show).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

/// Asks the front at `addr` for the made-up `echo/1` protocol on `/ws/raw` and checks that
/// the `101` came back with it; returns the connection and the response head.
pub fn upgrade_raw(addr: SocketAddr) -> (TcpStream, String) {
    let mut s = util::connect(addr);
    write!(
        s,
        "GET /ws/raw HTTP/1.1\r\nHost: x\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n"
    )
    .unwrap();
    let head = read_head(&mut s).unwrap();
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert_eq!(field(&head, "upgrade"), Some("echo/1"), "{head}");
    (s, head)
}

/// Over a tunnel to an upstream that sent `early;` with its `101`, echoes what it reads and
/// says `bye` at the client's end of stream: sends `mib` MiB while reading, half-closes, and
/// checks that the early bytes, the data intact and `bye` came back. More than the sockets
/// on the way buffer (16 MiB) shows that the tunnel reads one side while the other is slow
/// to take what it writes.
pub fn echo_then_bye(mut s: TcpStream, mib: usize) {
    let mut early = [0u8; 6];
    s.read_exact(&mut early).unwrap();
    assert_eq!(&early, b"early;");
    let data = pattern(mib << 20);
    let writer = {
        let mut w = s.try_clone().unwrap();
        let data = data.clone();
        std::thread::spawn(move || {
            w.write_all(&data).unwrap();
            // The client's end of stream reaches the upstream, which answers and closes.
            w.shutdown(std::net::Shutdown::Write).unwrap();
        })
    };
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    writer.join().unwrap();
    assert_eq!(got.len(), data.len() + 3);
    assert!(got[..data.len()] == data[..], "{mib} MiB echoed intact");
    assert_eq!(&got[data.len()..], b"bye");
}

/// A short pause for a test to let the other side act (never a correctness bound).
pub fn pause() {
    std::thread::sleep(Duration::from_millis(50));
}
