//! A hand-made HTTP/3 client for the tests of the built binary: a QUIC connection from
//! fibra-quic, requests' frames and field sections written by hand (QPACK static-table
//! references and literals, no dynamic table), answers' frames read back.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use rustls::RootCertStore;

/// The address after `prefix` in `line`, up to the next `/` or the end.
pub fn addr_after(line: &str, prefix: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(prefix)? + prefix.len()..];
    rest.trim().trim_end_matches('/').parse().ok()
}

/// A QUIC varint at `pos` in `buf` (advancing `pos`), if it is all there.
pub fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *buf.get(*pos)?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(*pos..*pos + len)?;
    let v = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &b| (v << 8) | u64::from(b));
    *pos += len;
    Some(v)
}

/// A HEADERS frame for `method` (its QPACK static index: 17 GET, 20 POST) of `path` at
/// `https://localhost`, with `content-length: LEN` if `length` is given.
pub fn headers_frame(method: u8, path: &str, length: Option<usize>) -> Vec<u8> {
    // Required insert count 0, base 0; :method, :scheme https (23), :authority (name 0),
    // :path (name 1), content-length (name 4).
    let mut section = vec![0x00, 0x00, 0xc0 | method, 0xc0 | 23, 0x50, 9];
    section.extend_from_slice(b"localhost");
    section.extend_from_slice(&[0x51, path.len() as u8]);
    section.extend_from_slice(path.as_bytes());
    if let Some(n) = length {
        let n = n.to_string();
        section.extend_from_slice(&[0x54, n.len() as u8]);
        section.extend_from_slice(n.as_bytes());
    }
    let mut frame = vec![0x01, section.len() as u8];
    frame.extend_from_slice(&section);
    frame
}

/// A DATA frame of `body` (under 16 KiB).
pub fn data_frame(body: &[u8]) -> Vec<u8> {
    assert!(body.len() < 1 << 14);
    let mut frame = vec![0x00, 0x40 | (body.len() >> 8) as u8, body.len() as u8];
    frame.extend_from_slice(body);
    frame
}

/// Reads an answer to its end: its field section and body.
pub fn read_answer(recv: &mut fibra_quic::RecvStream) -> (Vec<u8>, Vec<u8>) {
    let mut all = Vec::new();
    recv.read_to_end(&mut all).unwrap();
    let mut pos = 0;
    let (mut head, mut body) = (Vec::new(), Vec::new());
    while pos < all.len() {
        let ty = varint(&all, &mut pos).expect("a frame type");
        let len = varint(&all, &mut pos).expect("a frame length") as usize;
        let payload = &all[pos..pos + len];
        match ty {
            0x01 => head = payload.to_vec(),
            0x00 => body.extend_from_slice(payload),
            other => panic!("unexpected frame type {other:#x}"),
        }
        pos += len;
    }
    (head, body)
}

/// Reads one frame (its type and payload) from `recv`; `None` at the stream's end.
pub fn read_frame(recv: &mut fibra_quic::RecvStream) -> Option<(u64, Vec<u8>)> {
    let mut read_varint = |first: Option<u8>| -> Option<u64> {
        let mut b = [0u8; 1];
        let first = match first {
            Some(f) => f,
            None => {
                recv.read_exact(&mut b).ok()?;
                b[0]
            }
        };
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for _ in 1..len {
            recv.read_exact(&mut b).unwrap();
            v = (v << 8) | u64::from(b[0]);
        }
        Some(v)
    };
    let ty = read_varint(None)?;
    let len = read_varint(None).expect("a frame length") as usize;
    let mut payload = vec![0u8; len];
    recv.read_exact(&mut payload).unwrap();
    Some((ty, payload))
}

/// A GET of `path` on a new request stream of `conn`; returns the answer's field section
/// and body.
pub fn get(conn: &fibra_quic::Connection, path: &str) -> (Vec<u8>, Vec<u8>) {
    let (mut send, mut recv) = conn.open_bi().unwrap();
    send.write_all(&headers_frame(17, path, None)).unwrap();
    send.finish().unwrap();
    read_answer(&mut recv)
}

