//! WebSocket (and any `Upgrade`) through the reverse proxy to an `https://` upstream: the
//! upgrade reaches the upstream over TLS, its `101` comes back, and the tunnel then carries
//! bytes both ways through the upstream's TLS session: echoes, a 1 MiB message intact, a
//! close started by either side; a raw tunnel half-closes with `close_notify`.

mod proxy_tls_util;
mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;
#[path = "../../fibra-http/tests/ws_util/mod.rs"]
mod ws_util;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Mutex;

use fibra_http::tls::server_config_from_pem;
use fibra_http::{ws, Request, Response, Server, ServerHandle};
use fibra_proxy::Proxy;
use proxy_tls_util::{
    echo_to_end_of_session, raw_tls_upstream, read_to_end_of_session, End, TestPki,
};
use proxy_util::{echo_then_bye, field, front, pattern, read_head, upgrade_raw};
use util::{read_response, status_of};

/// A fibra TLS upstream: WebSocket echo on `/chat`; on `/bye` a WebSocket that closes after
/// the first message (the upstream starts the close); `plain PATH` on anything else.
fn wss_upstream(pki: &TestPki) -> ServerHandle {
    let config = server_config_from_pem(pki.path("cert.pem"), pki.path("key.pem")).unwrap();
    Server::bind("127.0.0.1:0")
        .workers(1)
        .tls(config)
        .serve(|req: Request| match req.uri().path() {
            "/chat" => ws::upgrade(&req, ws::Config::default(), ws_util::echo),
            "/bye" => ws::upgrade(&req, ws::Config::default(), |mut socket| {
                if socket.read().is_ok() {
                    let _ = socket.close(Some(ws::CloseFrame {
                        code: 1000.into(),
                        reason: "bye".into(),
                    }));
                    // Reads on until the client's close frame answers.
                    while socket.read().is_ok() {}
                }
            }),
            p => Response::new(format!("plain {p}").into()),
        })
        .unwrap()
}

/// A front proxying `/ws/` to `https://localhost:PORT/`, trusting `pki`'s CA.
fn proxy_to(pki: &TestPki, up: SocketAddr) -> util::TestServer {
    front(
        Proxy::new()
            .upstream_ca(pki.path("ca.pem"))
            .unwrap()
            .route("/ws/", &format!("https://localhost:{}/", up.port()))
            .unwrap(),
    )
}

#[test]
fn websocket_echo_through_a_tls_upstream() {
    let pki = TestPki::new("ws-echo");
    let up = wss_upstream(&pki);
    let front = proxy_to(&pki, up.local_addr());
    // The hand-made handshake checks the 101 and the accept key the upstream derived.
    let s = ws_util::raw_handshake(front.addr, "/ws/chat");
    // A 1 MiB message, and a close from the client: the upstream answers with its close
    // frame and closes; so does the tunnel.
    ws_util::echo_conversation(s, b"hello through TLS", &pattern(1 << 20));
    // The front still proxies plain requests to the same upstream.
    let mut s = util::connect(front.addr);
    write!(s, "GET /ws/other HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut s, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"plain /other");
    up.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn tungstenite_client_and_a_close_from_the_upstream() {
    let pki = TestPki::new("ws-tungstenite");
    let up = wss_upstream(&pki);
    let front = proxy_to(&pki, up.local_addr());
    let mut c = ws_util::client(front.addr, "/ws/chat");
    ws_util::tungstenite_echo_then_close(&mut c, 20_000);
    // The upstream closes first: its close frame comes through, tungstenite answers it, and
    // the connection ends.
    let mut c = ws_util::client(front.addr, "/ws/bye");
    c.send(tungstenite::Message::text("hi")).unwrap();
    match c.read().unwrap() {
        tungstenite::Message::Close(Some(frame)) => {
            assert_eq!(u16::from(frame.code), 1000);
            assert_eq!(frame.reason, "bye");
        }
        m => panic!("expected the upstream's close, got {m:?}"),
    }
    match c.read() {
        Err(tungstenite::Error::ConnectionClosed) => {}
        r => panic!("expected the end after the close, got {r:?}"),
    }
    up.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn raw_tunnel_over_tls_carries_early_bytes_and_half_closes_with_close_notify() {
    let pki = TestPki::new("ws-raw");
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    // An upstream that switches to a made-up protocol: bytes right behind its 101 (in the
    // same record), then an echo; at the client's end it says goodbye and closes cleanly.
    let up = raw_tls_upstream(&pki, move |mut s, _| {
        let head = read_head(&mut s).unwrap();
        assert_eq!(field(&head, "upgrade"), Some("echo/1"), "{head}");
        proxy_tls_util::send(
            &mut s,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\
              X-Extra: kept\r\n\r\nearly;",
        )
        .unwrap();
        let end = echo_to_end_of_session(&mut s);
        let _ = proxy_tls_util::send(&mut s, b"bye");
        s.conn.send_close_notify();
        let _ = s.flush();
        tx.lock().unwrap().send(end).unwrap();
    });
    let front = proxy_to(&pki, up);
    let (s, head) = upgrade_raw(front.addr);
    assert_eq!(field(&head, "x-extra"), Some("kept"), "{head}");
    // 16 MiB, more than the sockets on the way hold: the tunnel must go on taking in the
    // upstream's echo while the upstream is slow to take what it sends.
    echo_then_bye(s, 16);
    assert_eq!(
        rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(),
        End::CloseNotify,
        "the upstream saw the client's end as close_notify"
    );
}

#[test]
fn the_upstream_gets_close_notify_when_the_client_drops_the_tunnel() {
    let pki = TestPki::new("ws-drop");
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let up = raw_tls_upstream(&pki, move |mut s, _| {
        read_head(&mut s).unwrap();
        proxy_tls_util::send(
            &mut s,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n",
        )
        .unwrap();
        tx.lock()
            .unwrap()
            .send(read_to_end_of_session(&mut s))
            .unwrap();
    });
    let front = proxy_to(&pki, up);
    let (s, _) = upgrade_raw(front.addr);
    drop(s);
    assert_eq!(
        rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap(),
        End::CloseNotify
    );
}
