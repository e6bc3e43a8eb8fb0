//! `fibra bench --ws`: WebSocket echo load. Each connection fiber connects, upgrades
//! (checking the `101` and its `Sec-WebSocket-Accept`), then sends one masked binary message
//! at a time and waits for its echo, which must come back byte for byte; a message's latency
//! runs from its write to the end of its echo. At the end a connection sends a close (1000)
//! and waits briefly for the server's.
//!
//! The message is framed and masked once per connection; per message a fiber does one
//! `write`, one `read` (usually), two clock reads and a compare: no allocation.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fibra::net::TcpStream;

use super::driver::{FinishGuard, Shared, CONNECT_BACKOFF};
use super::stats::{self, Problem};
use super::target::Target;

/// How long the closing handshake may take at the end.
const CLOSE_WAIT: Duration = Duration::from_millis(500);

/// What every connection of a `--ws` run sends: the upgrade request and the message.
#[derive(Debug)]
pub struct WsLoad {
    /// The opening handshake.
    handshake: Vec<u8>,
    /// The `Sec-WebSocket-Accept` the server must answer.
    accept: String,
    /// The message's payload (what must come back).
    payload: Vec<u8>,
}

impl WsLoad {
    /// The load for `target` with messages of `size` bytes.
    pub fn new(target: &Target, size: usize) -> WsLoad {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let handshake = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n",
            target.path, target.authority
        );
        WsLoad {
            handshake: handshake.into_bytes(),
            accept: tungstenite::handshake::derive_accept_key(key.as_bytes()),
            payload: (0..size).map(|i| (i % 251) as u8).collect(),
        }
    }

    /// The payload framed as a client must send it: FIN + binary, masked with `mask`.
    fn frame(&self, mask: [u8; 4]) -> Vec<u8> {
        let mut f = frame_head(0x82, self.payload.len(), true);
        f.extend_from_slice(&mask);
        f.extend(
            self.payload
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4]),
        );
        f
    }
}

/// A frame's first bytes: `first` (FIN, opcode), the mask bit and the length.
fn frame_head(first: u8, len: usize, masked: bool) -> Vec<u8> {
    let m = if masked { 0x80 } else { 0 };
    let mut h = vec![first];
    match len {
        0..=125 => h.push(m | len as u8),
        126..=0xffff => {
            h.push(m | 126);
            h.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            h.push(m | 127);
            h.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    h
}

/// Why a connection stopped.
struct Failed(Problem, String);

impl From<io::Error> for Failed {
    fn from(e: io::Error) -> Failed {
        let p = match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Problem::Timeout,
            _ => Problem::Read,
        };
        Failed(p, e.to_string())
    }
}

/// One connection: upgrade, then echo messages until the budget or the time is spent. A
/// connection that fails is reopened (the message lost counts as errored or failed).
pub(super) fn connection_fiber(shared: &Shared, load: &WsLoad, index: usize, _done: FinishGuard) {
    // A mask per connection (any value will do; it must not be predictable by a proxy in
    // real life, which does not matter here).
    let mask = (index as u32)
        .wrapping_mul(0x9e37_79b9)
        .wrapping_add(1)
        .to_be_bytes();
    let frame = load.frame(mask);
    let expect = frame_head(0x82, load.payload.len(), false);
    let mut buf = vec![0u8; expect.len() + load.payload.len()];
    let mut conn: Option<TcpStream> = None;
    loop {
        if shared.take(1) == 0 {
            break;
        }
        let c = match &mut conn {
            Some(c) => c,
            None => match open(shared.addr, shared.timeout, load) {
                Ok(c) => {
                    stats::with(|w| w.stats.connects += 1);
                    conn.insert(c)
                }
                Err(Failed(p, why)) => {
                    stats::with(|w| {
                        w.stats.problem(p, 1, || format!("connect: {why}"));
                        w.advance(1);
                    });
                    if shared.deadline.is_some() {
                        fibra::time::sleep(CONNECT_BACKOFF);
                    }
                    continue;
                }
            },
        };
        let sent = Instant::now();
        let result = c
            .write_all(&frame)
            .map_err(|e| Failed(Problem::Write, e.to_string()))
            .and_then(|()| echo(c, &mut buf, &expect, &load.payload));
        let now = Instant::now();
        stats::with(|w| {
            match &result {
                Ok(()) => {
                    w.stats.response(200, now - sent);
                    w.stats.bytes_written += frame.len() as u64;
                    w.stats.bytes_read += buf.len() as u64;
                }
                Err(Failed(p, why)) => w.stats.problem(*p, 1, || why.clone()),
            }
            w.advance(1);
        });
        if result.is_err() {
            conn = None;
        }
    }
    if let Some(c) = conn {
        close(c, mask);
    }
}

/// Connects and upgrades.
fn open(addr: SocketAddr, timeout: Option<Duration>, load: &WsLoad) -> Result<TcpStream, Failed> {
    let connect = |e: io::Error| Failed(Problem::Connect, e.to_string());
    let mut c = match timeout {
        Some(t) => TcpStream::connect_timeout(&addr, t),
        None => TcpStream::connect(addr),
    }
    .map_err(connect)?;
    c.set_nodelay(true).map_err(connect)?;
    c.set_read_timeout(timeout).map_err(connect)?;
    c.set_write_timeout(timeout).map_err(connect)?;
    c.write_all(&load.handshake).map_err(connect)?;
    // The response head, a byte at a time: the server sends nothing after it before our
    // first message, and this happens once per connection.
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 || c.read(&mut byte)? == 0 {
            return Err(Failed(
                Problem::Closed,
                "no 101 response to the upgrade".into(),
            ));
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let status = head.lines().next().unwrap_or("");
    let accepted = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("sec-websocket-accept") && v.trim() == load.accept
        })
    });
    if !status.starts_with("HTTP/1.1 101") || !accepted {
        return Err(Failed(
            Problem::Malformed,
            format!("the upgrade was refused: {status:?}"),
        ));
    }
    Ok(c)
}

