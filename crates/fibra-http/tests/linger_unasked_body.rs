//! A client that keeps pushing a large body nobody asked for (`GET` with a chunked body, no
//! `Expect`) while it slowly reads a large response: the server closes after the response
//! (the body is more than it drains), and its lingering close must read on — as nginx does,
//! up to 30 s, until the client is silent for 5 s — rather than stop after a fixed number of
//! bytes. Stopping early closed the socket with unread input, which resets the connection
//! and destroys the part of the response still queued for the client: it got 0.9–1.5 MiB of
//! a 4 MiB answer.

mod util;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::Duration;

use fibra_http::{Request, Response, Settings};

const RESPONSE: usize = 4 << 20;
/// What the client pushes: far more than the server drains (256 KiB) or lingered over before
/// (1 MiB).
const PUSHED: usize = 24 << 20;

fn big(_req: Request) -> Response {
    Response::new(vec![b'r'; RESPONSE].into())
}

#[test]
fn the_whole_response_arrives_while_the_client_pushes_an_unasked_body() {
    let srv = util::start(Settings::default(), big);
    for _ in 0..2 {
        let s = util::connect(srv.addr);
        let mut writer = s.try_clone().unwrap();
        let pusher = std::thread::spawn(move || {
            let mut sent = 0;
            let chunk = [b'b'; 16 * 1024];
            let mut piece = format!("{:x}\r\n", chunk.len()).into_bytes();
            piece.extend_from_slice(&chunk);
            piece.extend_from_slice(b"\r\n");
            let head = b"GET /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
            if writer.write_all(head).is_err() {
                return sent;
            }
            while sent < PUSHED {
                if writer.write_all(&piece).is_err() {
                    return sent;
                }
                sent += chunk.len();
            }
            let _ = writer.write_all(b"0\r\n\r\n");
            let _ = writer.shutdown(Shutdown::Write);
            sent
        });
        // Read slowly, so that much of the response is still queued at the server when it
        // has written the last of it and closes.
        let mut reader = s;
        let mut got = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let end = loop {
            match reader.read(&mut buf) {
                Ok(0) => break None,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => break Some(e),
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let pushed = pusher.join().unwrap();
        let head_end = got
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a response head")
            + 4;
        let head = String::from_utf8_lossy(&got[..head_end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            head.contains(&format!("Content-Length: {RESPONSE}\r\n")),
            "{head}"
        );
        assert_eq!(
            got.len() - head_end,
            RESPONSE,
            "the whole body (then {end:?}; the client pushed {pushed} bytes)"
        );
        assert!(end.is_none(), "a clean end of stream, not {end:?}");
        assert_eq!(pushed, PUSHED, "the server read all the client pushed");
    }
}
