//! `ws::upgrade`: an echo endpoint driven by tungstenite's client over a std socket (text, a
//! 1 MiB binary message, ping, a clean close with 1000), and bad input from hand-made frames
//! and heads: a plain GET gets 426, an unmasked client frame and reserved bits close with
//! 1002, invalid UTF-8 in text with 1007, a message over the limit with 1009; the server keeps
//! serving.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use fibra_http::{ws, Request, Server, ServerHandle};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::Message;

const TIMEOUT: Duration = Duration::from_secs(20);
const LIMIT: usize = 2 << 20;

fn echo(mut socket: ws::WebSocket) {
    loop {
        match socket.read() {
            Ok(msg) if msg.is_text() || msg.is_binary() => {
                if socket.send(msg).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(e) => return ws::fail(&mut socket, &e),
        }
    }
}

fn server() -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(|req: Request| {
            let config = ws::WebSocketConfig::default()
                .max_message_size(Some(LIMIT))
                .max_frame_size(Some(LIMIT));
            ws::upgrade(&req, config, echo)
        })
        .expect("server starts")
}

fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    s
}

fn client(addr: SocketAddr) -> tungstenite::WebSocket<TcpStream> {
    let (socket, resp) = tungstenite::client(format!("ws://{addr}/ws"), tcp(addr)).unwrap();
    assert_eq!(resp.status(), 101);
    socket
}

#[test]
fn echoes_text_and_a_large_binary_answers_ping_and_closes_cleanly() {
    let handle = server();
    let mut c = client(handle.local_addr());
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

/// Reads the 101 head of a hand-made handshake.
fn raw_handshake(addr: SocketAddr) -> TcpStream {
    let mut s = tcp(addr);
    s.write_all(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1);
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
    s
}

/// Sends `frame` and returns the close code of the server's close frame.
fn close_code_after(addr: SocketAddr, frame: &[u8]) -> u16 {
    let mut s = raw_handshake(addr);
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
    let mut c = client(addr);
    c.send(Message::text("ok")).unwrap();
    assert_eq!(c.read().unwrap(), Message::text("ok"));
    c.close(None).unwrap();
    assert!(matches!(c.read(), Ok(Message::Close(_))));
    handle.shutdown(Duration::from_secs(5));
}
