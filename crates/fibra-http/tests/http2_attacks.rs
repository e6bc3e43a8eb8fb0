//! HTTP/2 attacks and bad input, with raw frames: each is answered by the protocol's own
//! errors (RST_STREAM, GOAWAY, closing), holds the server to bounded work, and leaves other
//! connections served.

mod h2_util;
mod util;

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use fibra_http::{Request, Response, Settings};
use h2_util::*;

const PROTOCOL_ERROR: u32 = 0x1;
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;
const ENHANCE_YOUR_CALM: u32 = 0xb;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

fn app(mut req: Request) -> Response {
    match req.uri().path() {
        "/big" => Response::new(vec![1u8; 1 << 20].into()),
        "/echo" => Response::new(req.body_mut().read_to_vec(1 << 20).unwrap().into()),
        _ => Response::new("hello".into()),
    }
}

/// A GET on a fresh connection still answers: the server was not hurt.
fn still_serves(addr: SocketAddr) {
    let mut s = raw_connect(addr, &[]);
    s.write_all(&get(1, "/")).unwrap();
    let data = read_until(&mut s, |f| f.ty == DATA && f.stream == 1).expect("a response");
    assert_eq!(data.payload, b"hello");
}

/// Writes `bytes` from another thread (the test reads meanwhile); returns whether it all
/// went out before the server stopped reading or closed.
fn write_in_background(s: &std::net::TcpStream, bytes: Vec<u8>) -> std::thread::JoinHandle<bool> {
    let mut w = s.try_clone().unwrap();
    w.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    std::thread::spawn(move || w.write_all(&bytes).is_ok())
}

#[test]
fn rapid_reset_is_cut_off() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    // CVE-2023-44487: HEADERS then RST_STREAM, over and over.
    let mut flood = Vec::new();
    for i in 0..20_000u32 {
        let id = 2 * i + 1;
        flood.extend(get(id, "/"));
        flood.extend(frame(RST_STREAM, 0, id, &CANCEL.to_be_bytes()));
    }
    let writer = write_in_background(&s, flood);
    let goaway = read_until(&mut s, |f| f.ty == GOAWAY);
    let _ = writer.join();
    let goaway = goaway.expect("the flood ends in GOAWAY");
    assert_eq!(goaway.error_code(), ENHANCE_YOUR_CALM);
    still_serves(srv.addr);
}

#[test]
fn continuation_flood_is_cut_off() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    // CVE-2024-27316: HEADERS without END_HEADERS, then CONTINUATION frames forever (here
    // 64 MiB of them, far past any header limit).
    let mut first = Vec::new();
    hpack_literal(&mut first, ":method", b"GET");
    let mut flood = frame(HEADERS, END_STREAM, 1, &first);
    let mut block = Vec::new();
    while block.len() < 16_000 {
        hpack_literal(&mut block, "x-filler", &[b'a'; 100]);
    }
    let cont = frame(CONTINUATION, 0, 1, &block);
    while flood.len() < 64 << 20 {
        flood.extend_from_slice(&cont);
    }
    let writer = write_in_background(&s, flood);
    // The server ends the connection: a GOAWAY or just the close.
    let end = read_until(&mut s, |f| f.ty == GOAWAY);
    if let Some(goaway) = end {
        assert_ne!(goaway.error_code(), 0, "an error GOAWAY");
    }
    assert!(
        !writer.join().unwrap(),
        "the server stopped reading the flood"
    );
    still_serves(srv.addr);
}

#[test]
fn hpack_bomb_is_refused() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    // One 4 KB entry in the dynamic table, then a block referring to it 4,000 times: 16 MB
    // of header list from 4 KB of input.
    let mut block = request_block("GET", "/", &[]);
    hpack_indexed_literal(&mut block, "x-bomb", &[b'b'; 4000]);
    for _ in 0..4000 {
        block.push(0x80 | 62); // indexed: the newest dynamic entry
    }
    s.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
        .unwrap();
    // Refused: a reset of the stream, an error response (431), or the connection ends.
    let f = read_until(&mut s, |f| {
        f.stream == 1 && (f.ty == RST_STREAM || f.ty == HEADERS) || f.ty == GOAWAY
    });
    if let Some(f) = f {
        if f.ty == HEADERS {
            // An HPACK-encoded `:status 431` from the crate (static index 8..14 are 200..500;
            // 431 is a literal): anything but a 200.
            assert_ne!(f.payload.first(), Some(&0x88), "not a 200");
        }
    }
    still_serves(srv.addr);
}

