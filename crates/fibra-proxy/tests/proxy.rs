//! The reverse proxy (`fibra_proxy`) on the wire: routing (longest prefix, the prefix
//! replaced as nginx's `proxy_pass` does, a 301 for the slashless prefix, 400 for a dot
//! segment), the header fields both ways (hop-by-hop out, forwarding fields in), bodies both
//! ways (a 1 MiB POST echoed intact with `Content-Length` and chunked, `HEAD` keeping the
//! upstream's framing), keep-alive connections to the upstream (and the bound on idle ones),
//! and the one retry after an upstream closed an idle connection.

mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Mutex;

use fibra_http::{Request, Response, ResponseBody, Settings};
use fibra_proxy::Proxy;
use proxy_util::{answer_all, field, front, pattern, raw_upstream, read_head};
use util::{connect, read_response, status_of};

fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// A fibra upstream: `/echo` answers the body it got (buffered, `Content-Length`),
/// `/stream-echo` streams it back chunked as it reads it, anything else its name and path.
fn app_upstream(name: &'static str) -> util::TestServer {
    let settings = Settings {
        max_body_bytes: 64 << 20,
        ..Settings::default()
    };
    util::start(settings, move |mut req: Request| match req.uri().path() {
        "/echo" => Response::new(req.body_mut().read_to_vec(64 << 20).unwrap().into()),
        "/stream-echo" => {
            let mut body = req.into_body();
            Response::new(ResponseBody::stream(move |w| {
                std::io::copy(&mut body, w)?;
                Ok(())
            }))
        }
        _ => Response::new(format!("{name} {}", req.uri()).into()),
    })
}

fn get(front: SocketAddr, path: &str) -> (String, Vec<u8>) {
    let mut s = connect(front);
    write!(s, "GET {path} HTTP/1.1\r\nHost: example.com\r\n\r\n").unwrap();
    read_response(&mut s, false)
}

#[test]
fn forwards_with_the_prefix_replaced_and_forwarding_fields_set() {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let up = raw_upstream(move |mut s, _| {
        while let Some(head) = read_head(&mut s) {
            tx.lock().unwrap().send(head).unwrap();
            s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, X-Hop\r\n\
                  X-Hop: 1\r\nKeep-Alive: timeout=5\r\nServer: upstream\r\nDate: yesterday\r\n\
                  X-App: 1\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Type: text/x\r\n\r\nok",
            )
            .unwrap();
        }
    });
    let proxy = Proxy::new().route("/api/", &url(up.addr, "/")).unwrap();
    let front = front(proxy);
    let mut c = connect(front.addr);
    c.write_all(
        b"GET /api/users?id=1 HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Secret\r\n\
          X-Secret: s\r\nTE: trailers\r\nProxy-Authorization: Basic eA==\r\nUpgrade: foo\r\n\
          Keep-Alive: 300\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nAccept: */*\r\n\r\n",
    )
    .unwrap();
    let (head, body) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"ok");
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("x-app: 1\r\n"), "{head}");
    assert!(
        lower.contains("set-cookie: a=1\r\nset-cookie: b=2\r\n"),
        "{head}"
    );
    assert!(lower.contains("content-type: text/x\r\n"), "{head}");
    assert!(lower.contains("content-length: 2\r\n"), "{head}");
    for gone in [
        "x-hop",
        "keep-alive",
        "server: upstream",
        "yesterday",
        "connection",
    ] {
        assert!(!lower.contains(gone), "{gone} in {head}");
    }
    let up_head = rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap();
    assert!(
        up_head.starts_with("GET /users?id=1 HTTP/1.1\r\n"),
        "{up_head}"
    );
    assert_eq!(field(&up_head, "host"), Some("example.com"));
    assert_eq!(field(&up_head, "accept"), Some("*/*"));
    assert_eq!(field(&up_head, "x-forwarded-for"), Some("127.0.0.1"));
    assert_eq!(field(&up_head, "x-forwarded-proto"), Some("http"));
    assert_eq!(field(&up_head, "x-forwarded-host"), Some("example.com"));
    assert_eq!(
        field(&up_head, "forwarded"),
        Some("for=127.0.0.1;host=example.com;proto=http")
    );
    for gone in [
        "connection",
        "x-secret",
        "te",
        "proxy-authorization",
        "upgrade",
        "keep-alive",
    ] {
        assert_eq!(field(&up_head, gone), None, "{gone} in {up_head}");
    }
    // The client's connection stays open for the next request.
    c.write_all(b"GET /api/again HTTP/1.1\r\nHost: example.com\r\n\r\n")
        .unwrap();
    let (head, _) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 200, "{head}");
    let up_head = rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap();
    assert!(up_head.starts_with("GET /again HTTP/1.1\r\n"), "{up_head}");
}

