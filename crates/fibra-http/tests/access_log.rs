//! `Settings::access_log`: one line per request through the `log` facade (target
//! `fibra_http::access`, level info), captured here by a tiny test logger; nothing when off.
//! And `Server::access_log_sink`: the entries the connection loop makes, with the body bytes
//! it actually sent.

mod util;

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fibra_http::{Request, Response, Settings};
use util::*;

/// Every access-log record of this test process: (level, message).
static LINES: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.target() == "fibra_http::access"
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            LINES
                .lock()
                .unwrap()
                .push((r.level(), r.args().to_string()));
        }
    }
    fn flush(&self) {}
}

fn install() {
    static LOGGER: Capture = Capture;
    // Both tests call this; only the first call installs.
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Trace);
}

/// The captured lines from client `peer`, waiting (bounded) until there are at least `want`.
fn lines_from(peer: std::net::SocketAddr, want: usize) -> Vec<(log::Level, String)> {
    let prefix = format!("{peer} ");
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    loop {
        let got: Vec<_> = LINES
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, l)| l.starts_with(&prefix))
            .cloned()
            .collect();
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn handler(mut req: Request) -> Response {
    let _ = req.body_mut().read_to_vec(1 << 20);
    if req.uri().path() == "/missing" {
        let mut r = Response::new("no".into());
        *r.status_mut() = http::StatusCode::NOT_FOUND;
        return r;
    }
    Response::new("yes".into())
}

const REQUESTS: &[u8] = b"GET /a?q=1 HTTP/1.1\r\nHost: x\r\n\r\n\
POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\
HEAD /missing HTTP/1.0\r\n\r\n";

#[test]
fn one_line_per_request() {
    install();
    let srv = start(
        Settings {
            access_log: true,
            ..Settings::default()
        },
        handler,
    );
    let mut s = connect(srv.addr);
    let me = s.local_addr().unwrap();
    s.write_all(REQUESTS).unwrap();
    let out = read_to_close(&mut s);
    assert_eq!(count_responses(&out), 3, "{out}");
    let got = lines_from(me, 3);
    let texts: Vec<&str> = got.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        texts,
        [
            format!("{me} \"GET /a?q=1 HTTP/1.1\" 200"),
            format!("{me} \"POST /b HTTP/1.1\" 200"),
            format!("{me} \"HEAD /missing HTTP/1.0\" 404"),
        ]
    );
    assert!(got.iter().all(|(lvl, _)| *lvl == log::Level::Info));
}

#[test]
fn off_by_default() {
    install();
    let srv = start(Settings::default(), handler);
    let mut s = connect(srv.addr);
    let me = s.local_addr().unwrap();
    s.write_all(REQUESTS).unwrap();
    let out = read_to_close(&mut s);
    // All three were answered (the HTTP/1.0 one closes the connection), so any line would
    // have been logged by now.
    assert_eq!(count_responses(&out), 3, "{out}");
    srv.shutdown(Duration::from_secs(1));
    assert!(lines_from(me, 0).is_empty());
}

/// What a sink got: (peer, method, target, version, status, bytes).
type Got = Vec<(
    Option<std::net::SocketAddr>,
    String,
    String,
    String,
    u16,
    u64,
)>;

#[derive(Clone, Default)]
struct Collect(std::sync::Arc<Mutex<Got>>);

impl fibra_http::access_log::AccessLogSink for Collect {
    fn log(&self, e: &fibra_http::access_log::LogEntry<'_>) {
        self.0.lock().unwrap().push((
            e.peer,
            e.method.to_string(),
            e.target.to_string(),
            e.version.to_string(),
            e.status,
            e.bytes,
        ));
    }
}

#[test]
fn a_sink_gets_the_body_bytes_the_loop_sent() {
    let sink = Collect::default();
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .access_log_sink(sink.clone())
        .serve(|req: Request| match req.uri().path() {
            "/stream" => Response::new(fibra_http::ResponseBody::stream(|w| {
                w.write_all(b"hello ")?;
                w.write_all(b"world")
            })),
            "/none" => {
                let mut r = Response::new(().into());
                *r.status_mut() = http::StatusCode::NO_CONTENT;
                r
            }
            // Promises 10 bytes, sends 4: the connection closes after them.
            "/short" => Response::new(fibra_http::ResponseBody::stream_sized(10, |w| {
                w.write_all(b"four")
            })),
            _ => Response::new("yes".into()),
        })
        .unwrap();
    let mut s = connect(handle.local_addr());
    let me = s.local_addr().unwrap();
    s.write_all(
        b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n\
HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n\
GET /none HTTP/1.1\r\nHost: x\r\n\r\n\
GET /a?b=c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
GET /short HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .unwrap();
    let _ = read_to_close(&mut s);
    handle.shutdown(Duration::from_secs(5));
    let got = sink.0.lock().unwrap().clone();
    let row = |m: &str, t: &str, v: &str, status, bytes| {
        (
            Some(me),
            m.to_string(),
            t.to_string(),
            v.to_string(),
            status,
            bytes,
        )
    };
    assert_eq!(
        got,
        [
            row("GET", "/stream", "HTTP/1.1", 200, 11),
            row("HEAD", "/a", "HTTP/1.1", 200, 0),
            row("GET", "/none", "HTTP/1.1", 204, 0),
            row("GET", "/a?b=c", "HTTP/1.0", 200, 3),
            row("GET", "/short", "HTTP/1.1", 200, 4),
        ]
    );
}
