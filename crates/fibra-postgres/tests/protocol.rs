//! The client against a scripted fake server (no PostgreSQL needed): authentication
//! exchanges, answers split at every byte, pipelined answers in order, and the server
//! misbehaving (an unknown message, closing mid-answer, an unsupported auth method).

use fibra_postgres::{Client, Config, ErrorKind, Pool, Statement, Type};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

/// A backend message: tag, length, body.
fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn auth(code: i32, extra: &[u8]) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    b.extend_from_slice(extra);
    msg(b'R', &b)
}

fn ready() -> Vec<u8> {
    msg(b'Z', b"I")
}

fn session_start() -> Vec<u8> {
    let mut out = auth(0, &[]);
    out.extend(msg(b'K', &[0, 0, 0, 7, 0, 0, 0, 9]));
    out.extend(msg(b'S', b"server_version\x0015.0\x00"));
    out.extend(ready());
    out
}

fn error(code: &str, text: &str) -> Vec<u8> {
    let body = format!("SERROR\0C{code}\0M{text}\0\0");
    msg(b'E', body.as_bytes())
}

/// One `int4` column described (for a Describe of a statement).
fn describe_int4() -> Vec<u8> {
    let mut out = msg(b'1', b""); // ParseComplete
    out.extend(msg(b't', &[0, 1, 0, 0, 0, 23])); // one int4 parameter
    let mut rd = vec![0, 1];
    rd.extend_from_slice(b"n\0");
    rd.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // table oid, column
    rd.extend_from_slice(&23u32.to_be_bytes()); // int4
    rd.extend_from_slice(&[0, 4, 0xff, 0xff, 0xff, 0xff, 0, 1]);
    out.extend(msg(b'T', &rd));
    out.extend(ready());
    out
}

/// The answer to one Bind/Execute/Sync returning one int4 row.
fn row_int4(v: i32) -> Vec<u8> {
    let mut out = msg(b'2', b""); // BindComplete
    let mut d = vec![0, 1, 0, 0, 0, 4];
    d.extend_from_slice(&v.to_be_bytes());
    out.extend(msg(b'D', &d));
    out.extend(msg(b'C', b"SELECT 1\0"));
    out.extend(ready());
    out
}

/// Reads the startup packet (length-prefixed, no tag).
fn read_startup(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0; i32::from_be_bytes(len) as usize - 4];
    s.read_exact(&mut body).unwrap();
    body
}

/// Reads tagged frontend messages until `syncs` Sync messages; returns their tags.
fn read_until_syncs(s: &mut TcpStream, syncs: usize) -> Vec<(u8, Vec<u8>)> {
    let mut got = Vec::new();
    let mut seen = 0;
    while seen < syncs {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).unwrap();
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
        let mut body = vec![0; len];
        s.read_exact(&mut body).unwrap();
        seen += (head[0] == b'S') as usize;
        got.push((head[0], body));
    }
    got
}

/// A fake server running `script` on its one connection; returns the client's config.
fn fake(script: impl FnOnce(TcpStream) + Send + 'static) -> (Config, thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let t = thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        script(s);
    });
    let config = Config::from_url(&format!("postgres://u:pw@127.0.0.1:{port}/d"))
        .unwrap()
        .query_timeout(Duration::from_secs(60));
    (config, t)
}

fn one_int() -> Statement {
    Statement::new("SELECT $1::int4 AS n", &[Type::INT4])
}

#[test]
fn answers_split_at_every_byte_arrive_whole_and_in_order() {
    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&session_start()).unwrap();
        // Parse/Describe/Sync + 3 × Bind/Execute/Sync.
        let got = read_until_syncs(&mut s, 4);
        let tags: Vec<u8> = got.iter().map(|(t, _)| *t).collect();
        assert_eq!(tags, b"PDSBESBESBES");
        let mut answer = describe_int4();
        for v in [10, 20, 30] {
            answer.extend(row_int4(v));
        }
        s.set_nodelay(true).unwrap();
        for b in answer {
            s.write_all(&[b]).unwrap();
        }
    });
    fibra::run(move || {
        let c = Client::connect(&config).unwrap();
        let st = one_int();
        let p: Vec<_> = [1i32, 2, 3]
            .iter()
            .map(|v| c.send(&st, &[v]).unwrap())
            .collect();
        let got: Vec<i32> = p.into_iter().map(|p| p.one().unwrap().get(0)).collect();
        assert_eq!(got, [10, 20, 30]);
    });
    t.join().unwrap();
}

#[test]
fn cleartext_and_md5_passwords() {
    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&auth(3, &[])).unwrap(); // cleartext
        let got = read_until_password(&mut s);
        assert_eq!(got, b"pw\0");
        s.write_all(&auth(5, &[1, 2, 3, 4])).unwrap(); // then MD5, salt 1 2 3 4
        let got = read_until_password(&mut s);
        let want = postgres_protocol::authentication::md5_hash(b"u", b"pw", [1, 2, 3, 4]);
        assert_eq!(got, [want.as_bytes(), b"\0"].concat());
        s.write_all(&session_start()).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    fibra::run(move || {
        let c = Client::connect(&config).unwrap();
        assert!(c.is_usable());
    });
    t.join().unwrap();
}

