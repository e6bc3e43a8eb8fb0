//! The end of an upstream's TLS session, both ways. An upstream that closes without
//! `close_notify` cuts a body delimited by the close: the client's copy must not look
//! complete (HTTP/1.1: no last chunk; HTTP/2: `RST_STREAM`) and the cut is logged; with
//! `close_notify` the same body arrives whole. The other way, the proxy sends `close_notify`
//! whenever it closes an upstream session: a pooled one evicted, and the pool at shutdown.

#[path = "../../fibra-http/tests/h2_util/mod.rs"]
mod h2_util;
mod proxy_tls_util;
mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::io::Write;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use fibra_http::{Request, Server};
use fibra_proxy::Proxy;
use proxy_tls_util::{raw_tls_upstream, read_to_end_of_session, send, End, TestPki};
use proxy_util::{front, read_head};
use util::{read_response, read_to_close, status_of};

/// Collects the log records of this test binary.
struct Collect(Mutex<Vec<String>>);

impl log::Log for Collect {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        if r.level() <= log::Level::Warn {
            self.0.lock().unwrap().push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

static LOG: Collect = Collect(Mutex::new(Vec::new()));

fn warnings() -> String {
    let _ = log::set_logger(&LOG);
    log::set_max_level(log::LevelFilter::Warn);
    LOG.0.lock().unwrap().join("\n")
}

/// An upstream answering every request with a body delimited by the close: `/clean` ends
/// the session with `close_notify`, anything else just closes the TCP connection.
fn close_delimited_upstream(pki: &TestPki) -> std::net::SocketAddr {
    raw_tls_upstream(pki, |mut s, _| {
        let Some(head) = read_head(&mut s) else {
            return;
        };
        let _ = send(
            &mut s,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n\
              the first part of the body;",
        );
        let _ = send(&mut s, b" and the rest");
        if head.starts_with("GET /clean ") {
            s.conn.send_close_notify();
            let _ = s.flush();
        }
        // Then the TCP end (FIN), and what the proxy still sends is read until it closes:
        // closing with unread bytes would send a reset, which can take the response the
        // proxy has not read yet with it (a 502 instead of the cut body under load).
        let _ = s.sock.shutdown(std::net::Shutdown::Write);
        let mut sink = [0u8; 1024];
        while matches!(std::io::Read::read(&mut s.sock, &mut sink), Ok(n) if n > 0) {}
    })
}

fn proxy(pki: &TestPki, up: std::net::SocketAddr) -> Proxy {
    Proxy::new()
        .upstream_ca(pki.path("ca.pem"))
        .unwrap()
        .route("/", &format!("https://localhost:{}", up.port()))
        .unwrap()
}

#[test]
fn a_close_delimited_body_without_close_notify_does_not_look_complete_over_http1() {
    let _ = warnings();
    let pki = TestPki::new("close-h1");
    let up = close_delimited_upstream(&pki);
    let front = front(proxy(&pki, up));
    // With close_notify: the whole body, chunked to the client and ended by its last chunk.
    let mut s = util::connect(front.addr);
    write!(s, "GET /clean HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut s, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"the first part of the body; and the rest");
    // Without: the connection closes before the last chunk.
    let mut s = util::connect(front.addr);
    write!(s, "GET /cut HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let raw = read_to_close(&mut s);
    assert!(raw.starts_with("HTTP/1.1 200 "), "{raw}");
    assert!(
        raw.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{raw}"
    );
    assert!(!raw.ends_with("0\r\n\r\n"), "no last chunk: {raw:?}");
    let logged = warnings();
    assert!(
        logged.contains("cut short") && logged.contains("without close_notify"),
        "logged: {logged}"
    );
}

#[test]
fn a_close_delimited_body_without_close_notify_is_reset_over_http2() {
    let _ = warnings();
    let pki = TestPki::new("close-h2");
    let up = close_delimited_upstream(&pki);
    let front = front(proxy(&pki, up));
    let rt = h2_util::runtime();
    rt.block_on(async {
        let mut client = h2_util::client(front.addr).await;
        let (status, _, body) =
            h2_util::exchange(&mut client, http::Method::GET, "/clean", None).await;
        assert_eq!(status, 200, "logged: {}", warnings());
        assert_eq!(body, b"the first part of the body; and the rest");
        // Without close_notify the stream is reset (before or after its head: the server may
        // hold a small head back to send it with the first DATA): it never ends cleanly.
        let req = http::Request::get("http://localhost/cut").body(()).unwrap();
        let mut send = client.clone().ready().await.unwrap();
        let (resp, _) = send.send_request(req, true).unwrap();
        let resp = tokio::time::timeout(h2_util::CLIENT_TIMEOUT, resp)
            .await
            .expect("response in time");
        let ended = match resp {
            Err(e) => Err(e),
            Ok(resp) => {
                assert_eq!(resp.status(), 200, "logged: {}", warnings());
                let mut recv = resp.into_body();
                loop {
                    match tokio::time::timeout(h2_util::CLIENT_TIMEOUT, recv.data())
                        .await
                        .expect("body in time")
                    {
                        Some(Ok(chunk)) => {
                            let _ = recv.flow_control().release_capacity(chunk.len());
                        }
                        Some(Err(e)) => break Err(e),
                        None => break Ok(()),
                    }
                }
            }
        };
        let e = ended.expect_err("the stream must not end cleanly");
        assert!(e.is_reset(), "reset: {e}");
    });
}

/// An upstream answering keep-alive requests with a length; each connection reports how
/// its session ended, with its number.
fn keep_alive_upstream(pki: &TestPki, ends: mpsc::Sender<(usize, End)>) -> std::net::SocketAddr {
    let ends = Mutex::new(ends);
    raw_tls_upstream(pki, move |mut s, n| {
        while read_head(&mut s).is_some() {
            if send(&mut s, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                return;
            }
        }
        // The head read ended the loop: read again to see how the session ended.
        let end = read_to_end_of_session(&mut s);
        ends.lock().unwrap().send((n, end)).unwrap();
    })
}

fn get_ok(front: std::net::SocketAddr, path: &str) {
    let (head, body) = util::get(&mut util::connect(front), path);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"ok");
}

#[test]
fn an_evicted_pooled_session_gets_close_notify() {
    let pki = TestPki::new("close-evict");
    let (tx, rx) = mpsc::channel();
    let up = keep_alive_upstream(&pki, tx);
    let front = front(proxy(&pki, up).idle_timeout(Duration::from_millis(1)));
    get_ok(front.addr, "/a");
    // Past the idle timeout: the next request closes the pooled session and opens another.
    std::thread::sleep(Duration::from_millis(100));
    get_ok(front.addr, "/b");
    assert_eq!(
        rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(),
        (0, End::CloseNotify)
    );
}

#[test]
fn the_pool_sends_close_notify_at_shutdown() {
    let pki = TestPki::new("close-shutdown");
    let (tx, rx) = mpsc::channel();
    let up = keep_alive_upstream(&pki, tx);
    let proxy = proxy(&pki, up);
    let handle = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(move |req: Request| proxy.respond(req))
        .unwrap();
    get_ok(handle.local_addr(), "/a");
    get_ok(handle.local_addr(), "/b");
    handle.shutdown(Duration::from_secs(1));
    handle.join();
    assert_eq!(
        rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(),
        (0, End::CloseNotify),
        "one pooled session, closed cleanly at shutdown"
    );
}