/// Reads one echo into `buf` (its size) and checks it is `expect` (the head) + `payload`.
fn echo(c: &mut TcpStream, buf: &mut [u8], expect: &[u8], payload: &[u8]) -> Result<(), Failed> {
    let mut got = 0;
    while got < buf.len() {
        match c.read(&mut buf[got..]) {
            Ok(0) => return Err(Failed(Problem::Closed, "the server closed".into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
        // A close (or any other frame) instead of the echo.
        if got >= 2 && buf[..2] != expect[..2] {
            let what = match buf[0] & 0x0f {
                0x8 => "a close frame".to_string(),
                op => format!("a frame with opcode {op:#x}"),
            };
            return Err(Failed(
                Problem::Malformed,
                format!("{what} instead of the echo"),
            ));
        }
    }
    let (head, body) = buf.split_at(expect.len());
    if head != expect || body != payload {
        return Err(Failed(
            Problem::Malformed,
            "the echo differs from the message".into(),
        ));
    }
    Ok(())
}

/// Sends a close (1000) and waits briefly for the server's close and the end of the stream.
fn close(mut c: TcpStream, mask: [u8; 4]) {
    let mut frame = frame_head(0x88, 2, true);
    frame.extend_from_slice(&mask);
    frame.extend(1000u16.to_be_bytes().iter().zip(mask).map(|(b, m)| b ^ m));
    if c.set_read_timeout(Some(CLOSE_WAIT)).is_err() || c.write_all(&frame).is_err() {
        return;
    }
    let mut sink = [0u8; 512];
    while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_lengths_take_the_shortest_form() {
        assert_eq!(frame_head(0x82, 64, true), [0x82, 0x80 | 64]);
        assert_eq!(frame_head(0x82, 300, false), [0x82, 126, 1, 44]);
        assert_eq!(
            frame_head(0x82, 70_000, true),
            [0x82, 0x80 | 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]
        );
    }

    #[test]
    fn the_message_is_masked_and_the_handshake_names_the_target() {
        let t = Target::parse("http://127.0.0.1:9/ws?x").unwrap();
        let load = WsLoad::new(&t, 5);
        let f = load.frame([1, 2, 3, 4]);
        assert_eq!(&f[..6], &[0x82, 0x85, 1, 2, 3, 4]);
        let unmasked: Vec<u8> = f[6..]
            .iter()
            .zip([1, 2, 3, 4].iter().cycle())
            .map(|(b, m)| b ^ m)
            .collect();
        assert_eq!(unmasked, load.payload);
        let hs = String::from_utf8(load.handshake.clone()).unwrap();
        assert!(hs.starts_with("GET /ws?x HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"));
        assert_eq!(load.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }
}