#[test]
fn routes_by_longest_prefix_and_gives_other_requests_back() {
    let a = app_upstream("a");
    let b = app_upstream("b");
    let proxy = Proxy::new()
        .route("/app/", &url(a.addr, "/"))
        .unwrap()
        .route("/app/special/", &url(b.addr, ""))
        .unwrap()
        .route("/v1/", &url(a.addr, "/v2/"))
        .unwrap();
    let front = front(proxy);
    let body = |path| String::from_utf8(get(front.addr, path).1).unwrap();
    assert_eq!(body("/app/x?q=1"), "a /x?q=1");
    assert_eq!(body("/app/special/y"), "b /app/special/y");
    assert_eq!(body("/v1/items/7"), "a /v2/items/7");
    assert_eq!(body("/elsewhere"), "fallback /elsewhere");
    let (head, _) = get(front.addr, "/app?q=1");
    assert_eq!(status_of(&head), 301, "{head}");
    assert!(head.contains("Location: /app/?q=1\r\n"), "{head}");
    for bad in ["/app/../etc/passwd", "/app/%2e%2e/x", "/app/a/..%2fb"] {
        let (head, _) = get(front.addr, bad);
        assert_eq!(status_of(&head), 400, "{bad}: {head}");
    }
}

#[test]
fn echoes_a_one_mebibyte_post_intact() {
    let up = app_upstream("echo");
    let front = front(Proxy::new().route("/", &url(up.addr, "")).unwrap());
    let data = pattern(1 << 20);
    // Content-Length both ways.
    let mut c = connect(front.addr);
    write!(
        c,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        data.len()
    )
    .unwrap();
    c.write_all(&data).unwrap();
    let (head, body) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert!(
        head.contains(&format!("Content-Length: {}\r\n", data.len())),
        "{head}"
    );
    assert!(
        body == data,
        "the echoed body differs ({} bytes back)",
        body.len()
    );
    // Chunked both ways, on the same client connection, streamed as it is read.
    c.write_all(b"POST /stream-echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    for piece in data.chunks(100_000) {
        write!(c, "{:x}\r\n", piece.len()).unwrap();
        c.write_all(piece).unwrap();
        c.write_all(b"\r\n").unwrap();
    }
    c.write_all(b"0\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    assert!(
        body == data,
        "the chunked echo differs ({} bytes back)",
        body.len()
    );
    // And a HEAD keeps the upstream's length, with no body.
    c.write_all(b"HEAD /some/where HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, _) = read_response(&mut c, true);
    assert_eq!(status_of(&head), 200, "{head}");
    assert!(head.contains("Content-Length: 16\r\n"), "{head}"); // "echo /some/where"
                                                                // A HEAD the upstream answers as it would a chunked GET: chunked here too.
    c.write_all(b"HEAD /stream-echo HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, _) = read_response(&mut c, true);
    assert_eq!(status_of(&head), 200, "{head}");
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    c.write_all(b"GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut c, false).1, b"echo /after");
}

#[test]
fn reuses_upstream_connections() {
    let up = raw_upstream(|s, _| answer_all(s, b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nk"));
    let front = front(Proxy::new().route("/", &url(up.addr, "")).unwrap());
    for _ in 0..3 {
        let mut c = connect(front.addr);
        for _ in 0..10 {
            c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            assert_eq!(read_response(&mut c, false).1, b"k");
        }
    }
    assert_eq!(
        up.accepted(),
        1,
        "30 requests in a row should share one upstream connection"
    );
}

/// The upstream answers one request per connection and closes the connection on reading the
/// next one (as an upstream whose idle timeout fires just as the request arrives).
fn closes_on_second_request() -> proxy_util::RawUpstream {
    raw_upstream(|mut s, _| {
        if read_head(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst");
        }
        let _ = read_head(&mut s);
        // Dropped without an answer.
    })
}

#[test]
fn retries_an_idempotent_request_once_on_a_fresh_connection() {
    let up = closes_on_second_request();
    let front = front(Proxy::new().route("/", &url(up.addr, "")).unwrap());
    let mut c = connect(front.addr);
    c.write_all(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut c, false).1, b"first");
    c.write_all(b"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"first", "answered by the second connection");
    assert_eq!(up.accepted(), 2);
}

#[test]
fn does_not_retry_a_post() {
    let up = closes_on_second_request();
    let front = front(Proxy::new().route("/", &url(up.addr, "")).unwrap());
    let mut c = connect(front.addr);
    c.write_all(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut c, false).1, b"first");
    c.write_all(b"POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        .unwrap();
    let (head, _) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 502, "{head}");
    assert_eq!(up.accepted(), 1, "a POST is never sent twice");
}

#[test]
fn keeps_trusted_forwarding_fields() {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let up = raw_upstream(move |mut s, _| {
        if let Some(head) = read_head(&mut s) {
            tx.lock().unwrap().send(head).unwrap();
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
        }
    });
    let proxy = Proxy::new()
        .route("/", &url(up.addr, ""))
        .unwrap()
        .trust_forwarded(true)
        .forwarded_proto("https");
    let front = front(proxy);
    let mut c = connect(front.addr);
    c.write_all(
        b"GET / HTTP/1.1\r\nHost: inner\r\nX-Forwarded-For: 203.0.113.9\r\n\
          X-Forwarded-Host: outer\r\nForwarded: for=203.0.113.9\r\n\r\n",
    )
    .unwrap();
    let (head, _) = read_response(&mut c, true);
    assert_eq!(status_of(&head), 204, "{head}");
    let up_head = rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap();
    assert_eq!(
        field(&up_head, "x-forwarded-for"),
        Some("203.0.113.9, 127.0.0.1")
    );
    assert_eq!(field(&up_head, "x-forwarded-host"), Some("outer"));
    assert_eq!(field(&up_head, "x-forwarded-proto"), Some("https"));
    assert_eq!(
        field(&up_head, "forwarded"),
        Some("for=203.0.113.9, for=127.0.0.1;host=inner;proto=https")
    );
    let mut rest = Vec::new();
    c.set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    let _ = c.read_to_end(&mut rest);
    assert!(rest.is_empty(), "a 204 carries no body: {rest:?}");
}

/// A burst of responses returning more connections than `max_idle`: at most four times as
/// many stay idle, and once those over the bound have been idle a second, the next return
/// closes them, leaving `max_idle`.
#[test]
fn idle_connections_over_the_bound_are_closed_after_their_grace() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    const BURST: usize = 8;
    let barrier = Arc::new(Barrier::new(BURST));
    let open = Arc::new(AtomicUsize::new(0));
    let (b, o) = (barrier.clone(), open.clone());
    let up = raw_upstream(move |mut s, _| {
        o.fetch_add(1, Ordering::SeqCst);
        // The first requests of the burst are answered together, once all have arrived.
        if read_head(&mut s).is_some() {
            b.wait();
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nk");
            answer_all(s, b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nk");
        }
        o.fetch_sub(1, Ordering::SeqCst);
    });
    let front = front(
        Proxy::new()
            .route("/", &url(up.addr, ""))
            .unwrap()
            .max_idle(1),
    );
    let clients: Vec<_> = (0..BURST)
        .map(|_| {
            let addr = front.addr;
            std::thread::spawn(move || get(addr, "/").1)
        })
        .collect();
    for c in clients {
        assert_eq!(c.join().unwrap(), b"k");
    }
    assert_eq!(up.accepted(), BURST);
    // Four times the bound at most (fewer if a second passed meanwhile).
    assert!(util::wait_until(|| open.load(Ordering::SeqCst) <= 4));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(get(front.addr, "/").1, b"k");
    assert!(
        util::wait_until(|| open.load(Ordering::SeqCst) == 1),
        "{} upstream connections open, want max_idle = 1",
        open.load(Ordering::SeqCst)
    );
    assert_eq!(
        up.accepted(),
        BURST,
        "the last request reused a pooled connection"
    );
}

/// An upstream that answers before taking the whole body (a 413) and closes: the client gets
/// that answer, and the next request a connection of its own.
#[test]
fn an_early_answer_to_an_upload_is_forwarded() {
    let up = raw_upstream(|mut s, _| {
        if read_head(&mut s).is_some() {
            let _ = s
                .write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\n\r\ntoo big\n");
            proxy_util::pause();
        }
        // Closed with most of the body unread: the proxy's next write fails.
    });
    let front = front(Proxy::new().route("/", &url(up.addr, "")).unwrap());
    let data = pattern(8 << 20);
    let mut c = connect(front.addr);
    write!(
        c,
        "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        data.len()
    )
    .unwrap();
    // The front may stop reading the body once it has its answer: write from another thread.
    let mut w = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&data);
    });
    let (head, body) = read_response(&mut c, false);
    assert_eq!(status_of(&head), 413, "{head}");
    assert_eq!(body, b"too big\n");
    drop(c);
    writer.join().unwrap();
    // The next request gets a connection of its own.
    assert_eq!(get(front.addr, "/x").0.get(9..12), Some("413"));
    assert_eq!(up.accepted(), 2);
}
