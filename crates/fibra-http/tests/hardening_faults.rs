//! Faults: clients that reset, half-close, stop reading or send bodies the server refuses,
//! and handlers that panic. After each, the server must keep serving and this process's
//! open-fd count (server in-process) must come back to where it was before the fault.
//!
//! The tests share the fd count, so they run one at a time (`SERIAL`). Waits are polls with
//! a generous bound; nothing asserts on timing.

mod util;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use fibra_http::{FileRange, Request, Response, ResponseBody, Settings};
use util::*;

static SERIAL: Mutex<()> = Mutex::new(());

/// Size of the big file: far more than loopback socket buffers hold.
const BIG: usize = 32 << 20;

/// A big file shared by the tests: created once and unlinked at once, so nothing is left
/// behind; each response sends a `dup` of it (a new fd, closed after the response).
fn big_file() -> &'static std::fs::File {
    static FILE: OnceLock<std::fs::File> = OnceLock::new();
    FILE.get_or_init(|| {
        let p = std::env::temp_dir().join(format!("fibra-faults-{}.bin", std::process::id()));
        std::fs::write(&p, vec![b'x'; BIG]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    })
}

/// Counts how many streaming bodies were dropped (their cleanup ran).
static STREAM_DROPS: AtomicUsize = AtomicUsize::new(0);

struct DropCounter;
impl Drop for DropCounter {
    fn drop(&mut self) {
        STREAM_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

fn handler(req: Request) -> Response {
    match req.uri().path() {
        "/big-file" => {
            let f = big_file().try_clone().unwrap();
            Response::new(ResponseBody::file(FileRange::new(f, 0, BIG as u64)))
        }
        "/big-stream" => {
            let guard = DropCounter;
            Response::new(ResponseBody::stream(move |w| {
                let _guard = guard;
                let block = [b's'; 16 * 1024];
                for _ in 0..(BIG / block.len()) {
                    w.write_all(&block)?;
                }
                Ok(())
            }))
        }
        "/big-bytes" => Response::new(vec![b'b'; BIG].into()),
        "/panic-before" => panic!("handler panicked before the head (expected by the test)"),
        "/panic-after" => Response::new(ResponseBody::stream(|w| {
            w.write_all(b"partial")?;
            w.flush()?;
            panic!("stream panicked after the head (expected by the test)");
        })),
        _ => Response::new("alive".into()),
    }
}

struct Fixture {
    srv: TestServer,
    baseline: usize,
    _serial: std::sync::MutexGuard<'static, ()>,
}

fn fixture(settings: Settings) -> Fixture {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    big_file();
    let srv = start(settings, handler);
    // One full round trip first, so anything the server opens lazily is open.
    assert_alive(srv.addr);
    assert!(
        wait_until(|| srv.connections() == 0),
        "warm-up connection not closed"
    );
    let baseline = open_fds();
    Fixture {
        srv,
        baseline,
        _serial: serial,
    }
}

impl Fixture {
    /// The server still answers, and every fd the fault opened is closed again.
    fn assert_recovered(&self) {
        assert_alive(self.srv.addr);
        let conns = wait_until(|| self.srv.connections() == 0);
        assert!(conns, "{} connections still open", self.srv.connections());
        let n = wait_for_fds_at_most(self.baseline);
        assert!(
            n <= self.baseline,
            "open fds: {n}, before the fault: {}",
            self.baseline
        );
    }
}

fn assert_alive(addr: SocketAddr) {
    let out = send_and_read_to_close(
        addr,
        b"GET /alive HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\nalive"), "{out}");
}

/// Reads until the end of the response head (and whatever body came with it).
fn read_head(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).expect("read head");
        assert!(
            n > 0,
            "EOF before the head: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    String::from_utf8_lossy(&got[..end + 4]).into_owned()
}

/// Closes with SO_LINGER 0: the kernel sends RST instead of FIN.
fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `s` owns a valid socket fd for the duration of the call, and `linger` is a
    // properly initialised `struct linger` whose size is passed alongside it.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
    drop(s);
}

