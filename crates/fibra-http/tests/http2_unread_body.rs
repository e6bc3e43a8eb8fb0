//! HTTP/2 requests whose body the handler does not read: the response goes out at once
//! but its stream ends only after the request's (the body is drained), so frames the client
//! sends on the stream meanwhile are still checked; past the drain limit the stream ends
//! and the rest is refused with RST_STREAM(NO_ERROR); a client owed a `100 Continue` gets
//! the end at once. Raw frames, so the test sees every flag.

mod h2_util;
mod util;

use std::io::Write;
use std::net::TcpStream;

use fibra_http::{Request, Response, Settings};
use h2_util::*;

const NO_ERROR: u32 = 0x0;
const FLOW_CONTROL_ERROR: u32 = 0x3;

/// Answers without reading the body.
fn app(_req: Request) -> Response {
    Response::new("hello".into())
}

/// A POST whose body is still to come (HEADERS without END_STREAM) on stream `id`.
fn open_post(s: &mut TcpStream, id: u32, extra: &[(&str, &str)]) {
    let block = request_block("POST", "/", extra);
    s.write_all(&frame(HEADERS, END_HEADERS, id, &block))
        .unwrap();
}

/// Reads the response's DATA on stream `id` (skipping other frames) and returns it.
fn response_data(s: &mut TcpStream, id: u32) -> Frame {
    read_until(s, |f| f.ty == DATA && f.stream == id).expect("the response's DATA")
}

/// Settings whose body read timeout outlasts the client's: a server that waited for it
/// would fail the test instead of passing late.
fn patient() -> Settings {
    Settings {
        body_read_timeout: CLIENT_TIMEOUT * 6,
        ..Settings::default()
    }
}

#[test]
fn the_response_ends_after_the_unread_body() {
    let srv = util::start(patient(), app);
    let mut s = raw_connect(srv.addr, &[]);
    open_post(&mut s, 1, &[]);
    let data = response_data(&mut s, 1);
    assert_eq!(data.payload, b"hello");
    assert_eq!(
        data.flags & END_STREAM,
        0,
        "the stream stays open for the body"
    );
    s.write_all(&frame(DATA, END_STREAM, 1, b"unread body"))
        .unwrap();
    let end =
        read_until(&mut s, |f| f.stream == 1 && f.ty != WINDOW_UPDATE).expect("the stream's end");
    assert_eq!((end.ty, end.flags & END_STREAM), (DATA, END_STREAM));
    assert!(end.payload.is_empty(), "nothing more than the response");
    // The same connection serves on.
    s.write_all(&get(3, "/")).unwrap();
    assert_eq!(response_data(&mut s, 3).payload, b"hello");
}

#[test]
fn a_window_overflow_after_the_response_is_a_stream_error() {
    let srv = util::start(patient(), app);
    let mut s = raw_connect(srv.addr, &[]);
    open_post(&mut s, 1, &[]);
    response_data(&mut s, 1);
    // h2spec 6.9.1/3: two increments of 2^31-1 overflow the stream's send window.
    let update = frame(WINDOW_UPDATE, 0, 1, &0x7fff_ffffu32.to_be_bytes());
    s.write_all(&[update.clone(), update].concat()).unwrap();
    let reset = read_until(&mut s, |f| f.stream == 1).expect("a RST_STREAM");
    assert_eq!(reset.ty, RST_STREAM);
    assert_eq!(reset.error_code(), FLOW_CONTROL_ERROR);
    s.write_all(&get(3, "/")).unwrap();
    assert_eq!(response_data(&mut s, 3).payload, b"hello");
}

#[test]
fn past_the_drain_limit_the_stream_ends_and_the_rest_is_refused() {
    let settings = Settings {
        max_drain_bytes: 1000,
        ..patient()
    };
    let srv = util::start(settings, app);
    let mut s = raw_connect(srv.addr, &[]);
    open_post(&mut s, 1, &[]);
    response_data(&mut s, 1);
    s.write_all(&frame(DATA, 0, 1, &[b'x'; 2000])).unwrap();
    let end =
        read_until(&mut s, |f| f.stream == 1 && f.ty != WINDOW_UPDATE).expect("the stream's end");
    assert_eq!((end.ty, end.flags & END_STREAM), (DATA, END_STREAM));
    let reset =
        read_until(&mut s, |f| f.stream == 1 && f.ty != WINDOW_UPDATE).expect("the rest refused");
    assert_eq!(reset.ty, RST_STREAM);
    assert_eq!(reset.error_code(), NO_ERROR);
}

#[test]
fn a_client_owed_100_continue_gets_the_end_at_once() {
    let srv = util::start(patient(), app);
    let mut s = raw_connect(srv.addr, &[]);
    open_post(&mut s, 1, &[("expect", "100-continue")]);
    // The handler answered without reading, so no `100` was sent and the client sends no
    // body: the response must end without it.
    let end = read_until(&mut s, |f| f.stream == 1 && f.flags & END_STREAM != 0)
        .expect("the response ends without the body");
    assert_eq!(end.ty, DATA);
    assert_eq!(end.payload, b"hello");
}
