//! The `on_error` hook: it sees handler panics (also inside a streaming body) and rejected
//! requests, with the client's address, and the server keeps serving. (Accept failures are
//! covered by `emfile.rs`.)

mod util;

use std::io::Write;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use fibra_http::{Request, Response, ResponseBody, ServerError, ServerErrorKind, ServerHandle};
use util::*;

/// What the hook saw, reduced to plain data.
#[derive(Debug, PartialEq)]
enum Seen {
    Panic(String),
    Rejected(u16),
    Accept,
}

fn start_with_hook() -> (
    ServerHandle,
    mpsc::Receiver<(Option<std::net::SocketAddr>, Seen)>,
) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .header_timeout(Duration::from_millis(300))
        .max_body_bytes(10)
        .on_error(move |e: &ServerError| {
            let seen = match e.kind() {
                ServerErrorKind::Panic(m) => Seen::Panic(m.clone()),
                ServerErrorKind::Protocol(p) => Seen::Rejected(p.status().as_u16()),
                ServerErrorKind::Accept(_) => Seen::Accept,
                _ => unreachable!("no other kinds exist yet"),
            };
            // Also exercise the accessors and Display.
            assert_eq!(
                e.status().map(|s| s.as_u16()),
                match &seen {
                    Seen::Rejected(s) => Some(*s),
                    _ => None,
                }
            );
            assert!(!e.to_string().is_empty());
            let _ = tx.lock().unwrap().send((e.peer(), seen));
        })
        .serve(|mut req: Request| match req.uri().path() {
            "/boom" => panic!("boom (expected by the test)"),
            "/stream-boom" => Response::new(ResponseBody::stream(|w| {
                w.write_all(b"partial")?;
                panic!("stream boom (expected by the test)");
            })),
            _ => {
                let body = req.body_mut().read_to_vec(1 << 20);
                Response::new(format!("ok {}", body.is_ok()).into())
            }
        })
        .expect("server starts");
    (handle, rx)
}

/// Sends `req` on a fresh connection, reads to close; returns the client's address and
/// the bytes received.
fn exchange(addr: std::net::SocketAddr, req: &[u8]) -> (std::net::SocketAddr, String) {
    let mut s = connect(addr);
    let me = s.local_addr().unwrap();
    s.write_all(req).unwrap();
    (me, read_to_close(&mut s))
}

#[test]
fn hook_sees_panics_and_rejections_with_peer() {
    let (srv, rx) = start_with_hook();
    let addr = srv.local_addr();
    let next = || rx.recv_timeout(CLIENT_TIMEOUT).expect("hook called");

    // A handler panic: 500 to the client, the message to the hook.
    let (me, out) = exchange(addr, b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 500 "), "{out}");
    assert_eq!(
        next(),
        (Some(me), Seen::Panic("boom (expected by the test)".into()))
    );

    // A panic inside a streaming body.
    let (me, out) = exchange(addr, b"GET /stream-boom HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 200 "), "{out}");
    assert_eq!(
        next(),
        (
            Some(me),
            Seen::Panic("stream boom (expected by the test)".into())
        )
    );

    // Malformed framing: 400.
    let (me, out) = exchange(
        addr,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello",
    );
    assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
    assert_eq!(next(), (Some(me), Seen::Rejected(400)));

    // Body over the limit, found while the handler reads a chunked body: 413.
    let (me, out) = exchange(
        addr,
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n01234567890123456789\r\n0\r\n\r\n",
    );
    assert!(out.starts_with("HTTP/1.1 413 "), "{out}");
    assert_eq!(next(), (Some(me), Seen::Rejected(413)));

    // A head that never completes: 408 at the header timeout.
    let (me, out) = exchange(addr, b"GET / HTTP/1.1\r\nHost: x\r\n");
    assert!(out.starts_with("HTTP/1.1 408 "), "{out}");
    assert_eq!(next(), (Some(me), Seen::Rejected(408)));

    // Good requests are not errors, and the server still serves.
    let (_, out) = exchange(
        addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(out.ends_with("\r\n\r\nok true"), "{out}");
    // An idle connection closed by the client is not an error either.
    drop(connect(addr));
    srv.shutdown(Duration::from_secs(1));
    let rest: Vec<_> = rx.try_iter().collect();
    assert!(rest.is_empty(), "unexpected reports: {rest:?}");
}

#[test]
fn error_display_and_accessors() {
    let e = ServerError::new(
        None,
        ServerErrorKind::Accept(std::io::Error::from_raw_os_error(libc::EMFILE)),
    );
    assert!(e.to_string().starts_with("accept failed: "), "{e}");
    assert_eq!(
        e.io_error().and_then(|e| e.raw_os_error()),
        Some(libc::EMFILE)
    );
    assert!(std::error::Error::source(&e).is_some());
    assert_eq!(e.panic_message(), None);
    let peer = "127.0.0.1:9".parse().unwrap();
    let e = ServerError::new(Some(peer), ServerErrorKind::Panic("oops".into()));
    assert_eq!(e.to_string(), "127.0.0.1:9: handler panicked: oops");
    assert_eq!(e.panic_message(), Some("oops"));
    assert_eq!(e.peer(), Some(peer));
}
