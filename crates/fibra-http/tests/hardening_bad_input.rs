//! Table-driven RFC 9112 / RFC 9110 edge cases over a real socket: for each request, the
//! expected status and whether the connection survives it.
//!
//! Every case is sent in one write together with a follow-up request (`GET /next`). A case
//! that keeps the connection must answer both; a case that closes it must answer once, with
//! `Connection: close`, and the follow-up must never reach the handler (it could be a request
//! smuggled behind a malformed one). `tests/framing_rejections.rs` holds the original
//! rejection list; this table adds the accepted forms, request-target, version, header-field
//! and limit cases around it.

mod util;

use std::sync::{Arc, Mutex};

use fibra_http::{Request, Response, Settings};
use util::*;

/// What a case must do to the connection.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Conn {
    /// The follow-up request is answered too.
    Kept,
    /// Answered once with `Connection: close`, follow-up ignored.
    Closed,
}
use Conn::*;

const NEXT: &str = "GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// (request, expected status, connection fate)
const CASES: &[(&str, u16, Conn)] = &[
    // --- accepted forms (RFC 9112 §3.2, §2.2, RFC 9110 §7.2) ---
    ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET /a/b?c=d&e HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET //double HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET /%41%20b HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET http://x/abs HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET https://x:8443/abs?q HTTP/1.1\r\nHost: x:8443\r\n\r\n", 200, Kept),
    ("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", 200, Kept),
    ("FOO / HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost:\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: caf\u{e9}\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nX:   padded  \r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nX:\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\tb\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n", 200, Kept),
    ("\r\nGET /after-empty-line HTTP/1.1\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.0\r\n\r\n", 200, Closed),
    ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 200, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nConnection: Keep-Alive, CLOSE\r\n\r\n", 200, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0005\r\n\r\nhello", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n5;ext=\"v\"\r\nhello\r\n0\r\nT: 1\r\n\r\n", 200, Kept),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ,chunked\r\n\r\n0\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 200, Kept),
    // --- request line ---
    ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    (" GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400, Closed),
    ("GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET /a\0b HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET / http/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\rHost: x\r\n\r\n", 400, Closed),
    ("GET /\r\n\r\n", 400, Closed),
    ("/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET relative HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET ftp://x/a HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET http://u@x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("CONNECT /path HTTP/1.1\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505, Closed),
    // A later HTTP/1 minor version is read as 1.1 (RFC 9110 §2.5).
    ("GET / HTTP/1.2\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET / HTTP/1.9\r\nHost: x\r\n\r\n", 200, Kept),
    ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, Closed),
    ("GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505, Closed),
    ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, Closed),
    // --- header fields ---
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nX\t: b\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nX(: b\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nX\u{e9}: b\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\x1bb\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb: c\r\n\r\n", 400, Closed),
    // --- Host (RFC 9112 §3.2) ---
    ("GET / HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: u@x\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x/y\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nHost: x:port\r\n\r\n", 400, Closed),
    ("GET / HTTP/1.1\r\nX: y\r\n\r\n", 400, Closed),
    // --- framing (RFC 9112 §6, §7) beyond framing_rejections.rs ---
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\nhello", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5,\r\n\r\nhello", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo\r\n\r\n", 501, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;a\x01\r\nx\r\n0\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", 400, Closed),
    ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\r", 400, Closed),
];

fn limit_cases() -> Vec<(String, u16, Conn)> {
    let many: String = (0..9).map(|i| format!("H{i}: v\r\n")).collect();
    vec![
        (format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(300)), 414, Closed),
        (format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(250)), 200, Kept),
        (format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(1100)), 414, Closed),
        (format!("GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n", "b".repeat(1100)), 431, Closed),
        (format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n"), 431, Closed),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n".into(), 413, Closed),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n".to_string() + &"c".repeat(100), 200, Kept),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n".into(), 413, Closed),
        (format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n{}\r\n0\r\n\r\n", "c".repeat(101)), 413, Closed),
        (format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n{}\r\n0\r\n\r\n", "c".repeat(100)), 200, Kept),
    ]
}

/// Handler: records the path, reads the whole body (so chunk errors surface), answers
/// `ok <body length>`.
fn recording(seen: Arc<Mutex<Vec<String>>>) -> impl Fn(Request) -> Response + Send + Sync {
    move |mut req: Request| {
        seen.lock().unwrap().push(req.uri().path().to_string());
        match req.body_mut().read_to_vec(1 << 20) {
            Ok(b) => Response::new(format!("ok {}", b.len()).into()),
            Err(e) => Response::new(format!("handler saw: {e}").into()),
        }
    }
}

/// Runs one case; returns what went wrong, if anything.
fn check(
    addr: std::net::SocketAddr,
    seen: &Mutex<Vec<String>>,
    req: &str,
    want: u16,
    conn: Conn,
) -> Result<(), String> {
    seen.lock().unwrap().clear();
    let out = send_and_read_to_close(addr, format!("{req}{NEXT}").as_bytes());
    let next_ran = seen.lock().unwrap().iter().any(|p| p == "/next");
    let fail = |what: &str| Err(format!("{what}: request {req:?} got {out:?}"));
    if status_of(&out) != want {
        return fail(&format!("want status {want}"));
    }
    match conn {
        Kept if count_responses(&out) != 2 || !next_ran => {
            return fail("want the follow-up answered")
        }
        Closed if count_responses(&out) != 1 => return fail("want exactly one response"),
        Closed if !out.contains("Connection: close\r\n") => return fail("want Connection: close"),
        Closed if next_ran => return fail("follow-up request reached the handler"),
        _ => {}
    }
    if want != 200 && (out.contains("handler saw") || out.contains("ok ")) {
        return fail("a rejected request reached the handler");
    }
    Ok(())
}

/// Runs every case and reports all the rows that failed at once.
fn check_all<'a>(
    addr: std::net::SocketAddr,
    seen: &Mutex<Vec<String>>,
    cases: impl IntoIterator<Item = (&'a str, u16, Conn)>,
) {
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(req, want, conn)| check(addr, seen, req, want, conn).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn rfc_cases_status_and_connection_fate() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    // HTTP/1.1 alone: with HTTP/2 on (the default) the `PRI * HTTP/2.0` preface starts an
    // HTTP/2 connection instead of its 505 (see http2.rs).
    let settings = Settings {
        http2: false,
        ..Settings::default()
    };
    let srv = start(settings, recording(seen.clone()));
    check_all(srv.addr, &seen, CASES.iter().copied());
}

#[test]
fn limit_cases_status_and_connection_fate() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let srv = start(small_limits(), recording(seen.clone()));
    let cases = limit_cases();
    check_all(
        srv.addr,
        &seen,
        cases.iter().map(|(r, w, c)| (r.as_str(), *w, *c)),
    );
}

#[test]
fn accepted_request_bodies_reach_the_handler_intact() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let srv = start(Settings::default(), recording(seen));
    for req in [
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3;x=y\r\nllo\r\n0\r\n\r\n",
    ] {
        let out = send_and_read_to_close(srv.addr, format!("{req}{NEXT}").as_bytes());
        assert!(out.contains("\r\n\r\nok 5"), "request {req:?} got {out:?}");
    }
}