/// 64 MiB of `frame` whose answers (PING ACKs, SETTINGS ACKs) are never read: the server's
/// writes block, so it stops reading, the flood cannot all be sent, and the write timeout
/// closes the connection; meanwhile another connection is served.
fn flood_meets_backpressure(unit: Vec<u8>) {
    let settings = Settings {
        write_timeout: Duration::from_secs(2),
        ..Settings::default()
    };
    let srv = util::start(settings, app);
    let s = raw_connect(srv.addr, &[]);
    let mut flood = Vec::with_capacity((64 << 20) + unit.len());
    while flood.len() < 64 << 20 {
        flood.extend_from_slice(&unit);
    }
    let writer = write_in_background(&s, flood);
    still_serves(srv.addr);
    assert!(
        !writer.join().unwrap(),
        "the server stopped reading the flood"
    );
}

#[test]
fn ping_flood_meets_backpressure() {
    flood_meets_backpressure(frame(PING, 0, 0, &[0u8; 8]));
}

#[test]
fn settings_flood_meets_backpressure() {
    flood_meets_backpressure(frame(SETTINGS, 0, 0, &[0, 0x3, 0, 0, 0, 100]));
}

#[test]
fn zero_window_stall_times_out_and_resets_the_stream() {
    let settings = Settings {
        write_timeout: Duration::from_secs(1),
        ..Settings::default()
    };
    let srv = util::start(settings, app);
    // A client that never opens its window.
    let mut s = raw_connect(srv.addr, &[(SETTINGS_INITIAL_WINDOW_SIZE, 0)]);
    s.write_all(&get(1, "/big")).unwrap();
    let reset = read_until(&mut s, |f| f.ty == RST_STREAM && f.stream == 1)
        .expect("the stalled stream is reset");
    assert_eq!(reset.error_code(), CANCEL);
    still_serves(srv.addr);
}

#[test]
fn streams_beyond_the_limit_are_refused() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    // Wait for the server's SETTINGS (its stream limit) and acknowledge them.
    read_until(&mut s, |f| f.ty == SETTINGS && f.flags & ACK == 0).unwrap();
    s.write_all(&frame(SETTINGS, ACK, 0, &[])).unwrap();
    let limit = fibra_http::http2::MAX_CONCURRENT_STREAMS;
    let extra = 20;
    let mut out = Vec::new();
    for i in 0..limit + extra {
        // Bodies never sent: every stream stays open.
        out.extend(frame(
            HEADERS,
            END_HEADERS,
            2 * i + 1,
            &request_block("POST", "/echo", &[]),
        ));
    }
    s.write_all(&out).unwrap();
    let mut refused = 0;
    while refused < extra {
        let f = read_until(&mut s, |f| f.ty == RST_STREAM || f.ty == GOAWAY).expect("refusals");
        assert_eq!(f.ty, RST_STREAM, "a stream error, not the connection's");
        assert_eq!(f.error_code(), REFUSED_STREAM);
        assert!(
            f.stream > 2 * (limit - 1) + 1,
            "only streams past the limit"
        );
        refused += 1;
    }
    still_serves(srv.addr);
}

#[test]
fn malformed_requests_get_protocol_errors() {
    let srv = util::start(Settings::default(), app);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "connection-specific header",
            request_block("GET", "/", &[("connection", "keep-alive")]),
        ),
        (
            "transfer-encoding",
            request_block("GET", "/", &[("transfer-encoding", "chunked")]),
        ),
        (
            "te other than trailers",
            request_block("GET", "/", &[("te", "gzip")]),
        ),
        ("unknown pseudo-header", {
            let mut b = request_block("GET", "/", &[]);
            hpack_literal(&mut b, ":bogus", b"x");
            b
        }),
        ("pseudo-header after a field", {
            let mut b = request_block("GET", "/", &[("x-a", "b")]);
            hpack_literal(&mut b, ":path", b"/again");
            b
        }),
        (
            "uppercase field name",
            request_block("GET", "/", &[("X-Upper", "b")]),
        ),
        ("missing :scheme", {
            let mut b = Vec::new();
            hpack_literal(&mut b, ":method", b"GET");
            hpack_literal(&mut b, ":path", b"/");
            b
        }),
        // (A request without `:path` is taken as `/` by the h2 crate: not tested here.)
    ];
    for (what, block) in cases {
        let mut s = raw_connect(srv.addr, &[]);
        s.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
            .unwrap();
        let f = read_until(&mut s, |f| {
            (f.ty == RST_STREAM && f.stream == 1) || f.ty == GOAWAY || f.ty == HEADERS
        })
        .unwrap_or_else(|| panic!("{what}: no answer"));
        assert!(
            (f.ty == RST_STREAM || f.ty == GOAWAY) && f.error_code() == PROTOCOL_ERROR,
            "{what}: {f:?}"
        );
    }
    still_serves(srv.addr);
}
