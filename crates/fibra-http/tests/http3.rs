//! HTTP/3 over fibra-quic: `serve_http3_connection` answering hand-made requests (field
//! sections and frames written byte by byte here, so the test does not lean on the codecs
//! it checks), the errors a client that breaks HTTP/3 gets, and a graceful shutdown.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra::net::UdpSocket;
use fibra_http::{serve_http3_connection_draining, Http3Drain, Request, Response, Settings};
use fibra_quic::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use fibra_quic::rustls::RootCertStore;
use fibra_quic::{Config, Connection, Endpoint, Error};

/// A generous bound for anything a test waits on (the machine may be loaded).
const PATIENCE: Duration = Duration::from_secs(60);

/// Runs `f` as the root fiber of a two-worker runtime on its own thread, and fails the test
/// if it takes longer than [`PATIENCE`].
fn run(what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let rt = fibra::Runtime::builder().workers(2).build().unwrap();
            rt.block_on(f)
        }));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(Ok(())) => {}
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("{what}: no progress within {PATIENCE:?}"),
    }
}

/// The app: `/hello` answers "hello", `/echo` its request body, `/trailer` the length of
/// the request's `x-t` trailer field (after reading the body), anything else 404.
fn app(mut req: Request) -> Response {
    match req.uri().path() {
        "/hello" => Response::new("hello".into()),
        "/echo" => match req.body_mut().read_to_vec(1 << 20) {
            Ok(body) => Response::new(body.into()),
            Err(_) => {
                let mut r = Response::new("bad body\n".into());
                *r.status_mut() = http::StatusCode::BAD_REQUEST;
                r
            }
        },
        "/trailer" => {
            let _ = req.body_mut().read_to_vec(1 << 20);
            let len = req
                .body_mut()
                .trailers()
                .and_then(|t| t.get("x-t").map(|v| v.len()));
            Response::new(format!("{len:?}").into())
        }
        _ => {
            let mut r = Response::new("not found\n".into());
            *r.status_mut() = http::StatusCode::NOT_FOUND;
            r
        }
    }
}

/// An HTTP/3 server on loopback serving [`app`] with `settings`; returns its address and a
/// client configuration that trusts its certificate.
fn server(settings: Settings) -> (SocketAddr, fibra_quic::proto::ClientConfig) {
    let (addr, config, _drain) = server_draining(settings);
    (addr, config)
}

/// As [`server`], every connection served with the [`Http3Drain`] it returns.
fn server_draining(
    settings: Settings,
) -> (SocketAddr, fibra_quic::proto::ClientConfig, Http3Drain) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let config = Config::default();
    let tls = Config::server_tls(vec![cert], key, &[b"h3"]).unwrap();
    let endpoint = Endpoint::server(
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        config.server(tls).unwrap(),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let settings = Arc::new(settings);
    let handler = Arc::new(app);
    let drain = Http3Drain::new();
    let draining = drain.clone();
    fibra::spawn(move || {
        while let Some(conn) = endpoint.accept() {
            let (settings, handler, drain) = (settings.clone(), handler.clone(), draining.clone());
            fibra::spawn(move || serve_http3_connection_draining(conn, settings, handler, &drain));
        }
    });
    let client = Config::client_tls(roots, &[b"h3"]).unwrap();
    (addr, config.client(client).unwrap(), drain)
}

/// A client connection to `addr`.
fn connect(addr: SocketAddr, config: fibra_quic::proto::ClientConfig) -> Connection {
    let client = Endpoint::client(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
    client.connect(addr, "localhost", config).unwrap()
}

/// A QUIC variable-length integer.
fn varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16_383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        _ => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
    }
}

