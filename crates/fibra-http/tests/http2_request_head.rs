//! What the handler sees of an HTTP/2 request (the framing is fibra's own): the target in
//! origin form and the host in `Host`, as over HTTP/1.1; a `Host` that names another host
//! than `:authority` is malformed; header blocks split across CONTINUATION frames, padded
//! frames and a large response head split by the server into CONTINUATION frames all work.

mod h2_util;
mod util;

use std::io::Write;

use fibra_http::http::HeaderValue;
use fibra_http::{Request, Response, Settings};
use h2_util::*;

const PROTOCOL_ERROR: u32 = 0x1;
const PADDED: u8 = 0x8;

/// Answers with what it saw: the target, its scheme and authority, and `Host`.
fn app(req: Request) -> Response {
    let uri = req.uri();
    let host = req
        .headers()
        .get("host")
        .map_or("-", |h| h.to_str().unwrap_or("?"));
    let text = format!(
        "{} {} {} {host}",
        uri,
        uri.scheme_str().unwrap_or("-"),
        uri.authority().map_or("-", |a| a.as_str())
    );
    let mut resp = Response::new(text.into());
    if req.uri().path() == "/big-head" {
        // 40 KB of fields: more than one 16 KB frame of header block.
        for i in 0..40 {
            let name = format!("x-filler-{i}");
            let value = HeaderValue::from_bytes(&[b'v'; 1000]).unwrap();
            resp.headers_mut().insert(
                fibra_http::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value,
            );
        }
    }
    resp
}

/// The DATA of stream 1's response.
fn body_of(s: &mut std::net::TcpStream) -> Vec<u8> {
    read_until(s, |f| f.ty == DATA && f.stream == 1)
        .expect("a response")
        .payload
}

#[test]
fn the_handler_sees_an_origin_form_target_and_the_authority_as_host() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    s.write_all(&get(1, "/a/b?c=d")).unwrap();
    assert_eq!(body_of(&mut s), b"/a/b?c=d - - localhost");
}

#[test]
fn a_host_field_equal_to_the_authority_is_kept() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    let block = request_block("GET", "/", &[("host", "LocalHost")]);
    s.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
        .unwrap();
    assert_eq!(body_of(&mut s), b"/ - - LocalHost");
}

#[test]
fn a_host_field_naming_another_host_is_malformed() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    let block = request_block("GET", "/", &[("host", "elsewhere.example")]);
    s.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
        .unwrap();
    let f = read_until(&mut s, |f| {
        f.stream == 1 && (f.ty == RST_STREAM || f.ty == HEADERS) || f.ty == GOAWAY
    })
    .expect("an answer");
    assert_eq!((f.ty, f.error_code()), (RST_STREAM, PROTOCOL_ERROR));
}

#[test]
fn a_target_that_is_not_origin_form_is_malformed() {
    let srv = util::start(Settings::default(), app);
    for path in ["http://localhost/", "x", "*"] {
        let mut s = raw_connect(srv.addr, &[]);
        let block = request_block("GET", path, &[]);
        s.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
            .unwrap();
        let f = read_until(&mut s, |f| {
            f.stream == 1 && (f.ty == RST_STREAM || f.ty == HEADERS) || f.ty == GOAWAY
        })
        .expect("an answer");
        assert_eq!(
            (f.ty, f.error_code()),
            (RST_STREAM, PROTOCOL_ERROR),
            "{path}"
        );
    }
}

#[test]
fn a_header_block_across_continuation_frames_and_padding_are_read() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    let block = request_block("GET", "/split", &[("x-one", "1")]);
    let (a, rest) = block.split_at(5);
    let (b, c) = rest.split_at(rest.len() / 2);
    // HEADERS padded with 3 bytes, then two CONTINUATION frames.
    let mut padded = vec![3];
    padded.extend_from_slice(a);
    padded.extend_from_slice(&[0, 0, 0]);
    let mut out = frame(HEADERS, END_STREAM | PADDED, 1, &padded);
    out.extend(frame(CONTINUATION, 0, 1, b));
    out.extend(frame(CONTINUATION, END_HEADERS, 1, c));
    s.write_all(&out).unwrap();
    assert_eq!(body_of(&mut s), b"/split - - localhost");
}

#[test]
fn a_response_head_over_one_frame_goes_out_in_continuation_frames() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    s.write_all(&get(1, "/big-head")).unwrap();
    let headers =
        read_until(&mut s, |f| f.ty == HEADERS && f.stream == 1).expect("the response head");
    assert_eq!(headers.flags & END_HEADERS, 0, "continued");
    let mut block = headers.payload.len();
    loop {
        let f = read_frame(&mut s).expect("the rest of the head");
        assert_eq!((f.ty, f.stream), (CONTINUATION, 1), "nothing between");
        block += f.payload.len();
        if f.flags & END_HEADERS != 0 {
            break;
        }
    }
    assert!(block > 40_000, "the whole head: {block} bytes");
    assert_eq!(body_of(&mut s), b"/big-head - - localhost");
}
