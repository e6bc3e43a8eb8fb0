//! `ws::upgrade`: an echo endpoint driven by tungstenite's client over a std socket (text, a
//! 1 MiB binary message, ping, a clean close with 1000), subprotocol selection, and bad input
//! from hand-made frames and heads: a plain GET gets 426; an unmasked client frame, reserved
//! bits, a fragmented control frame and a close with an invalid code close with 1002, invalid
//! UTF-8 in text (also across fragments) with 1007, a frame or message over the limit with
//! 1009; a client that stops reading while the server sends holds the server's memory flat
//! and is closed at the write timeout; the server keeps serving.

mod ws_util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use fibra_http::{ws, Request, Server, ServerHandle};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::Message;
use ws_util::{client, echo, raw_handshake, tcp, TIMEOUT};

const LIMIT: usize = 2 << 20;
/// The server's write timeout: a client that stops reading is closed after it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

fn server() -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(1)
        .write_timeout(WRITE_TIMEOUT)
        .serve(|req: Request| {
            let frames = ws::default_frames()
                .max_message_size(Some(LIMIT))
                .max_frame_size(Some(LIMIT));
            // `/chat` speaks `chat.v2` if offered, else `chat.v1`; `/wrong` picks one nobody
            // offers.
            let protocol = match req.uri().path() {
                "/chat" => {
                    let offered: Vec<&str> = ws::protocols(&req).collect();
                    ["chat.v2", "chat.v1"]
                        .into_iter()
                        .find(|p| offered.contains(p))
                }
                "/wrong" => Some("nobody-offered-this"),
                _ => None,
            };
            let config = ws::Config::from(frames).protocol(protocol);
            ws::upgrade(&req, config, |mut socket| {
                // The protocol agreed, as the first message.
                if let Some(p) = socket.protocol() {
                    let p = p.to_owned();
                    if socket.send(Message::text(p)).is_err() {
                        return;
                    }
                }
                echo(socket)
            })
        })
        .expect("server starts")
}

#[test]
fn echoes_text_and_a_large_binary_answers_ping_and_closes_cleanly() {
    let handle = server();
    let mut c = client(handle.local_addr(), "/ws");
    c.send(Message::text("héllo")).unwrap();
    assert_eq!(c.read().unwrap(), Message::text("héllo"));
    let big: Vec<u8> = (0..(1 << 20)).map(|i| (i % 251) as u8).collect();
    c.send(Message::binary(big.clone())).unwrap();
    assert_eq!(c.read().unwrap(), Message::binary(big));
    c.send(Message::Ping(b"p".to_vec().into())).unwrap();
    assert_eq!(c.read().unwrap(), Message::Pong(b"p".to_vec().into()));
    c.close(None).unwrap();
    let closed = match c.read() {
        Ok(Message::Close(frame)) => frame,
        other => panic!("expected the server's close, got {other:?}"),
    };
    assert!(closed.is_none_or(|f| f.code == CloseCode::Normal));
    handle.shutdown(Duration::from_secs(5));
}

/// Sends `frame` and returns the close code of the server's close frame.
fn close_code_after(addr: SocketAddr, frame: &[u8]) -> u16 {
    let mut s = raw_handshake(addr, "/ws");
    s.write_all(frame).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    // An unmasked server frame: 0x88, length, then the code.
    assert!(
        out.len() >= 4 && out[0] == 0x88,
        "no close frame: {out:02x?}"
    );
    u16::from_be_bytes([out[2], out[3]])
}

/// A masked client frame (mask 0).
fn masked(first: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut f = vec![first, 0x80 | payload.len() as u8, 0, 0, 0, 0];
    f.extend_from_slice(payload);
    f
}

#[test]
fn bad_frames_close_with_the_right_code_and_the_server_goes_on() {
    let handle = server();
    let addr = handle.local_addr();
    // Unmasked text frame from a client: protocol error.
    assert_eq!(close_code_after(addr, &[0x81, 0x02, b'h', b'i']), 1002);
    // Reserved bit set.
    assert_eq!(close_code_after(addr, &masked(0xC1, b"hi")), 1002);
    // Invalid UTF-8 in a text message.
    assert_eq!(close_code_after(addr, &masked(0x81, &[0xff, 0xfe])), 1007);
    // A fragmented control frame (ping without FIN).
    assert_eq!(close_code_after(addr, &masked(0x09, b"p")), 1002);
    // A message over the limit (declared in a 64-bit length).
    let mut huge = vec![0x82, 0x80 | 127];
    huge.extend_from_slice(&((LIMIT as u64) + 1).to_be_bytes());
    huge.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(close_code_after(addr, &huge), 1009);
    // A 64-bit length with its most significant bit set (RFC 6455 §5.2: it must be 0): a
    // length no buffer could hold, refused as too big before anything is allocated.
    let mut overflow = vec![0x82, 0x80 | 127];
    overflow.extend_from_slice(&u64::MAX.to_be_bytes());
    overflow.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(close_code_after(addr, &overflow), 1009);
    // A single frame over the frame limit, in a message that is still under its limit.
    let mut long_frame = vec![0x02, 0x80 | 127];
    long_frame.extend_from_slice(&((LIMIT as u64) + 1).to_be_bytes());
    long_frame.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(close_code_after(addr, &long_frame), 1009);
    // Close frames with codes no endpoint may send: 1005 and 1006 are reserved for "none"
    // and "abnormal", 999 and 5000 are outside the ranges.
    for code in [999u16, 1005, 1006, 1015, 5000] {
        assert_eq!(
            close_code_after(addr, &masked(0x88, &code.to_be_bytes())),
            1002,
            "close with code {code}"
        );
    }
    // A close frame with a one-byte payload (a code is two bytes).
    assert_eq!(close_code_after(addr, &masked(0x88, &[3])), 1002);
    // Invalid UTF-8 split over fragments: the first fragment is fine, the second is not.
    let mut fragments = masked(0x01, "h\u{e9}".as_bytes());
    fragments.extend(masked(0x80, &[0xff]));
    assert_eq!(close_code_after(addr, &fragments), 1007);
    // A plain GET to the endpoint: 426 with the upgrade it wants.
    let mut s = tcp(addr);
    s.write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 426"), "{out}");
    assert!(
        out.to_ascii_lowercase().contains("upgrade: websocket"),
        "{out}"
    );
    // Still serving.
    let mut c = client(addr, "/ws");
    c.send(Message::text("ok")).unwrap();
    assert_eq!(c.read().unwrap(), Message::text("ok"));
    c.close(None).unwrap();
    assert!(matches!(c.read(), Ok(Message::Close(_))));
    handle.shutdown(Duration::from_secs(5));
}

