//! A handler that blocks does not hold up, or mix with, other connections' responses: the
//! connections of a worker share its stack and write buffer for parsing and composing, and
//! one that waits inside its handler keeps what it was lent while the others use their own.

mod util;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fibra::sync::Notify;
use fibra_http::{Response, Settings};
use util::*;

#[test]
fn others_are_answered_while_one_handler_waits() {
    let waiting = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(Notify::new());
    let (w, g) = (waiting.clone(), go.clone());
    let big = "w".repeat(10_000);
    let srv = start(
        Settings::default(),
        move |req: fibra_http::Request| match req.uri().path() {
            "/wait" => {
                w.fetch_add(1, Ordering::SeqCst);
                g.wait();
                Response::new(big.clone().into())
            }
            "/count" => Response::new(w.load(Ordering::SeqCst).to_string().into()),
            "/go" => {
                g.notify_one();
                Response::new("went".into())
            }
            p => Response::new(p.to_string().into()),
        },
    );
    let mut a = connect(srv.addr);
    a.write_all(b"GET /wait HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut b = connect(srv.addr);
    // Bounded wait until the first handler is blocked (one worker: b is served meanwhile).
    let mut blocked = false;
    for _ in 0..500 {
        b.write_all(b"GET /count HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let (head, body) = read_response(&mut b, false);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        if body == b"1" {
            blocked = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(blocked, "the /wait handler never started");
    // Other requests, some with bodies big enough to grow a write buffer, are answered.
    for i in 0..3 {
        b.write_all(format!("GET /other{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        let (_, body) = read_response(&mut b, false);
        assert_eq!(String::from_utf8(body).unwrap(), format!("/other{i}"));
    }
    b.write_all(b"GET /go HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (_, body) = read_response(&mut b, false);
    assert_eq!(body, b"went");
    // The waiting connection gets its response whole, then the one pipelined behind it.
    let (head, body) = read_response(&mut a, false);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.len(), 10_000);
    assert!(body.iter().all(|&c| c == b'w'));
    let (_, body) = read_response(&mut a, false);
    assert_eq!(body, b"/after");
}
