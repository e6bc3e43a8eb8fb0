//! Shared helpers for the wire tests: start a server on 127.0.0.1:0, send raw bytes, read
//! raw responses back.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use fibra_http::prepared::{Prepared, PreparedBody, PreparedHead, PreparedRef};
use fibra_http::{Request, Response, Settings};

/// A response prepared once, as a file cache prepares its `200`s: `fields` and `body`, kept
/// behind one reference, to send with [`Response::prepared`].
pub fn prepared(fields: &[(&str, &str)], body: &'static [u8]) -> PreparedRef {
    struct Kept(PreparedHead, bytes::Bytes);
    impl Prepared for Kept {
        fn head(&self, _which: usize) -> &PreparedHead {
            &self.0
        }
        fn body(&self, _which: usize) -> PreparedBody<'_> {
            PreparedBody::Memory(&self.1)
        }
    }
    let mut map = http::HeaderMap::new();
    for (name, value) in fields {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let kept = Kept(PreparedHead::new(map), bytes::Bytes::from_static(body));
    PreparedRef::new(std::sync::Arc::new(kept), 0)
}

/// Generous client-side bound so a broken server fails a test instead of hanging it.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A running test server.
pub struct TestServer {
    pub addr: SocketAddr,
    handle: Option<fibra_http::ServerHandle>,
}

impl TestServer {
    /// Shuts the server down gracefully and waits for it.
    pub fn shutdown(mut self, grace: Duration) {
        if let Some(h) = self.handle.take() {
            h.shutdown(grace);
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown(Duration::from_secs(1));
        }
    }
}

/// Starts a one-worker server with `settings` and `handler`.
pub fn start<H>(settings: Settings, handler: H) -> TestServer
where
    H: Fn(Request) -> Response + Send + Sync + 'static,
{
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .settings(settings)
        .workers(1)
        .serve(handler)
        .expect("server starts");
    TestServer {
        addr: handle.local_addr(),
        handle: Some(handle),
    }
}

/// A handler answering `hello` to everything.
pub fn hello(_req: Request) -> Response {
    Response::new("hello".into())
}

/// Connects with client-side timeouts set.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

/// Sends `req` and reads until the server closes the connection.
pub fn send_and_read_to_close(addr: SocketAddr, req: &[u8]) -> String {
    let mut s = connect(addr);
    s.write_all(req).unwrap();
    read_to_close(&mut s)
}

/// Reads until EOF (or a reset, which ends the read too).
pub fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read failed: {e} after {:?}", String::from_utf8_lossy(&out)),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends a keep-alive `GET path` and reads its response: the head and the decoded body.
pub fn get(s: &mut TcpStream, path: &str) -> (String, Vec<u8>) {
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_response(s, false)
}

/// Reads exactly one response (Content-Length or chunked framed, or no body for
/// `bodiless`); returns the head (with the blank line) and the decoded body.
pub fn read_response(s: &mut TcpStream, bodiless: bool) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).expect("read head");
        assert!(
            n == 1,
            "EOF inside a response head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let lower = head.to_ascii_lowercase();
    let mut body = Vec::new();
    if bodiless {
        return (head, body);
    }
    if let Some(i) = lower.find("content-length: ") {
        let len: usize = lower[i + 16..]
            .split("\r\n")
            .next()
            .unwrap()
            .parse()
            .unwrap();
        body.resize(len, 0);
        s.read_exact(&mut body).expect("read body");
    } else if lower.contains("transfer-encoding: chunked") {
        loop {
            let line = read_line(s);
            let size = usize::from_str_radix(line.trim_end(), 16).expect("chunk size");
            let mut chunk = vec![0u8; size + 2];
            s.read_exact(&mut chunk).unwrap();
            assert!(chunk.ends_with(b"\r\n"));
            body.extend_from_slice(&chunk[..size]);
            if size == 0 {
                break;
            }
        }
    }
    (head, body)
}

fn read_line(s: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        s.read_exact(&mut byte).unwrap();
        line.push(byte[0]);
    }
    String::from_utf8(line).unwrap()
}

/// The status code of a response head.
pub fn status_of(head: &str) -> u16 {
    head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Number of responses (status lines) in a byte dump.
pub fn count_responses(dump: &str) -> usize {
    dump.matches("HTTP/1.1 ").count()
}

/// Number of open file descriptors of this process (`/proc/self/fd`), not counting the
/// directory handle used to list them.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count().saturating_sub(1))
        .unwrap_or(0)
}

/// Polls until at most `max` file descriptors are open, for up to `CLIENT_TIMEOUT`; returns
/// the last count seen (so the caller's assertion shows it).
pub fn wait_for_fds_at_most(max: usize) -> usize {
    let deadline = std::time::Instant::now() + CLIENT_TIMEOUT;
    loop {
        let n = open_fds();
        if n <= max || std::time::Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads until EOF; unlike [`read_to_close`], a connection reset is an error (returned
/// together with what had arrived).
pub fn read_to_close_strict(s: &mut TcpStream) -> Result<String, (std::io::Error, String)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(String::from_utf8_lossy(&out).into_owned()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return Err((e, String::from_utf8_lossy(&out).into_owned())),
        }
    }
}

impl TestServer {
    /// Number of connections the server has open (see `ServerHandle::connections`).
    pub fn connections(&self) -> usize {
        self.handle.as_ref().map_or(0, |h| h.connections())
    }
}

/// Polls `cond` until it holds or `CLIENT_TIMEOUT` passes; returns its last value.
pub fn wait_until(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + CLIENT_TIMEOUT;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Settings with small limits (1 KiB head, 256-byte target, 8 fields, 100-byte body), so
/// the limit tests stay small.
pub fn small_limits() -> Settings {
    Settings {
        max_head_bytes: 1024,
        max_target_bytes: 256,
        max_headers: 8,
        max_body_bytes: 100,
        ..Settings::default()
    }
}
