//! The access log also records what never reached the application — 400, 408, 413, 414,
//! 431, with the request line when one was received — and, for a response cut short by a
//! client that went away, only the body bytes that left (not the Content-Length).

mod util;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra_http::access_log::{AccessLogSink, LogEntry};
use fibra_http::{FileRange, Request, Response, ResponseBody, Server, ServerHandle};
use util::*;

/// (method, target, version, status, bytes) of each entry.
type Row = (String, String, String, u16, u64);

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Row>>>);

impl AccessLogSink for Collect {
    fn log(&self, e: &LogEntry<'_>) {
        self.0.lock().unwrap().push((
            e.method.to_string(),
            e.target.to_string(),
            e.version.to_string(),
            e.status,
            e.bytes,
        ));
    }
}

impl Collect {
    /// The entries, once there are `n` (waiting a bounded time).
    fn wait_for(&self, n: usize) -> Vec<Row> {
        let deadline = Instant::now() + CLIENT_TIMEOUT;
        loop {
            let got = self.0.lock().unwrap().clone();
            if got.len() >= n || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn row(m: &str, t: &str, v: &str, status: u16, bytes: u64) -> Row {
    (m.into(), t.into(), v.into(), status, bytes)
}

fn server(sink: &Collect) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(1)
        .header_timeout(Duration::from_millis(300))
        .max_body_bytes(10)
        .access_log_sink(sink.clone())
        .serve(|mut req: Request| {
            let _ = req.body_mut().read_to_vec(1 << 20);
            Response::new("ok".into())
        })
        .unwrap()
}

/// Sends `bytes` on a new connection and reads the answer to its end.
fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
    let mut s = connect(addr);
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn requests_refused_before_the_app_are_logged() {
    let sink = Collect::default();
    let h = server(&sink);
    let addr = h.local_addr();
    let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(9000));
    let big_head = format!(
        "GET /big HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "b".repeat(20_000)
    );
    let cases: Vec<(Vec<u8>, &str, Row)> = vec![
        (
            b"GET /x HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n".to_vec(),
            "400",
            row("GET", "/x", "HTTP/1.1", 400, 0),
        ),
        (
            b"\x16\x03\x01garbage\r\n\r\n".to_vec(),
            "400",
            row("-", "-", "-", 400, 0),
        ),
        (
            long.into_bytes(),
            "414",
            row("GET", "/", "HTTP/1.1", 414, 0),
        ),
        (
            big_head.into_bytes(),
            "431",
            row("GET", "/big", "HTTP/1.1", 431, 0),
        ),
        (
            b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world".to_vec(),
            "413",
            row("POST", "/up", "HTTP/1.1", 413, 0),
        ),
        // Half a head, then silence: 408 at the header deadline.
        (
            b"GET /slow HTTP/1.1\r\nHost:".to_vec(),
            "408",
            row("GET", "/slow", "HTTP/1.1", 408, 0),
        ),
    ];
    for (i, (bytes, status, want)) in cases.iter().enumerate() {
        let reply = exchange(addr, bytes);
        assert!(reply.starts_with(&format!("HTTP/1.1 {status} ")), "{reply}");
        // The body the server wrote after the head, which the entry must count.
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("").len() as u64;
        let got = sink.wait_for(i + 1);
        let mut want = want.clone();
        want.4 = body;
        if want.1 == "/" {
            // The 414's target is the whole long path.
            want.1 = format!("/{}", "a".repeat(9000));
        }
        assert_eq!(got.get(i), Some(&want), "case {i}: {got:?}");
        assert!(body > 0, "case {i}: an error text is sent");
    }
    h.shutdown(Duration::from_secs(1));
}

#[test]
fn a_response_cut_short_logs_the_bytes_that_left() {
    let dir = std::env::temp_dir().join(format!("fibra-cut-short-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.bin");
    let len: u64 = 64 << 20;
    std::fs::File::create(&path).unwrap().set_len(len).unwrap();
    let sink = Collect::default();
    let file = Arc::new(std::fs::File::open(&path).unwrap());
    let h = Server::bind("127.0.0.1:0")
        .workers(1)
        .access_log_sink(sink.clone())
        .serve(move |_req: Request| {
            Response::new(ResponseBody::file(FileRange::new(file.clone(), 0, len)))
        })
        .unwrap();
    let mut s = connect(h.local_addr());
    s.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut first = vec![0u8; 100_000];
    s.read_exact(&mut first).unwrap();
    drop(s);
    let got = sink.wait_for(1);
    h.shutdown(Duration::from_secs(1));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    let (m, t, _, status, bytes) = &got[0];
    assert_eq!((m.as_str(), t.as_str(), *status), ("GET", "/big", 200));
    assert!(
        *bytes < len,
        "logged {bytes} of {len} bytes, but the client left early"
    );
}
