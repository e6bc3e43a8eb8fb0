//! The WebSocket extractor: an echo with the tungstenite client, the subprotocol chosen,
//! the rejections (axum's statuses and texts), HTTP/2's 501, and the server's shutdown
//! closing a socket with 1001.

mod raw_http;

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use fibra_web::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use fibra_web::http::Version;
use fibra_web::response::Response;
use fibra_web::routing::get;
use fibra_web::test::{TestClient, TestServer};
use fibra_web::Router;
use raw_http::Conn;
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::frame::coding::CloseCode;

fn echo(mut socket: WebSocket) {
    while let Ok(msg) = socket.read() {
        if (msg.is_text() || msg.is_binary()) && socket.send(msg).is_err() {
            break;
        }
    }
}

/// Says which subprotocol was agreed, then echoes.
fn tell_protocol(mut socket: WebSocket) {
    let agreed = socket.protocol().unwrap_or("none").to_owned();
    if socket.send(Message::text(agreed)).is_ok() {
        echo(socket);
    }
}

fn app() -> Router {
    Router::new()
        .route("/echo", get(|ws: WebSocketUpgrade| ws.on_upgrade(echo)))
        .route(
            "/chat",
            get(|ws: WebSocketUpgrade| -> Response {
                ws.protocols(["chat.v2", "chat.v1"])
                    .on_upgrade(tell_protocol)
            }),
        )
}

fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(raw_http::READ_TIMEOUT)).unwrap();
    s
}

#[test]
fn echoes_text_and_binary() {
    let server = TestServer::spawn(app()).unwrap();
    let (mut socket, resp) =
        tungstenite::client(format!("ws://{}/echo", server.addr()), tcp(server.addr())).unwrap();
    assert_eq!(resp.status(), 101);
    socket.send(Message::text("hello")).unwrap();
    assert_eq!(socket.read().unwrap(), Message::text("hello"));
    socket.send(Message::binary(vec![0u8, 1, 2])).unwrap();
    assert_eq!(socket.read().unwrap(), Message::binary(vec![0u8, 1, 2]));
    socket.close(None).unwrap();
    // The close handshake completes: the server answers the close.
    loop {
        match socket.read() {
            Ok(Message::Close(_)) => {}
            Ok(other) => panic!("unexpected {other:?}"),
            Err(tungstenite::Error::ConnectionClosed) => break,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn the_server_s_preferred_subprotocol_among_the_offered_is_chosen() {
    let server = TestServer::spawn(app()).unwrap();
    let mut req = format!("ws://{}/chat", server.addr())
        .into_client_request()
        .unwrap();
    req.headers_mut().insert(
        "sec-websocket-protocol",
        "chat.v1, chat.v2".parse().unwrap(),
    );
    let (mut socket, resp) = tungstenite::client(req, tcp(server.addr())).unwrap();
    assert_eq!(
        resp.headers().get("sec-websocket-protocol").unwrap(),
        "chat.v2"
    );
    assert_eq!(socket.read().unwrap(), Message::text("chat.v2"));
    socket.send(Message::text("hi")).unwrap();
    assert_eq!(socket.read().unwrap(), Message::text("hi"));
}

#[test]
fn no_subprotocol_when_none_offered_is_known() {
    // (tungstenite's client refuses an answer without the protocol it asked for: raw bytes.)
    let server = TestServer::spawn(app()).unwrap();
    let mut c = Conn::open(server.addr());
    c.get(
        "/chat",
        &[
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Protocol", "other"),
        ],
    );
    let head = c.head();
    assert_eq!(head.status, 101, "{head:?}");
    assert_eq!(
        head.header("sec-websocket-accept"),
        Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    );
    assert_eq!(head.header("sec-websocket-protocol"), None);
}

const HANDSHAKE: [(&str, &str); 4] = [
    ("connection", "upgrade"),
    ("upgrade", "websocket"),
    ("sec-websocket-version", "13"),
    ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
];

/// The status and text a request to `/echo` gets with the handshake's fields but `leave`
/// and with `extra`.
fn refused(
    client: &TestClient,
    version: Version,
    leave: &str,
    extra: &[(&str, &str)],
) -> (u16, String) {
    let mut req = client.get("/echo").version(version);
    for (k, v) in HANDSHAKE.iter().filter(|(k, _)| *k != leave) {
        if !extra.iter().any(|(e, _)| e == k) {
            req = req.header(*k, *v);
        }
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let res = req.send();
    (res.status().as_u16(), res.text())
}

#[test]
fn bad_handshakes_are_refused_as_axum_does() {
    let client = TestClient::new(app());
    let v11 = Version::HTTP_11;
    assert_eq!(
        refused(&client, v11, "connection", &[]),
        (400, "Connection header did not include 'upgrade'".into())
    );
    assert_eq!(
        refused(&client, v11, "upgrade", &[]),
        (400, "`Upgrade` header did not include 'websocket'".into())
    );
    assert_eq!(
        refused(&client, v11, "sec-websocket-key", &[]),
        (400, "`Sec-WebSocket-Key` header missing".into())
    );
    assert_eq!(
        refused(&client, v11, "", &[("sec-websocket-version", "8")]),
        (
            400,
            "`Sec-WebSocket-Version` header did not include '13'".into()
        )
    );
    assert_eq!(
        refused(&client, Version::HTTP_10, "", &[]).0,
        426,
        "HTTP/1.0 cannot be upgraded"
    );
    // A plain GET: the first thing missing is `Connection: upgrade`.
    let res = client.get("/echo").send();
    assert_eq!(res.status(), 400);
    // Another method: the method router answers 405 before the extractor runs; a handler
    // for any method gets the extractor's 405.
    let any = TestClient::new(Router::new().route(
        "/ws",
        fibra_web::routing::any(|ws: WebSocketUpgrade| ws.on_upgrade(echo)),
    ));
    let mut req = any.post("/ws");
    for (k, v) in HANDSHAKE {
        req = req.header(k, v);
    }
    let res = req.send();
    assert_eq!(
        (res.status().as_u16(), res.text().as_str()),
        (405, "Request method must be `GET`")
    );
}

#[test]
fn http2_is_not_implemented() {
    let client = TestClient::new(app());
    let (status, text) = refused(&client, Version::HTTP_2, "", &[]);
    assert_eq!(status, 501);
    assert!(text.contains("HTTP/2 is not supported"), "{text}");
}

#[test]
fn the_server_s_shutdown_closes_with_1001() {
    let server = TestServer::spawn(app()).unwrap();
    let addr = server.addr();
    let (mut socket, _) = tungstenite::client(format!("ws://{addr}/echo"), tcp(addr)).unwrap();
    socket.send(Message::text("before")).unwrap();
    assert_eq!(socket.read().unwrap(), Message::text("before"));
    let stopper = std::thread::spawn(move || server.shutdown());
    let frame = match socket.read() {
        Ok(Message::Close(frame)) => frame,
        other => panic!("not a close frame: {other:?}"),
    };
    assert_eq!(frame.map(|f| f.code), Some(CloseCode::Away));
    // Our answer completes the handshake; the server then closes.
    let _ = socket.flush();
    drop(socket);
    stopper.join().unwrap();
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_err());
}
