//! The reverse proxy streams bodies with backpressure, both ways: while the upstream does
//! not read, the client can send only about what the socket buffers on the way hold; while
//! the client does not read, the upstream can send only about as much; and a large upload
//! and a large download pass with the process's resident memory growing by far less than the
//! body (sampled from /proc/self/status throughout).
//!
//! One test, its cases in sequence: the memory figure is the whole process's.

mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use fibra_proxy::Proxy;
use proxy_util::{field, front, raw_upstream, read_head};
use util::{connect, read_response, status_of};

/// Far more than all the socket buffers between client, proxy and upstream hold (loopback
/// buffers autotune to a few MiB each); a proxy that buffered bodies would take it all.
const BIG: u64 = 96 << 20;
/// What may sit in buffers on the way while one side stalls.
const IN_FLIGHT_LIMIT: u64 = 48 << 20;

/// Writes `n` bytes of zeros; returns the bytes written (exactly, partial writes included)
/// when a write fails (e.g. it times out because nobody reads).
fn write_zeros(s: &mut TcpStream, n: u64) -> (u64, io::Result<()>) {
    let piece = [0u8; 64 * 1024];
    let mut done = 0;
    while done < n {
        let k = (n - done).min(piece.len() as u64) as usize;
        match s.write(&piece[..k]) {
            Ok(0) => return (done, Err(io::ErrorKind::WriteZero.into())),
            Ok(w) => done += w as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, Ok(()))
}

/// Reads and counts bytes until `n` have arrived or the stream ends.
fn drain(s: &mut impl Read, n: u64) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = 0;
    while got < n {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => got += k as u64,
        }
    }
    got
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

/// Samples the resident memory until stopped; the peak.
struct PeakRss {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    fn start() -> PeakRss {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(rss()));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                p.fetch_max(rss(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        PeakRss {
            stop,
            peak,
            thread: Some(thread),
        }
    }
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        self.peak.load(Ordering::SeqCst)
    }
}

#[test]
fn bodies_stream_with_backpressure_and_flat_memory() {
    // The upstream: `/hold` reads the head, waits for the go-ahead, then reads and counts the
    // body; `/sink` counts the body at once; `/source` sends BIG bytes (Content-Length) and
    // `/chunks` BIG bytes chunked, counting what its writes got out before one failed.
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let (count_tx, count_rx) = mpsc::channel::<u64>();
    let count_tx = Mutex::new(count_tx);
    let up = raw_upstream(move |mut s, _| {
        while let Some(head) = read_head(&mut s) {
            let path = head.split(' ').nth(1).unwrap().to_owned();
            let len: u64 = field(&head, "content-length").map_or(0, |v| v.parse().unwrap());
            match path.as_str() {
                "/hold" | "/sink" => {
                    if path == "/hold" {
                        go_rx.lock().unwrap().recv().unwrap();
                    }
                    let got = drain(&mut (&mut s).take(len), len);
                    count_tx.lock().unwrap().send(got).unwrap();
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone");
                }
                "/source" => {
                    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {BIG}\r\n\r\n");
                    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
                    let (sent, r) = write_zeros(&mut s, BIG);
                    count_tx.lock().unwrap().send(sent).unwrap();
                    if r.is_err() {
                        // Stalled: carry on once the client reads again.
                        s.set_write_timeout(Some(util::CLIENT_TIMEOUT)).unwrap();
                        let (rest, r) = write_zeros(&mut s, BIG - sent);
                        r.unwrap();
                        count_tx.lock().unwrap().send(sent + rest).unwrap();
                    }
                }
                "/chunks" => {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                    let piece = vec![7u8; 60_000];
                    let mut sent = 0;
                    while sent < BIG {
                        let k = (BIG - sent).min(piece.len() as u64) as usize;
                        write!(s, "{k:x}\r\n").unwrap();
                        s.write_all(&piece[..k]).unwrap();
                        s.write_all(b"\r\n").unwrap();
                        sent += k as u64;
                    }
                    s.write_all(b"0\r\n\r\n").unwrap();
                }
                _ => return,
            }
        }
    });
    let front = front(
        Proxy::new()
            .route("/", &format!("http://{}", up.addr))
            .unwrap(),
    );

    // 1. Upload against an upstream that does not read: the client stalls early.
    let mut c = connect(front.addr);
    write!(
        c,
        "POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: {BIG}\r\n\r\n"
    )
    .unwrap();
    c.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let (accepted, r) = write_zeros(&mut c, BIG);
    assert!(
        r.is_err(),
        "the whole upload went in while the upstream read nothing"
    );
    assert!(
        accepted < IN_FLIGHT_LIMIT,
        "{accepted} bytes taken while the upstream read nothing"
    );
    eprintln!("upload: {accepted} bytes taken while the upstream read nothing");
    go_tx.send(()).unwrap();
    c.set_write_timeout(Some(util::CLIENT_TIMEOUT)).unwrap();
    let (_, r) = write_zeros(&mut c, BIG - accepted);
    r.unwrap();
    assert_eq!(count_rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(), BIG);
    let (head, body) = read_response(&mut c, false);
    assert_eq!(
        (status_of(&head), body.as_slice()),
        (200, &b"done"[..]),
        "{head}"
    );

    // 2. Download to a client that does not read: the upstream stalls early.
    c.write_all(b"GET /source HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let stalled_at = count_rx.recv_timeout(util::CLIENT_TIMEOUT * 3).unwrap();
    assert!(
        stalled_at < IN_FLIGHT_LIMIT,
        "upstream sent {stalled_at} bytes to a client not reading"
    );
    eprintln!("download: the upstream got {stalled_at} bytes out to a client not reading");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        c.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(String::from_utf8_lossy(&head).contains(&format!("Content-Length: {BIG}\r\n")));
    assert_eq!(drain(&mut c, BIG), BIG);
    assert_eq!(count_rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(), BIG);

    // 3. Memory: a BIG upload (Content-Length) and a BIG chunked download through the proxy
    // while the peak resident size is sampled.
    let base = rss();
    let peak = PeakRss::start();
    write!(
        c,
        "POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: {BIG}\r\n\r\n"
    )
    .unwrap();
    write_zeros(&mut c, BIG).1.unwrap();
    assert_eq!(count_rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(), BIG);
    let (head, _) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 200, "{head}");
    c.write_all(b"GET /chunks HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let got = drain_chunked(&mut c);
    assert!(
        got > BIG,
        "{got} bytes of chunked framing and data, want more than {BIG}"
    );
    let grew = peak.finish().saturating_sub(base);
    eprintln!("memory: resident size peaked {grew} bytes above the start, {BIG} bytes each way");
    assert!(grew < MEMORY_LIMIT, "resident memory grew by {grew} bytes");
}

/// Growth of the resident size allowed while BIG bytes pass each way.
const MEMORY_LIMIT: u64 = 24 << 20;

/// Reads a chunked response without keeping it: the bytes after the head up to and
/// including the last chunk (the data here is never `0` or CR/LF, so the end is plain).
fn drain_chunked(c: &mut TcpStream) -> u64 {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        c.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert_eq!(status_of(&head), 200, "{head}");
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    let mut buf = vec![0u8; 64 * 1024];
    let (mut total, mut tail) = (0u64, Vec::new());
    loop {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "the connection ended inside the chunked body");
        total += n as u64;
        tail.extend_from_slice(&buf[..n]);
        let keep = tail.len().saturating_sub(7);
        tail.drain(..keep);
        if tail == b"\r\n0\r\n\r\n" {
            return total;
        }
    }
}
