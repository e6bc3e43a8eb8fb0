//! Shared by the HTTP/3 test files: a server on loopback serving a small app, a client
//! connection, and requests and answers written byte by byte (field sections and frames
//! made here, so that the tests do not lean on the codecs they check).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use fibra::net::UdpSocket;
use fibra_http::prepared::PreparedRef;
use fibra_http::{serve_http3_connection_draining, Http3Drain, Request, Response, Settings};
use fibra_quic::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use fibra_quic::rustls::RootCertStore;
use fibra_quic::{Config, Connection, Endpoint, Error};

/// A generous bound for anything a test waits on (the machine may be loaded).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Runs `f` as the root fiber of a two-worker runtime on its own thread, and fails the test
/// if it takes longer than [`PATIENCE`].
pub fn run(what: &str, f: impl FnOnce() + Send + 'static) {
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

/// The fields of [`PREPARED`]'s head: one of them has a static name (`content-type`), the
/// others literal names.
pub const PREPARED_FIELDS: [(&str, &str); 3] = [
    ("x-kept", "yes"),
    ("content-type", "text/x-kept"),
    ("x-also", "1"),
];

/// A response prepared once and sent by reference (as a file cache sends its `200`s):
/// [`PREPARED_FIELDS`] and the body "kept".
pub static PREPARED: LazyLock<PreparedRef> =
    LazyLock::new(|| crate::util::prepared(&PREPARED_FIELDS, b"kept"));

/// The app: `/hello` answers "hello", `/echo` its request body, `/trailer` the length of
/// the request's `x-t` trailer field (after reading the body), `/prepared` [`PREPARED`],
/// anything else 404.
pub fn app(mut req: Request) -> Response {
    match req.uri().path() {
        "/hello" => Response::new("hello".into()),
        "/prepared" => Response::prepared(PREPARED.clone()),
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
pub fn server(settings: Settings) -> (SocketAddr, fibra_quic::proto::ClientConfig) {
    let (addr, config, _drain) = server_draining(settings);
    (addr, config)
}

/// As [`server`], every connection served with the [`Http3Drain`] it returns.
pub fn server_draining(
    settings: Settings,
) -> (SocketAddr, fibra_quic::proto::ClientConfig, Http3Drain) {
    server_with(settings, Config::default())
}

/// As [`server_draining`], with `config`'s QUIC settings on both sides.
pub fn server_with(
    settings: Settings,
    config: Config,
) -> (SocketAddr, fibra_quic::proto::ClientConfig, Http3Drain) {
    server_with_drain(settings, config, Http3Drain::new())
}

/// As [`server_with`], every connection served with `drain`.
pub fn server_with_drain(
    settings: Settings,
    config: Config,
    drain: Http3Drain,
) -> (SocketAddr, fibra_quic::proto::ClientConfig, Http3Drain) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let tls = Config::server_tls(vec![cert], key, &[b"h3"]).unwrap();
    let endpoint = Endpoint::with_config(
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        &config,
        Some(config.server(tls).unwrap()),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let settings = Arc::new(settings);
    let handler = Arc::new(app);
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
pub fn connect(addr: SocketAddr, config: fibra_quic::proto::ClientConfig) -> Connection {
    let client = Endpoint::client(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
    client.connect(addr, "localhost", config).unwrap()
}

/// A QUIC variable-length integer.
pub fn varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16_383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        _ => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
    }
}

/// A frame of type `ty`.
pub fn frame(out: &mut Vec<u8>, ty: u64, payload: &[u8]) {
    varint(out, ty);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A QPACK string literal without Huffman coding, its length in a `prefix`-bit integer
/// under `first` (lengths here are short).
pub fn string(out: &mut Vec<u8>, first: u8, prefix: u32, s: &[u8]) {
    let max = (1u32 << prefix) - 1;
    assert!((s.len() as u32) < max);
    out.push(first | s.len() as u8);
    out.extend_from_slice(s);
}

/// A request's field section: `:method` (static indices 17 GET, 20 POST), `:scheme https`
/// (23) unless `no_scheme`, `:authority localhost` (a literal naming entry 0) and `:path`
/// (a literal naming entry 1), then `extra` literal fields.
pub fn request_section(post: bool, path: &str, no_scheme: bool, extra: &[(&str, &str)]) -> Vec<u8> {
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
pub struct Answer {
    pub section: Vec<u8>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The status, when the section starts with an indexed static `:status` (the server's
    /// encoder indexes the statuses the table has).
    pub fn status(&self) -> u16 {
        assert_eq!(&self.section[..2], &[0, 0], "the section prefix");
        match self.section[2] {
            0xd9 => 200, // index 25
            0xdb => 404, // index 27
            // Index 70: the 6-bit prefix full (63), then 7.
            0xff if self.section[3] == 7 => 425,
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
pub fn read_answer(recv: &mut impl Read) -> std::io::Result<Answer> {
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
pub fn open_control(conn: &Connection) -> fibra_quic::SendStream {
    let mut control = conn.open_uni().unwrap();
    let mut bytes = vec![0x00];
    frame(&mut bytes, 0x04, &[]);
    control.write_all(&bytes).unwrap();
    control
}

/// A connection to a new server with `settings`, and the client's control stream (kept
/// open: its end would be a connection error).
pub fn open(settings: Settings) -> (Connection, fibra_quic::SendStream) {
    let (addr, config) = server(settings);
    let conn = connect(addr, config);
    let control = open_control(&conn);
    (conn, control)
}

/// A request's frames: HEADERS (see [`request_section`], with `:scheme`), then a DATA
/// frame for each of `data`.
pub fn request(post: bool, path: &str, extra: &[(&str, &str)], data: &[&[u8]]) -> Vec<u8> {
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
pub fn exchange(conn: &Connection, frames: &[u8]) -> std::io::Result<Answer> {
    let (mut send, mut recv) = conn.open_bi()?;
    send.write_all(frames)?;
    send.finish()?;
    read_answer(&mut recv)
}

/// The code a failed read or the closed connection carries.
pub fn code(e: &std::io::Error, conn: &Connection) -> Option<u64> {
    Error::of(e).and_then(Error::code).or_else(|| {
        conn.closed_error()
            .as_ref()
            .and_then(Error::of)
            .and_then(Error::code)
    })
}
