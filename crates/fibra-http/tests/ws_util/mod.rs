//! Shared by the WebSocket test files: the echo loop their endpoints run, and client
//! sockets (tungstenite's client, or a hand-made handshake for raw frames) with generous
//! timeouts.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use fibra_http::ws;

/// Generous client-side bound so a broken server fails a test instead of hanging it.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Echoes text and binary messages until the peer closes or breaks the protocol (answered
/// with the right close code).
pub fn echo(mut socket: ws::WebSocket) {
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

/// A socket to `addr` with [`TIMEOUT`] on reads and writes.
pub fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    s
}

/// tungstenite's client, upgraded on `path`.
pub fn client(addr: SocketAddr, path: &str) -> tungstenite::WebSocket<TcpStream> {
    let (socket, resp) = tungstenite::client(format!("ws://{addr}{path}"), tcp(addr)).unwrap();
    assert_eq!(resp.status(), 101);
    socket
}

/// A hand-made handshake on `path`, its 101 head read (and its accept key checked): the
/// socket is ready for raw frames.
pub fn raw_handshake(addr: SocketAddr, path: &str) -> TcpStream {
    let mut s = tcp(addr);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
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

/// Writes one masked client frame (RFC 6455 §5.2).
pub fn send_frame(s: &mut impl Write, opcode: u8, payload: &[u8]) {
    let mut f = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n <= 0xffff => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    s.write_all(&f).unwrap();
}

/// Reads one unmasked server frame: its opcode and payload.
pub fn read_frame(s: &mut impl Read) -> (u8, Vec<u8>) {
    let mut h = [0u8; 2];
    s.read_exact(&mut h).unwrap();
    assert_eq!(h[0] & 0x80, 0x80, "a final frame");
    assert_eq!(h[1] & 0x80, 0, "server frames are not masked");
    let len = match h[1] & 0x7f {
        126 => {
            let mut l = [0u8; 2];
            s.read_exact(&mut l).unwrap();
            u16::from_be_bytes(l) as usize
        }
        127 => {
            let mut l = [0u8; 8];
            s.read_exact(&mut l).unwrap();
            u64::from_be_bytes(l) as usize
        }
        n => n as usize,
    };
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).unwrap();
    (h[0] & 0x0f, payload)
}

/// A conversation with an echo server over the raw WebSocket `s`: `text`, the binary message
/// `big` and 20 short texts, each echoed intact; then the client's close, answered with the
/// server's close frame (1000) and the end of the connection.
pub fn echo_conversation(mut s: TcpStream, text: &[u8], big: &[u8]) {
    send_frame(&mut s, 0x1, text);
    assert_eq!(read_frame(&mut s), (0x1, text.to_vec()));
    send_frame(&mut s, 0x2, big);
    let (op, echoed) = read_frame(&mut s);
    assert_eq!(op, 0x2);
    assert!(
        echoed == big,
        "the {} byte binary message came back intact",
        big.len()
    );
    for i in 0..20 {
        let text = format!("message {i}");
        send_frame(&mut s, 0x1, text.as_bytes());
        assert_eq!(read_frame(&mut s), (0x1, text.into_bytes()));
    }
    send_frame(&mut s, 0x8, &1000u16.to_be_bytes());
    let (op, payload) = read_frame(&mut s);
    assert_eq!(op, 0x8);
    assert_eq!(&payload[..2], &1000u16.to_be_bytes());
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "nothing after the close: {rest:?}");
}

/// Over tungstenite's client `c` to an echo server: 10 rounds of a text message and a binary
/// one of `binary_len` bytes, each echoed; then the client's close, until the connection
/// ends.
pub fn tungstenite_echo_then_close(c: &mut tungstenite::WebSocket<TcpStream>, binary_len: usize) {
    for i in 0..10 {
        c.send(tungstenite::Message::text(format!("t{i}"))).unwrap();
        assert_eq!(
            c.read().unwrap(),
            tungstenite::Message::text(format!("t{i}"))
        );
        c.send(tungstenite::Message::binary(vec![i as u8; binary_len]))
            .unwrap();
        assert_eq!(
            c.read().unwrap(),
            tungstenite::Message::binary(vec![i as u8; binary_len])
        );
    }
    c.close(None).unwrap();
    loop {
        match c.read() {
            Ok(tungstenite::Message::Close(_)) => {}
            Ok(m) => panic!("unexpected {m:?}"),
            Err(tungstenite::Error::ConnectionClosed) => break,
            Err(e) => panic!("{e}"),
        }
    }
}
