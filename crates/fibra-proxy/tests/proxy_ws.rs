//! WebSocket (and any `Upgrade`) through the reverse proxy: the upgrade request reaches the
//! upstream with `Upgrade` and `Connection: upgrade`, its `101` comes back, and bytes then go
//! both ways until one side closes; an upstream that refuses the upgrade is relayed as any
//! answer, and the client's connection goes on with HTTP.

mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;
#[path = "../../fibra-http/tests/ws_util/mod.rs"]
mod ws_util;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Mutex;

use fibra_http::{ws, Request, Response, Settings};
use fibra_proxy::Proxy;
use proxy_util::{echo_then_bye, field, front, pattern, raw_upstream, read_head, upgrade_raw};
use util::{read_response, status_of};

/// A fibra upstream: WebSocket echo on `/chat`, `plain PATH` on anything else.
fn ws_upstream() -> util::TestServer {
    util::start(Settings::default(), |req: Request| {
        if req.uri().path() == "/chat" {
            ws::upgrade(&req, ws::Config::default(), ws_util::echo)
        } else {
            Response::new(format!("plain {}", req.uri().path()).into())
        }
    })
}

fn proxy_to(up: SocketAddr) -> util::TestServer {
    front(
        Proxy::new()
            .route("/ws/", &format!("http://{up}/"))
            .unwrap(),
    )
}

#[test]
fn websocket_echo_through_the_proxy() {
    let up = ws_upstream();
    let front = proxy_to(up.addr);
    // The hand-made handshake checks the 101 and the accept key the upstream derived.
    let s = ws_util::raw_handshake(front.addr, "/ws/chat");
    // Close: the upstream answers with its close frame and closes; so does the tunnel.
    ws_util::echo_conversation(s, b"hello through the proxy", &pattern(300_000));
    // The front still proxies plain requests to the same upstream.
    let (head, body) = util::get(&mut util::connect(front.addr), "/ws/other");
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"plain /other");
}

#[test]
fn tungstenite_client_through_the_proxy() {
    let up = ws_upstream();
    let front = proxy_to(up.addr);
    let mut c = ws_util::client(front.addr, "/ws/chat");
    ws_util::tungstenite_echo_then_close(&mut c, 1000);
}

#[test]
fn upstream_refusing_the_upgrade_is_relayed_and_http_goes_on() {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let up = raw_upstream(move |mut s, _| {
        while let Some(head) = read_head(&mut s) {
            let refuse = field(&head, "upgrade").is_some();
            tx.lock().unwrap().send(head).unwrap();
            let answer: &[u8] = if refuse {
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 7\r\nX-Why: no\r\n\r\nrefused"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            };
            if s.write_all(answer).is_err() {
                return;
            }
        }
    });
    let front = proxy_to(up.addr);
    let mut s = util::connect(front.addr);
    write!(
        s,
        "GET /ws/chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let (head, body) = read_response(&mut s, false);
    assert_eq!(status_of(&head), 400, "{head}");
    assert_eq!(body, b"refused");
    assert!(
        head.contains("x-why: no") || head.contains("X-Why: no"),
        "{head}"
    );
    let seen = rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap();
    assert!(seen.starts_with("GET /chat HTTP/1.1\r\n"), "{seen}");
    assert_eq!(field(&seen, "upgrade"), Some("websocket"), "{seen}");
    assert_eq!(field(&seen, "connection"), Some("upgrade"), "{seen}");
    assert_eq!(
        field(&seen, "sec-websocket-key"),
        Some("dGhlIHNhbXBsZSBub25jZQ==")
    );
    // Not switched: the same client connection carries the next request.
    write!(s, "GET /ws/next HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut s, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"ok");
    let seen = rx.recv_timeout(util::CLIENT_TIMEOUT).unwrap();
    assert_eq!(field(&seen, "upgrade"), None, "{seen}");
}

#[test]
fn raw_tunnel_carries_early_bytes_and_half_closes() {
    // An upstream that switches to a made-up protocol: it sends bytes right behind its 101,
    // echoes what comes, and on the end of stream says goodbye and closes.
    let up = raw_upstream(|mut s, _| {
        let head = read_head(&mut s).unwrap();
        assert_eq!(field(&head, "upgrade"), Some("echo/1"), "{head}");
        s.write_all(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\
              X-Extra: kept\r\n\r\nearly;",
        )
        .unwrap();
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => s.write_all(&buf[..n]).unwrap(),
            }
        }
        s.write_all(b"bye").unwrap();
    });
    let front = proxy_to(up.addr);
    let (s, head) = upgrade_raw(front.addr);
    assert_eq!(field(&head, "connection"), Some("Upgrade"), "{head}");
    assert_eq!(field(&head, "x-extra"), Some("kept"), "{head}");
    echo_then_bye(s, 16);
}

#[test]
fn a_101_without_upgrade_asked_or_named_is_a_bad_gateway() {
    let up = raw_upstream(|mut s, _| {
        let head = read_head(&mut s).unwrap();
        let answer: &[u8] = if field(&head, "upgrade").is_some() {
            // Asked, but the 101 does not say to what.
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n"
        } else {
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
        };
        let _ = s.write_all(answer);
        proxy_util::wait_for_close(&mut s);
    });
    let front = proxy_to(up.addr);
    for req in [
        "GET /ws/a HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /ws/b HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    ] {
        let mut s = util::connect(front.addr);
        s.write_all(req.as_bytes()).unwrap();
        let (head, _) = read_response(&mut s, false);
        assert_eq!(status_of(&head), 502, "{req}: {head}");
    }
}
