//! Shared by the HTTP/2 test files: an `h2` crate client on a current-thread tokio runtime
//! (a real client for the ordinary cases), and raw frames over a blocking socket (for the
//! attacks and bad input, where the test must control every byte).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderMap, Method, Request, StatusCode};

/// Generous client-side bound so a broken server fails a test instead of hanging it.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A current-thread tokio runtime for the client.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An HTTP/2 client connection with prior knowledge to `addr`; its connection task runs on
/// the runtime.
pub async fn client(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (send, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

/// One exchange: status, headers and the whole body.
pub async fn exchange(
    send: &mut SendRequest<Bytes>,
    method: Method,
    path: &str,
    body: Option<Bytes>,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let req = Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .body(())
        .unwrap();
    let mut send = send.clone().ready().await.unwrap();
    let (resp, mut stream) = send.send_request(req, body.is_none()).unwrap();
    if let Some(body) = body {
        send_all(&mut stream, body).await;
    }
    let resp = tokio::time::timeout(CLIENT_TIMEOUT, resp)
        .await
        .expect("response in time")
        .unwrap();
    let (parts, mut recv) = resp.into_parts();
    let mut out = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        let _ = recv.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    (parts.status, parts.headers, out)
}

/// Sends `body` within the server's windows and ends the stream.
pub async fn send_all(stream: &mut h2::SendStream<Bytes>, mut body: Bytes) {
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let cap = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .expect("capacity")
            .unwrap();
        let piece = body.split_to(cap.min(body.len()));
        stream.send_data(piece, body.is_empty()).unwrap();
    }
}

// ---- raw frames ----

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// One frame as read off the wire.
#[derive(Debug)]
pub struct Frame {
    pub ty: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The error code of a RST_STREAM or GOAWAY.
    pub fn error_code(&self) -> u32 {
        let at = if self.ty == GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
}

/// The bytes of one frame.
pub fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Connects, sends the preface and SETTINGS with `settings` (id, value pairs); the
/// server's SETTINGS are left for the reader.
pub fn raw_connect(addr: SocketAddr, settings: &[(u16, u32)]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let mut payload = Vec::new();
    for (id, value) in settings {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &payload));
    s.write_all(&out).unwrap();
    s
}

/// Reads one frame; `None` at the end of the stream (or a reset).
pub fn read_frame(s: &mut impl Read) -> Option<Frame> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head).ok()?;
    let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).ok()?;
    Some(Frame {
        ty: head[3],
        flags: head[4],
        stream: u32::from_be_bytes(head[5..9].try_into().unwrap()) & 0x7fff_ffff,
        payload,
    })
}

/// Reads frames until `want` says stop (returning that frame), answering nothing; `None` if
/// the connection ends first.
pub fn read_until(s: &mut impl Read, mut want: impl FnMut(&Frame) -> bool) -> Option<Frame> {
    while let Some(f) = read_frame(s) {
        if want(&f) {
            return Some(f);
        }
    }
    None
}

/// An HPACK integer with an `n`-bit prefix whose other bits are `first`.
pub fn hpack_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128 + 128) as u8);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header field as an HPACK literal without indexing (no Huffman coding).
pub fn hpack_literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x00);
    hpack_int(out, 0, 7, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_int(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// A header field as an HPACK literal *with* incremental indexing (it enters the dynamic
/// table).
pub fn hpack_indexed_literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x40);
    hpack_int(out, 0, 7, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_int(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// The header block of a request: the four pseudo-headers, then `extra`.
pub fn request_block(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    hpack_literal(&mut out, ":method", method.as_bytes());
    hpack_literal(&mut out, ":scheme", b"http");
    hpack_literal(&mut out, ":authority", b"localhost");
    hpack_literal(&mut out, ":path", path.as_bytes());
    for (n, v) in extra {
        hpack_literal(&mut out, n, v.as_bytes());
    }
    out
}

/// A HEADERS frame of a GET with END_STREAM | END_HEADERS.
pub fn get(stream: u32, path: &str) -> Vec<u8> {
    frame(
        HEADERS,
        END_STREAM | END_HEADERS,
        stream,
        &request_block("GET", path, &[]),
    )
}