#[test]
fn client_reset_mid_file_response() {
    let fx = fixture(Settings::default());
    for _ in 0..3 {
        let mut s = connect(fx.srv.addr);
        s.write_all(b"GET /big-file HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let head = read_head(&mut s);
        assert!(
            head.contains(&format!("Content-Length: {BIG}\r\n")),
            "{head}"
        );
        reset(s);
    }
    fx.assert_recovered();
}

#[test]
fn client_reset_mid_stream_runs_the_body_cleanup() {
    let fx = fixture(Settings::default());
    let drops_before = STREAM_DROPS.load(Ordering::SeqCst);
    for _ in 0..3 {
        let mut s = connect(fx.srv.addr);
        s.write_all(b"GET /big-stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let head = read_head(&mut s);
        assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
        reset(s);
    }
    fx.assert_recovered();
    assert_eq!(STREAM_DROPS.load(Ordering::SeqCst) - drops_before, 3);
}

#[test]
fn half_close_after_a_full_request_still_gets_the_response() {
    let fx = fixture(Settings::default());
    for req in [
        &b"GET /alive HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"GET /alive HTTP/1.1\r\nHost: x\r\n\r\nGET /alive HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /alive HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
    ] {
        let mut s = connect(fx.srv.addr);
        s.write_all(req).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let out = read_to_close_strict(&mut s).expect("no reset");
        let want = String::from_utf8_lossy(req).matches("HTTP/1.1\r\n").count();
        assert_eq!(count_responses(&out), want, "{out}");
        assert!(out.ends_with("\r\n\r\nalive"), "{out}");
    }
    fx.assert_recovered();
}

/// Sends `head` and `body_len` more bytes from another thread (then half-closes), while this
/// thread reads the answer; a reset that destroys the answer fails the test.
fn refused_with_unread_body(addr: SocketAddr, head: &str, body_len: usize) -> String {
    let mut s = connect(addr);
    let mut w = s.try_clone().unwrap();
    let head = head.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&head);
        let _ = w.write_all(&vec![b'u'; body_len]);
        let _ = w.shutdown(Shutdown::Write);
    });
    let out = read_to_close_strict(&mut s);
    writer.join().unwrap();
    match out {
        Ok(out) => out,
        Err((e, got)) => panic!("connection reset ({e}) under the response; got {got:?}"),
    }
}

#[test]
fn refusal_with_unread_body_arrives_without_a_reset() {
    let settings = Settings {
        max_body_bytes: 1000,
        ..Settings::default()
    };
    let fx = fixture(settings);
    for _ in 0..3 {
        let out = refused_with_unread_body(
            fx.srv.addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n",
            200_000,
        );
        assert!(out.starts_with("HTTP/1.1 413 "), "{out}");
        assert!(out.contains("Connection: close\r\n"), "{out}");
        let out = refused_with_unread_body(
            fx.srv.addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            200_000,
        );
        assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
        assert!(out.contains("Connection: close\r\n"), "{out}");
    }
    fx.assert_recovered();
}

#[test]
fn handler_panic_before_and_after_the_head() {
    let fx = fixture(Settings::default());
    for _ in 0..3 {
        let out = send_and_read_to_close(
            fx.srv.addr,
            b"GET /panic-before HTTP/1.1\r\nHost: x\r\n\r\nGET /alive HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 500 "), "{out}");
        assert_eq!(count_responses(&out), 1, "{out}");
        let out = send_and_read_to_close(
            fx.srv.addr,
            b"GET /panic-after HTTP/1.1\r\nHost: x\r\n\r\nGET /alive HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.contains("partial"), "{out}");
        assert!(
            !out.ends_with("0\r\n\r\n"),
            "a broken stream must not look complete: {out}"
        );
        assert_eq!(count_responses(&out), 1, "{out}");
    }
    fx.assert_recovered();
}

#[test]
fn write_timeout_frees_a_client_that_stops_reading() {
    let settings = Settings {
        write_timeout: Duration::from_millis(500),
        ..Settings::default()
    };
    let fx = fixture(settings);
    let drops_before = STREAM_DROPS.load(Ordering::SeqCst);
    let mut stalled = Vec::new();
    for path in ["/big-file", "/big-stream", "/big-bytes"] {
        let mut s = connect(fx.srv.addr);
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // Once the head is here the server is writing the body; then stop reading.
        read_head(&mut s);
        stalled.push(s);
    }
    // The clients never read: the server's side of each must be closed by the write
    // timeout while the client sockets are still open.
    let conns = wait_until(|| fx.srv.connections() == 0);
    assert!(conns, "{} connections still open", fx.srv.connections());
    let n = wait_for_fds_at_most(fx.baseline + stalled.len());
    assert!(
        n <= fx.baseline + stalled.len(),
        "open fds: {n}, baseline {} + {} stalled clients",
        fx.baseline,
        stalled.len()
    );
    assert_eq!(STREAM_DROPS.load(Ordering::SeqCst) - drops_before, 1);
    drop(stalled);
    fx.assert_recovered();
}
