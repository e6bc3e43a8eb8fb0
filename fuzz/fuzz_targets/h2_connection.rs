//! Fuzzes HTTP/2 as the server speaks it: `fibra_http::http2::serve_connection_h2` over an
//! in-memory transport whose reads hand out the connection preface, then the fuzz input as
//! the client's frames (SETTINGS, HEADERS with HPACK blocks, CONTINUATION, DATA, RST_STREAM,
//! WINDOW_UPDATE, PING, GOAWAY, garbage). This drives fibra's own frame parser, stream state
//! machines and HPACK decoder through the server's owner fiber, with request streams in
//! fibers of their own running a handler that echoes bodies, answers small and large
//! responses, and streams. (`hpack_decode` fuzzes the HPACK decoder alone.)
//!
//! Input layout: `[read_size, wire...]`, `read_size` the bytes handed out per `read`
//! (1..=255; 0 counts as 1, 255 means "all at once").
//!
//! Checks besides "no panic, hang or leak": the server's output is a sequence of whole
//! frames (a 9-byte header, then exactly the payload length it declares, at most 2^24 - 1),
//! starting with its SETTINGS; and `serve_connection_h2` returns once the input has ended.
#![no_main]

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use fibra_http::{Request, Response, ResponseBody, Settings};
use libfuzzer_sys::fuzz_target;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[path = "common/mock.rs"]
mod mock;
use mock::Mock;

fn handler(mut req: Request) -> Response {
    match req.uri().path().as_bytes().get(1) {
        Some(b'e') => Response::new(
            req.body_mut()
                .read_to_vec(1 << 16)
                .unwrap_or_default()
                .into(),
        ),
        Some(b'b') => Response::new(vec![b'b'; 100_000].into()),
        Some(b's') => Response::new(ResponseBody::stream(|w| {
            for _ in 0..4 {
                w.write_all(&[b's'; 5000])?;
            }
            Ok(())
        })),
        Some(b'p') => panic!("handler panic on purpose"),
        _ => Response::new("hello".into()),
    }
}

thread_local! {
    static RUNTIME: fibra::Runtime = fibra::Runtime::builder().workers(1).build().unwrap();
}

fuzz_target!(|data: &[u8]| {
    let Some((&read_size, wire)) = data.split_first() else {
        return;
    };
    let read_size = match read_size {
        0 => 1,
        255 => usize::MAX,
        n => n as usize,
    };
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(wire);
    let settings = Arc::new(Settings {
        // Short, so a stream waiting for window the input never opens ends soon.
        write_timeout: Duration::from_millis(50),
        body_read_timeout: Duration::from_millis(50),
        idle_timeout: Duration::from_millis(50),
        ..Settings::default()
    });
    let written = RUNTIME.with(|rt| {
        rt.block_on(move || {
            let mock = Mock::new(&input, read_size);
            let out = mock.out.clone();
            fibra_http::http2::serve_connection_h2(mock, settings, Arc::new(handler));
            let written = out.lock().unwrap().clone();
            written
        })
    });
    check_frames(&written);
});

/// The output is whole frames, the first the server's SETTINGS.
fn check_frames(out: &[u8]) {
    let mut at = 0;
    let mut first = true;
    while at < out.len() {
        assert!(out.len() - at >= 9, "a partial frame header at {at}");
        let len = (out[at] as usize) << 16 | (out[at + 1] as usize) << 8 | out[at + 2] as usize;
        if first {
            assert_eq!(out[at + 3], 0x4, "the first frame is SETTINGS");
            first = false;
        }
        at += 9;
        assert!(out.len() - at >= len, "a frame payload cut short");
        at += len;
    }
}