/// A frame of type `ty`.
fn frame(out: &mut Vec<u8>, ty: u64, payload: &[u8]) {
    varint(out, ty);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A QPACK string literal without Huffman coding, its length in a `prefix`-bit integer
/// under `first` (lengths here are short).
fn string(out: &mut Vec<u8>, first: u8, prefix: u32, s: &[u8]) {
    let max = (1u32 << prefix) - 1;
    assert!((s.len() as u32) < max);
    out.push(first | s.len() as u8);
    out.extend_from_slice(s);
}

/// A request's field section: `:method` (static indices 17 GET, 20 POST), `:scheme https`
/// (23) unless `no_scheme`, `:authority localhost` (a literal naming entry 0) and `:path`
/// (a literal naming entry 1), then `extra` literal fields.
fn request_section(post: bool, path: &str, no_scheme: bool, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut s = vec![0x00, 0x00];
    s.push(0xc0 | if post { 20 } else { 17 });
    if !no_scheme {
        s.push(0xc0 | 23);
    }
    s.push(0x50); // literal with static name reference 0 (`:authority`)
    string(&mut s, 0x00, 7, b"localhost");
    s.push(0x51); // literal with static name reference 1 (`:path`)
    string(&mut s, 0x00, 7, path.as_bytes());
    for (name, value) in extra {
        string(&mut s, 0x20, 3, name.as_bytes()); // literal name, 3-bit length prefix
        string(&mut s, 0x00, 7, value.as_bytes());
    }
    s
}

/// What came back on a request stream.
struct Answer {
    section: Vec<u8>,
    body: Vec<u8>,
}

impl Answer {
    /// The status, when the section starts with an indexed static `:status` (the server's
    /// encoder indexes the statuses the table has).
    fn status(&self) -> u16 {
        assert_eq!(&self.section[..2], &[0, 0], "the section prefix");
        match self.section[2] {
            0xd9 => 200, // index 25
            0xdb => 404, // index 27
            0xc0..=0xff => panic!("another indexed status: {:#x}", self.section[2]),
            // A literal naming entry 24 (`:status`): 0101 1111 then 24 - 15 = 9.
            0x5f if self.section[3] == 9 => {
                let len = usize::from(self.section[4]);
                std::str::from_utf8(&self.section[5..5 + len])
                    .unwrap()
                    .parse()
                    .unwrap()
            }
            b => panic!("no status first: {b:#x}"),
        }
    }
}

/// Reads a whole response: one HEADERS frame, then DATA frames, to the stream's end.
fn read_answer(recv: &mut impl Read) -> std::io::Result<Answer> {
    let mut all = Vec::new();
    recv.read_to_end(&mut all)?;
    let mut pos = 0;
    let mut next = || -> Option<(u64, Vec<u8>)> {
        if pos >= all.len() {
            return None;
        }
        let read = |pos: &mut usize| -> u64 {
            let first = all[*pos];
            let len = 1usize << (first >> 6);
            let mut v = u64::from(first & 0x3f);
            for i in 1..len {
                v = (v << 8) | u64::from(all[*pos + i]);
            }
            *pos += len;
            v
        };
        let ty = read(&mut pos);
        let len = read(&mut pos) as usize;
        let payload = all[pos..pos + len].to_vec();
        pos += len;
        Some((ty, payload))
    };
    let (ty, section) = next().expect("a HEADERS frame");
    assert_eq!(ty, 0x01, "HEADERS first");
    let mut body = Vec::new();
    while let Some((ty, payload)) = next() {
        assert_eq!(ty, 0x00, "only DATA after the head");
        body.extend_from_slice(&payload);
    }
    Ok(Answer { section, body })
}

/// Opens the client's control stream with an empty SETTINGS frame.
fn open_control(conn: &Connection) -> fibra_quic::SendStream {
    let mut control = conn.open_uni().unwrap();
    let mut bytes = vec![0x00];
    frame(&mut bytes, 0x04, &[]);
    control.write_all(&bytes).unwrap();
    control
}

/// A connection to a new server with `settings`, and the client's control stream (kept
/// open: its end would be a connection error).
fn open(settings: Settings) -> (Connection, fibra_quic::SendStream) {
    let (addr, config) = server(settings);
    let conn = connect(addr, config);
    let control = open_control(&conn);
    (conn, control)
}

/// A request's frames: HEADERS (see [`request_section`], with `:scheme`), then a DATA
/// frame for each of `data`.
fn request(post: bool, path: &str, extra: &[(&str, &str)], data: &[&[u8]]) -> Vec<u8> {
    let mut frames = Vec::new();
    frame(
        &mut frames,
        0x01,
        &request_section(post, path, false, extra),
    );
    for d in data {
        frame(&mut frames, 0x00, d);
    }
    frames
}

/// Sends `frames` on a new request stream, ends it, and reads the answer.
fn exchange(conn: &Connection, frames: &[u8]) -> std::io::Result<Answer> {
    let (mut send, mut recv) = conn.open_bi()?;
    send.write_all(frames)?;
    send.finish()?;
    read_answer(&mut recv)
}

/// The code a failed read or the closed connection carries.
fn code(e: &std::io::Error, conn: &Connection) -> Option<u64> {
    Error::of(e).and_then(Error::code).or_else(|| {
        conn.closed_error()
            .as_ref()
            .and_then(Error::of)
            .and_then(Error::code)
    })
}

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
    out.extend(std::iter::repeat(b'v').take(len));
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

/// Reads the server's control stream up to its GOAWAY frame; returns the frame's id.
fn goaway_id(control: &mut fibra_quic::RecvStream) -> u64 {
    let mut all = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        // Stream type 0x00 (control), then frames: SETTINGS (0x04), then GOAWAY (0x07).
        let mut pos = 1;
        while pos < all.len() {
            let read = |pos: &mut usize| -> Option<u64> {
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
            let (Some(ty), Some(len)) = (read(&mut pos), read(&mut pos)) else {
                break;
            };
            let Some(payload) = all.get(pos..pos + len as usize) else {
                break;
            };
            if ty == 0x07 {
                let mut p = 0;
                let first = payload[0];
                let n = 1usize << (first >> 6);
                let id = payload[1..n]
                    .iter()
                    .fold(u64::from(first & 0x3f), |v, b| (v << 8) | u64::from(*b));
                p += n;
                assert_eq!(p, payload.len(), "GOAWAY carries one id");
                return id;
            }
            pos += len as usize;
        }
        let n = control.read(&mut buf).expect("the server's control stream");
        assert!(n > 0, "the control stream ended before a GOAWAY");
        all.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn a_drain_sends_goaway_answers_what_it_took_and_refuses_the_rest() {
    run("drain", || {
        let (addr, config, drain) = server_draining(Settings::default());
        let conn = connect(addr, config);
        let _control = open_control(&conn);
        // Stream 0: a POST whose body is still coming when the drain begins.
        let (mut first, mut first_answer) = conn.open_bi().unwrap();
        let mut head = Vec::new();
        frame(&mut head, 0x01, &request_section(true, "/echo", false, &[]));
        frame(&mut head, 0x00, b"part one, ");
        first.write_all(&head).unwrap();
        // Stream 4 is answered before the drain: the server has taken stream 0 too by then
        // (streams are accepted in order).
        let get = request(false, "/hello", &[], &[]);
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");

        drain.begin();
        let mut server_control = conn.accept_uni().unwrap();
        // Streams 0 and 4 were taken: the first one not processed is 8.
        assert_eq!(goaway_id(&mut server_control), 8);

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
        let mut rest = Vec::new();
        frame(&mut rest, 0x00, b"part two");
        first.write_all(&rest).unwrap();
        first.finish().unwrap();
        let answer = read_answer(&mut first_answer).unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.body, b"part one, part two");

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