fn read_until_password(s: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).unwrap();
    assert_eq!(head[0], b'p');
    let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
    let mut body = vec![0; len];
    s.read_exact(&mut body).unwrap();
    body
}

#[test]
fn refused_credentials_and_unsupported_methods_are_auth_errors() {
    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&error("28P01", "password authentication failed"))
            .unwrap();
    });
    let e = fibra::run(move || Client::connect(&config).unwrap_err());
    assert_eq!(e.kind(), ErrorKind::Auth);
    assert_eq!(e.code(), Some("28P01"));
    t.join().unwrap();

    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&auth(2, &[])).unwrap(); // Kerberos V5
    });
    let e = fibra::run(move || Client::connect(&config).unwrap_err());
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    t.join().unwrap();

    // No password configured but one asked for.
    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&auth(3, &[])).unwrap();
    });
    let config =
        Config::from_url(&format!("postgres://u@127.0.0.1:{}/d", config.get_port())).unwrap();
    let e = fibra::run(move || Client::connect(&config).unwrap_err());
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    t.join().unwrap();
}

#[test]
fn server_closing_mid_answer_fails_every_pending_query() {
    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&session_start()).unwrap();
        read_until_syncs(&mut s, 3);
        let mut answer = describe_int4();
        answer.extend(row_int4(1));
        answer.extend(&row_int4(2)[..7]); // cut inside the second answer
        s.write_all(&answer).unwrap();
    });
    fibra::run(move || {
        let c = Client::connect(&config).unwrap();
        let st = one_int();
        let a = c.send(&st, &[&1i32]).unwrap();
        let b = c.send(&st, &[&2i32]).unwrap();
        assert_eq!(a.one().unwrap().get::<i32>(0), 1);
        let e = b.one().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
        assert!(!c.is_usable());
        let e = c.query(&st, &[&3i32]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Closed, "refused at once: {e}");
    });
    t.join().unwrap();
}

#[test]
fn an_unexpected_message_is_a_protocol_error() {
    let (config, t) = fake(|mut s| {
        read_startup(&mut s);
        s.write_all(&session_start()).unwrap();
        read_until_syncs(&mut s, 2);
        let mut answer = describe_int4();
        answer.extend(msg(b'G', &[0, 0, 0])); // CopyInResponse: not for us
        s.write_all(&answer).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    fibra::run(move || {
        let c = Client::connect(&config).unwrap();
        let e = c.query(&one_int(), &[&1i32]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
        assert!(!c.is_usable());
    });
    t.join().unwrap();
}

fn config_for(port: u16) -> Config {
    Config::from_url(&format!("postgres://u:pw@127.0.0.1:{port}/d")).unwrap()
}

#[test]
fn a_pool_whose_server_is_down_fails_fast_between_dials() {
    // A backoff longer than the test: after the first failed connect, no other dial.
    let port = fibra_testkit::spare_port();
    let pool = Pool::new(
        config_for(port).redial_backoff(Duration::from_secs(600), Duration::from_secs(600)),
    );
    fibra::run(move || {
        let e = pool.get().expect_err("nothing listens");
        assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        assert!(e.to_string().contains("refused"), "{e}");
        for _ in 0..10 {
            let e = pool.get().expect_err("still down");
            assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
            assert!(e.is_unavailable(), "a 503 for a web handler: {e}");
            let want = format!(
                "not connecting: 1 connects failed in a row (last: connect to 127.0.0.1:{port}"
            );
            assert!(e.to_string().contains(&want), "{e}");
        }
    });
}

#[test]
fn a_pool_uses_a_server_that_came_back() {
    let port = fibra_testkit::spare_port();
    let pool = Pool::new(
        config_for(port).redial_backoff(Duration::from_millis(20), Duration::from_millis(100)),
    );
    fibra::run(move || {
        assert!(pool.get().is_err(), "nothing listens yet");
        // The server comes up on its port and serves one session.
        let listener = (0..50)
            .find_map(|_| {
                TcpListener::bind(("127.0.0.1", port)).ok().or_else(|| {
                    thread::sleep(Duration::from_millis(100));
                    None
                })
            })
            .expect("the server's port can be bound");
        thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            read_startup(&mut s);
            s.write_all(&session_start()).unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
        });
        // Bounded: a broken backoff fails the test instead of hanging it.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            match pool.get() {
                Ok(client) => {
                    assert!(client.is_usable());
                    break;
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
                    assert!(std::time::Instant::now() < deadline, "never back: {e}");
                    fibra::time::sleep(Duration::from_millis(10));
                }
            }
        }
    });
}
