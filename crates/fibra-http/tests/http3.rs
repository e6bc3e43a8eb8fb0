//! HTTP/3 over fibra-quic: `serve_http3_connection` answering hand-made requests (field
//! sections and frames written byte by byte by `h3_util`, so the test does not lean on the
//! codecs it checks), the errors a client that breaks HTTP/3 gets, and a graceful shutdown.

mod h3_util;
mod util;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::Settings;
use fibra_quic::Connection;
use h3_util::*;

#[test]
fn get_and_post_are_answered_by_the_same_handler() {
    run("get and post", || {
        let (conn, _control) = open(Settings::default());
        let answer = exchange(&conn, &request(false, "/hello", &[], &[])).unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.body, b"hello");
        // A body in two DATA frames with a reserved frame type between them (skipped).
        let mut post = request(true, "/echo", &[("x-test", "1")], &[b"first "]);
        frame(&mut post, 0x21, b"grease");
        frame(&mut post, 0x00, b"second");
        let answer = exchange(&conn, &post).unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.body, b"first second");
        // HEAD: the head of the GET's answer, no body.
        let mut section = request_section(false, "/hello", false, &[]);
        section[2] = 0xc0 | 18; // `:method HEAD`
        let mut head = Vec::new();
        frame(&mut head, 0x01, &section);
        let answer = exchange(&conn, &head).unwrap();
        assert_eq!(answer.status(), 200);
        assert!(answer.body.is_empty(), "{:?}", answer.body);
        let missing = request(false, "/nowhere", &[], &[]);
        assert_eq!(exchange(&conn, &missing).unwrap().status(), 404);
        // Several requests at once on one connection.
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let conn = conn.clone();
                fibra::spawn(move || {
                    let body = format!("request {i}");
                    let post = request(true, "/echo", &[], &[body.as_bytes()]);
                    let answer = exchange(&conn, &post).unwrap();
                    assert_eq!(answer.body, body.as_bytes());
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// The connection keeps its last request section and, once it comes again, the request made
/// of it: repeated heads are answered as the first, each with its own body, and a different
/// head in between is not mistaken for the kept one.
#[test]
fn repeated_requests_on_one_connection_are_each_answered_for_themselves() {
    run("repeated", || {
        let (conn, _control) = open(Settings::default());
        for round in 0..4 {
            let answer = exchange(&conn, &request(false, "/hello", &[], &[])).unwrap();
            assert_eq!(
                (answer.status(), &answer.body[..]),
                (200, &b"hello"[..]),
                "{round}"
            );
        }
        for round in 0..4 {
            let body = format!("body {round}");
            let post = request(true, "/echo", &[("x-test", "1")], &[body.as_bytes()]);
            let answer = exchange(&conn, &post).unwrap();
            assert_eq!(answer.body, body.as_bytes(), "{round}");
        }
        for path in ["/nowhere", "/nowhere", "/nowhere", "/hello", "/nowhere"] {
            let answer = exchange(&conn, &request(false, path, &[], &[])).unwrap();
            let want = if path == "/hello" { 200 } else { 404 };
            assert_eq!(answer.status(), want, "{path}");
        }
    });
}

/// A prepared response (a file cache's way) has its fields encoded once and kept: each answer
/// carries every field, the ones the server adds (`content-length`) too, and the kept lines
/// come out the same the second time as the first.
#[test]
fn a_prepared_response_sends_its_fields_each_time() {
    run("prepared", || {
        let (conn, _control) = open(Settings::default());
        let mut sections = Vec::new();
        for round in 0..3 {
            let answer = exchange(&conn, &request(false, "/prepared", &[], &[])).unwrap();
            assert_eq!(answer.status(), 200, "{round}");
            assert_eq!(answer.body, b"kept", "{round}");
            sections.push(answer.section);
        }
        // What each field must look like on the wire (no Huffman coding from the server).
        let mut want: Vec<Vec<u8>> = Vec::new();
        for (name, value) in PREPARED_FIELDS {
            let mut line = Vec::new();
            if name == "content-type" {
                line.push(0x5f); // literal, static name reference 44 (4-bit prefix full)...
                line.push(44 - 15); // ...then the rest of the index
            } else {
                string(&mut line, 0x20, 3, name.as_bytes());
            }
            string(&mut line, 0x00, 7, value.as_bytes());
            want.push(line);
        }
        let length = vec![0x54, 0x01, b'4']; // `content-length: 4`, static name 4
        want.push(length);
        for (round, section) in sections.iter().enumerate() {
            for line in &want {
                assert!(
                    section.windows(line.len()).any(|w| w == &line[..]),
                    "round {round}: {line:x?} missing from {section:x?}"
                );
            }
        }
        // The kept lines are one run, where the second answer has them as the first did.
        let kept: Vec<u8> = want[..3].concat();
        for section in &sections {
            assert!(section.windows(kept.len()).any(|w| w == &kept[..]));
        }
    });
}

#[test]
fn limits_are_answered_as_over_http_1_1() {
    run("limits", || {
        let settings = Settings {
            max_body_bytes: 16,
            max_head_bytes: 512,
            ..Settings::default()
        };
        let (conn, _control) = open(settings);
        let big_body = request(true, "/echo", &[], &[&[b'x'; 40]]);
        assert_eq!(exchange(&conn, &big_body).unwrap().status(), 413);
        let long = "v".repeat(100);
        let fields: Vec<(&str, &str)> = (0..6).map(|_| ("x-long", long.as_str())).collect();
        let big_head = request(false, "/hello", &fields, &[]);
        assert_eq!(exchange(&conn, &big_head).unwrap().status(), 431);
        // The connection goes on.
        let get = request(false, "/hello", &[], &[]);
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");
    });
}

#[test]
fn a_malformed_request_resets_its_stream_only() {
    run("malformed", || {
        let (conn, _control) = open(Settings::default());
        let mut bad = Vec::new();
        frame(&mut bad, 0x01, &request_section(false, "/hello", true, &[]));
        let e = exchange(&conn, &bad).err().expect("the stream is reset");
        assert_eq!(code(&e, &conn), Some(0x10e), "H3_MESSAGE_ERROR: {e}");
        let get = request(false, "/hello", &[], &[]);
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");
    });
}

/// Runs `misbehave` on a fresh connection, then waits until the server closes it, and
/// returns the code it closed it with.
fn closed_with(misbehave: impl FnOnce(&Connection) + Send + 'static) -> u64 {
    let (tx, rx) = std::sync::mpsc::channel();
    run("connection error", move || {
        let (addr, config) = server(Settings::default());
        let conn = connect(addr, config);
        misbehave(&conn);
        // The server's close ends every stream: wait on one that is never answered.
        let (_send, mut recv) = conn.open_bi().unwrap_or_else(|e| panic!("{e}"));
        let mut buf = [0u8; 16];
        let e = loop {
            match recv.read(&mut buf) {
                Ok(0) => panic!("the stream ended instead of the connection"),
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        tx.send(code(&e, &conn)).unwrap();
    });
    rx.recv().unwrap().expect("a code")
}

#[test]
fn data_before_headers_closes_the_connection() {
    let code = closed_with(|conn| {
        let _control = open_control(conn);
        let mut data = Vec::new();
        frame(&mut data, 0x00, b"early");
        let (mut send, _recv) = conn.open_bi().unwrap();
        send.write_all(&data).unwrap();
        std::mem::forget(_control);
    });
    assert_eq!(code, 0x105, "H3_FRAME_UNEXPECTED");
}

#[test]
fn a_control_stream_must_open_with_settings() {
    let code = closed_with(|conn| {
        let mut control = conn.open_uni().unwrap();
        let mut bytes = vec![0x00];
        frame(&mut bytes, 0x07, &[0x00]); // GOAWAY first
        control.write_all(&bytes).unwrap();
        std::mem::forget(control);
    });
    assert_eq!(code, 0x10a, "H3_MISSING_SETTINGS");
}

#[test]
fn a_second_control_stream_closes_the_connection() {
    let code = closed_with(|conn| {
        let first = open_control(conn);
        let second = open_control(conn);
        std::mem::forget((first, second));
    });
    assert_eq!(code, 0x103, "H3_STREAM_CREATION_ERROR");
}

#[test]
fn a_qpack_encoder_stream_may_not_insert() {
    let code = closed_with(|conn| {
        let control = open_control(conn);
        let mut encoder = conn.open_uni().unwrap();
        // Stream type 0x02, then "Set Dynamic Table Capacity" 100 (001x xxxx).
        encoder.write_all(&[0x02, 0x3f, 100 - 31]).unwrap();
        std::mem::forget((control, encoder));
    });
    assert_eq!(code, 0x201, "QPACK_ENCODER_STREAM_ERROR");
}

#[test]
fn a_headers_frame_past_twice_the_limit_closes_the_connection() {
    let code = closed_with(|conn| {
        let control = open_control(conn);
        let mut flood = Vec::new();
        frame(&mut flood, 0x01, &vec![0x20; 100_000]);
        let (mut send, recv) = conn.open_bi().unwrap();
        send.write_all(&flood).unwrap();
        std::mem::forget((control, send, recv));
    });
    assert_eq!(code, 0x107, "H3_EXCESSIVE_LOAD");
}

/// One access-log entry: method, target, version, status, body bytes.
type Entry = (String, String, String, u16, u64);

/// The access-log entries a server made.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Entry>>>);

impl fibra_http::access_log::AccessLogSink for Collect {
    fn log(&self, e: &fibra_http::access_log::LogEntry<'_>) {
        self.0.lock().unwrap().push((
            e.method.to_string(),
            e.target.to_string(),
            e.version.to_string(),
            e.status,
            e.bytes,
        ));
    }
}

#[test]
fn answered_requests_are_logged_as_http_3() {
    let sink = Collect::default();
    let got = sink.clone();
    run("access log", move || {
        let settings = Settings {
            access_log_sink: Some(Arc::new(sink)),
            ..Settings::default()
        };
        let (conn, _control) = open(settings);
        let get = request(false, "/hello?x=1", &[], &[]);
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");
        let post = request(true, "/echo", &[], &[b"0123456789"]);
        assert_eq!(exchange(&conn, &post).unwrap().body, b"0123456789");
    });
    // Each entry is made once its answer has gone, before the stream's fiber ends; the
    // client read both answers to their end, so both are in (a bounded wait all the same).
    let mut entries = Vec::new();
    for _ in 0..600 {
        entries = got.0.lock().unwrap().clone();
        if entries.len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    entries.sort();
    assert_eq!(
        entries,
        vec![
            ("GET".into(), "/hello?x=1".into(), "HTTP/3.0".into(), 200, 5),
            ("POST".into(), "/echo".into(), "HTTP/3.0".into(), 200, 10),
        ]
    );
}

/// An integer with a `prefix`-bit prefix under `first` (RFC 7541 §5.1, QPACK's too).
fn prefixed(out: &mut Vec<u8>, first: u8, prefix: u32, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A field with a literal name and a value of `len` bytes, for sections past 127 bytes.
fn long_field(out: &mut Vec<u8>, name: &str, len: usize) {
    string(out, 0x20, 3, name.as_bytes());
    prefixed(out, 0x00, 7, len);
    out.extend(std::iter::repeat_n(b'v', len));
}

#[test]
fn trailers_after_a_large_head_are_read_whole() {
    // A 30,000-byte head fills the stream's read buffer past its first 16 KiB; the trailer
    // section that follows then arrives in pieces, read while the buffer moves its unread
    // bytes to the front.
    run("large head, then trailers", || {
        let settings = Settings {
            max_head_bytes: 64 * 1024,
            ..Settings::default()
        };
        let (conn, _control) = open(settings);
        let mut head = request_section(true, "/trailer", false, &[]);
        long_field(&mut head, "x-big", 30_000);
        let mut trailers = vec![0x00, 0x00];
        long_field(&mut trailers, "x-t", 5_000);
        let mut frames = Vec::new();
        frame(&mut frames, 0x01, &head);
        frame(&mut frames, 0x01, &trailers);
        let answer = exchange(&conn, &frames).unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.body, b"Some(5000)");
    });
}

/// The id of a first GOAWAY: the largest request stream id (RFC 9114 §5.2).
const ANY_REQUEST: u64 = (1 << 62) - 4;

/// Reads the GOAWAY frames of the server's control stream, one after another.
struct GoAways {
    control: fibra_quic::RecvStream,
    /// What was read, from the first frame on (past the stream type, 0x00 for control).
    all: Vec<u8>,
    /// Where the next frame starts in `all`.
    pos: usize,
}

impl GoAways {
    fn new(conn: &Connection) -> GoAways {
        GoAways {
            control: conn.accept_uni().unwrap(),
            all: Vec::new(),
            pos: 1,
        }
    }

    /// The id of the next GOAWAY (frames before it, SETTINGS first, are skipped).
    fn next(&mut self) -> u64 {
        let mut buf = [0u8; 256];
        loop {
            let read = |all: &[u8], pos: &mut usize| -> Option<u64> {
                let first = *all.get(*pos)?;
                let len = 1usize << (first >> 6);
                let bytes = all.get(*pos..*pos + len)?;
                *pos += len;
                Some(
                    bytes[1..]
                        .iter()
                        .fold(u64::from(first & 0x3f), |v, b| (v << 8) | u64::from(*b)),
                )
            };
            let mut pos = self.pos;
            if let (Some(ty), Some(len)) = (read(&self.all, &mut pos), read(&self.all, &mut pos)) {
                if let Some(payload) = self.all.get(pos..pos + len as usize) {
                    self.pos = pos + len as usize;
                    if ty == 0x07 {
                        let mut p = 0;
                        let id = read(payload, &mut p).expect("GOAWAY's id");
                        assert_eq!(p, payload.len(), "GOAWAY carries one id");
                        return id;
                    }
                    continue;
                }
            }
            let n = self
                .control
                .read(&mut buf)
                .expect("the server's control stream");
            assert!(n > 0, "the control stream ended before a GOAWAY");
            self.all.extend_from_slice(&buf[..n]);
        }
    }
}

/// Opens a request stream with a POST to `/echo` whose body is still coming: its head and
/// `part one, ` are sent, the rest by [`finish_post`].
fn post_in_flight(conn: &Connection) -> (fibra_quic::SendStream, fibra_quic::RecvStream) {
    let (mut send, recv) = conn.open_bi().unwrap();
    let mut head = Vec::new();
    frame(&mut head, 0x01, &request_section(true, "/echo", false, &[]));
    frame(&mut head, 0x00, b"part one, ");
    send.write_all(&head).unwrap();
    (send, recv)
}

/// Sends the rest of [`post_in_flight`]'s body and checks that it is answered in full.
fn finish_post(send: &mut fibra_quic::SendStream, recv: &mut fibra_quic::RecvStream) {
    let mut rest = Vec::new();
    frame(&mut rest, 0x00, b"part two");
    send.write_all(&rest).unwrap();
    send.finish().unwrap();
    let answer = read_answer(recv).unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.body, b"part one, part two");
}

#[test]
fn a_drain_sends_goaway_answers_what_it_took_and_refuses_the_rest() {
    run("drain", || {
        let (addr, config, drain) = server_draining(Settings::default());
        let conn = connect(addr, config);
        let _control = open_control(&conn);
        // Stream 0: a POST whose body is still coming when the drain begins.
        let (mut first, mut first_answer) = post_in_flight(&conn);
        // Stream 4 is answered before the drain: the server has taken stream 0 too by then
        // (streams are accepted in order).
        let get = request(false, "/hello", &[], &[]);
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");

        drain.begin();
        let mut goaways = GoAways::new(&conn);
        assert_eq!(
            goaways.next(),
            ANY_REQUEST,
            "the first GOAWAY refuses nothing"
        );
        // Streams 0 and 4 were taken: the first one not processed is 8.
        assert_eq!(goaways.next(), 8, "the final GOAWAY");

        // A request after the GOAWAY: refused, not processed.
        let (mut late, mut late_answer) = conn.open_bi().unwrap();
        late.write_all(&get).unwrap();
        late.finish().unwrap();
        let e = match read_answer(&mut late_answer) {
            Ok(a) => panic!("a request after GOAWAY answered: {:?}", a.body),
            Err(e) => e,
        };
        assert_eq!(code(&e, &conn), Some(0x10b), "H3_REQUEST_REJECTED: {e}");

        // The request taken before it is answered in full.
        finish_post(&mut first, &mut first_answer);

        // Then the server closes the connection, with H3_NO_ERROR (seen on a stream that
        // waits for it, or at once if it came first).
        let e = match conn.open_bi() {
            Err(e) => e,
            Ok((_send, mut recv)) => {
                let mut buf = [0u8; 16];
                loop {
                    match recv.read(&mut buf) {
                        Ok(0) => panic!("a stream ended instead of the connection"),
                        Ok(_) => continue,
                        Err(e) => break e,
                    }
                }
            }
        };
        assert_eq!(code(&e, &conn), Some(0x100), "H3_NO_ERROR: {e}");
    });
}

#[test]
fn a_request_that_reaches_the_server_after_its_first_goaway_is_answered() {
    run("drain-in-flight", || {
        // A settle time no loaded machine's scheduling delay reaches: the request below
        // arrives within it, so the test does not depend on timing.
        let drain = fibra_http::Http3Drain::with_settle(Duration::from_secs(10));
        let (addr, config, drain) =
            server_with_drain(Settings::default(), fibra_quic::Config::default(), drain);
        let conn = connect(addr, config);
        let _control = open_control(&conn);
        // Stream 0: a POST still in flight keeps the connection open past the final GOAWAY
        // (with nothing in flight the close follows that GOAWAY at once, and may come first).
        let (mut first, mut first_answer) = post_in_flight(&conn);

        drain.begin();
        let mut goaways = GoAways::new(&conn);
        assert_eq!(goaways.next(), ANY_REQUEST);
        // Stream 4, as a client sends it that had not read that GOAWAY yet: answered.
        let get = request(false, "/hello", &[], &[]);
        let answer = exchange(&conn, &get).unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.body, b"hello");
        // The final GOAWAY names the stream after it.
        assert_eq!(goaways.next(), 8, "the final GOAWAY");

        finish_post(&mut first, &mut first_answer);
    });
}