/// `:status 200` as our encoder writes it first: the section prefix and static index 25.
pub const STATUS_200: [u8; 3] = [0x00, 0x00, 0xc0 | 25];

/// How a server's drain showed itself to a client: GOAWAY (with the stream id it names), or,
/// with nothing in flight, the connection closed (with this code) before GOAWAY was read.
#[derive(Debug, PartialEq)]
pub enum Drained {
    GoAway(u64),
    Closed(Option<u64>),
}

/// The id of a server's first GOAWAY in a graceful drain (RFC 9114 §5.2): the largest
/// request stream id, refusing nothing; the final GOAWAY follows.
const ANY_REQUEST: u64 = (1 << 62) - 4;

/// Waits for the server's final GOAWAY on its control stream (past the first, which names
/// [`ANY_REQUEST`]), or for the connection's close.
pub fn wait_goaway(conn: &fibra_quic::Connection) -> Drained {
    let closed = |e: std::io::Error| {
        Drained::Closed(fibra_quic::Error::of(&e).and_then(fibra_quic::Error::code))
    };
    loop {
        let mut uni = match conn.accept_uni() {
            Ok(uni) => uni,
            Err(e) => return closed(e),
        };
        let mut buf = Vec::new();
        let mut chunk = [0u8; 256];
        let n = match uni.read(&mut chunk) {
            Ok(n) => n,
            Err(e) => return closed(e),
        };
        buf.extend_from_slice(&chunk[..n]);
        if buf.first() != Some(&0x00) {
            continue; // a QPACK stream
        }
        let mut pos = 1;
        loop {
            let start = pos;
            let frame = (|| {
                let ty = varint(&buf, &mut pos)?;
                let len = varint(&buf, &mut pos)? as usize;
                let payload = buf.get(pos..pos + len)?;
                pos += len;
                Some((ty, payload.to_vec()))
            })();
            match frame {
                Some((0x07, payload)) => match varint(&payload, &mut 0).expect("GOAWAY's id") {
                    ANY_REQUEST => continue,
                    id => return Drained::GoAway(id),
                },
                Some(_) => continue,
                None => {
                    pos = start;
                    let n = match uni.read(&mut chunk) {
                        Ok(n) => n,
                        Err(e) => return closed(e),
                    };
                    assert!(n > 0, "the control stream ended");
                    buf.extend_from_slice(&chunk[..n]);
                }
            }
        }
    }
}

/// Opens the client's control stream with its (empty) SETTINGS; keep it open.
pub fn open_control(conn: &fibra_quic::Connection) -> fibra_quic::SendStream {
    let mut control = conn.open_uni().unwrap();
    control.write_all(&[0x00, 0x04, 0x00]).unwrap();
    control
}

/// Runs `f` as the root fiber of a one-worker fibra runtime on a thread of its own; fails
/// the test if it takes over 60 s.
pub fn in_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        let _ = tx.send(rt.block_on(f));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the HTTP/3 client done within 60 s")
}

/// Runs `f` with a QUIC connection to `udp` (trusting `der`) whose control stream is open,
/// on a fibra runtime of its own; fails the test if it takes over 60 s.
pub fn with_h3<T: Send + 'static>(
    der: rustls::pki_types::CertificateDer<'static>,
    udp: SocketAddr,
    f: impl FnOnce(&fibra_quic::Connection) -> T + Send + 'static,
) -> T {
    in_runtime(move || {
        let mut roots = RootCertStore::empty();
        roots.add(der).unwrap();
        let tls = fibra_quic::Config::client_tls(roots, &[b"h3"]).unwrap();
        let config = fibra_quic::Config::default().client(tls).unwrap();
        let socket = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = fibra_quic::Endpoint::client(socket).unwrap();
        let conn = client.connect(udp, "localhost", config).unwrap();
        let control = open_control(&conn);
        let got = f(&conn);
        drop(control);
        got
    })
}