fn offering(
    addr: SocketAddr,
    path: &str,
    offer: Option<&str>,
) -> tungstenite::WebSocket<TcpStream> {
    use tungstenite::client::IntoClientRequest;
    let mut req = format!("ws://{addr}{path}").into_client_request().unwrap();
    if let Some(offer) = offer {
        req.headers_mut()
            .insert("sec-websocket-protocol", offer.parse().unwrap());
    }
    let (socket, resp) = tungstenite::client(req, tcp(addr)).unwrap();
    assert_eq!(resp.status(), 101);
    let agreed = resp
        .headers()
        .get("sec-websocket-protocol")
        .map(|v| v.to_str().unwrap().to_owned());
    let mut socket = socket;
    if let Some(agreed) = agreed {
        // The server's handler saw the same protocol.
        assert_eq!(socket.read().unwrap(), Message::text(agreed));
    }
    socket
}

#[test]
fn the_handler_picks_a_subprotocol_from_the_clients_list_or_none() {
    let handle = server();
    let addr = handle.local_addr();
    let protocol = |offer: Option<&str>| {
        let mut c = offering(addr, "/chat", offer);
        c.send(Message::text("x")).unwrap();
        assert_eq!(c.read().unwrap(), Message::text("x"));
        c.close(None).unwrap();
        while c.read().is_ok() {}
    };
    // tungstenite's client checks that the server's answer is one it offered; `offering`
    // checks the handler saw the same.
    protocol(Some("chat.v1, chat.v2"));
    protocol(Some("chat.v2"));
    protocol(Some("chat.v1"));
    protocol(None);
    // (An offer the handler turns down gets no Sec-WebSocket-Protocol: tungstenite's client
    // treats that as a failed handshake, so that case is checked on the raw head below.)
    let resp = |offer: &str| {
        let mut s = tcp(addr);
        write!(
            s,
            "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
Sec-WebSocket-Protocol: {offer}\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(s.read(&mut b).unwrap(), 1);
            head.push(b[0]);
        }
        String::from_utf8(head).unwrap().to_ascii_lowercase()
    };
    // The client's order of preference is the handler's to weigh: this one takes v2 first.
    assert!(resp("chat.v1, chat.v2").contains("sec-websocket-protocol: chat.v2\r\n"));
    assert!(!resp("other, more").contains("sec-websocket-protocol"));
    // A protocol the client did not offer is the handler's mistake: 500, no upgrade.
    let mut s = tcp(addr);
    s.write_all(
        b"GET /wrong HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
Sec-WebSocket-Protocol: chat.v1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 500"), "{out}");
    handle.shutdown(Duration::from_secs(5));
}

#[test]
fn a_client_that_stops_reading_holds_memory_flat_and_is_closed_at_the_write_timeout() {
    let handle = server();
    let addr = handle.local_addr();
    let mut s = raw_handshake(addr, "/ws");
    s.set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    // 64 KiB binary messages, echoed by the server, never read back. The server blocks
    // writing the echo, so it stops reading; then our writes block too. What the server
    // holds is bounded by its socket buffers, tungstenite's write buffer and one message:
    // what we manage to send before our writes stall or fail stays within a few MiB.
    let payload = vec![7u8; 64 * 1024];
    let mut frame = vec![0x82, 0x80 | 127];
    frame.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(&payload);
    let mut sent = 0usize;
    loop {
        assert!(
            sent < 64 << 20,
            "the server took {sent} bytes without reading its echo"
        );
        match s.write_all(&frame) {
            Ok(()) => sent += frame.len(),
            Err(_) => break,
        }
    }
    // The server's write timeout ends the connection: the stream ends (or resets) and the
    // server holds no connection.
    let start = Instant::now();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => assert!(start.elapsed() < TIMEOUT, "the connection stays open"),
        }
    }
    while handle.connections() > 0 {
        assert!(
            start.elapsed() < TIMEOUT,
            "the server still holds the connection"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // And serves others.
    let mut c = client(addr, "/ws");
    c.send(Message::text("ok")).unwrap();
    assert_eq!(c.read().unwrap(), Message::text("ok"));
    handle.shutdown(Duration::from_secs(5));
}
