//! Fuzzes the whole connection loop, `fibra_http::serve_connection`, over an in-memory
//! transport fed arbitrary bytes (pipelined requests, bodies, garbage).
//!
//! Input layout: `[read_size, flags, timeouts, write_limit, wire...]`.
//! - `read_size`: bytes handed out per `read` (1..=255; 255 means "all at once");
//! - `flags`: bit 0 tiny limits, bit 1 keep-alive off, bit 2 a `Server` header;
//! - `timeouts`: bit i makes the i-th read fail with `TimedOut` (header/body timeouts);
//! - `write_limit`: when non-zero, writes fail after `64 * write_limit` bytes (client gone).
//!
//! The handler's behaviour is chosen by the first letter of the path (echo the body, read one
//! byte, stream chunked, short sized stream, file, upgrade, 204 with a body, ...), and it
//! tags every response with `x-seq`. When no write failed, the output must parse as a
//! sequence of well-framed HTTP/1.1 responses: one per handler call, in order, optionally
//! followed by one server error; nothing after a `Connection: close`; no trailing bytes.
#![no_main]

use std::cell::RefCell;
use std::io::{Read, Write};
use std::sync::OnceLock;

use fibra_http::{FileRange, Request, Response, ResponseBody, Settings};
use libfuzzer_sys::fuzz_target;

#[path = "common/mock.rs"]
mod mock;
use mock::Mock;

/// A 20,000-byte file (bigger than the 16 KiB inline-file limit, so `send_file` is used).
fn file() -> &'static std::fs::File {
    static FILE: OnceLock<std::fs::File> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("fibra-fuzz-{}.bin", std::process::id()));
        std::fs::write(&path, vec![b'f'; 20_000]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        f
    })
}

/// What the handler saw, in call order.
#[derive(Debug, Default)]
struct Calls {
    head: Vec<bool>,
    /// The first letter of each path (the handler's behaviour).
    letter: Vec<u8>,
}

fn handle(mut req: Request, calls: &RefCell<Calls>) -> Response {
    let letter = req.uri().path().as_bytes().get(1).copied().unwrap_or(b'/');
    let seq = {
        let mut c = calls.borrow_mut();
        c.head.push(req.method() == http::Method::HEAD);
        c.letter.push(letter);
        c.head.len() - 1
    };
    let mut resp = match letter {
        b'e' => match req.body_mut().read_to_vec(1 << 16) {
            Ok(b) => Response::new(b.into()),
            Err(_) => Response::new("body error".into()),
        },
        b'p' => {
            let mut one = [0u8; 1];
            let _ = req.body_mut().read(&mut one);
            Response::new("one".into())
        }
        b's' => Response::new(ResponseBody::stream(|w| {
            w.write_all(b"stream ")?;
            w.write_all(&[b's'; 20_000])?;
            w.flush()?;
            w.write_all(b" end")
        })),
        b'z' => Response::new(ResponseBody::stream_sized(10, |w| w.write_all(b"short"))),
        b'f' => {
            let f = file().try_clone().unwrap();
            Response::new(ResponseBody::file(FileRange::new(f, 0, 20_000)))
        }
        b'g' => {
            let f = file().try_clone().unwrap();
            Response::new(ResponseBody::file(FileRange::new(f, 100, 50)))
        }
        b'u' => {
            let mut r = Response::new(ResponseBody::upgrade(|mut up| {
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = up.read(&mut buf) {
                    if up.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }));
            *r.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
            r.headers_mut()
                .insert(http::header::UPGRADE, "echo".parse().unwrap());
            r
        }
        b'1' => {
            let mut r = Response::new("not an upgrade".into());
            *r.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
            r
        }
        b'n' => {
            let mut r = Response::new("must not be sent".into());
            *r.status_mut() = http::StatusCode::NO_CONTENT;
            r
        }
        b'c' => {
            let mut r = Response::new("bye".into());
            r.headers_mut()
                .insert(http::header::CONNECTION, "close".parse().unwrap());
            r
        }
        b'b' => Response::new(vec![b'b'; 70_000].into()),
        _ => Response::new("ok".into()),
    };
    resp.headers_mut().insert("x-seq", seq.into());
    resp
}

fn settings(flags: u8) -> Settings {
    let mut s = if flags & 1 != 0 {
        Settings {
            max_head_bytes: 256,
            max_target_bytes: 64,
            max_headers: 8,
            max_body_bytes: 64,
            max_drain_bytes: 16,
            read_buffer_bytes: 512,
            ..Settings::default()
        }
    } else {
        Settings::default()
    };
    s.keep_alive = flags & 2 == 0;
    if flags & 4 != 0 {
        s.server_header = Some("fuzz".into());
    }
    s
}

/// Decodes a chunked body at the start of `b`; returns the bytes it spans.
fn chunked_len(b: &[u8]) -> usize {
    let mut i = 0;
    loop {
        let line_end = i + find(&b[i..], b"\r\n").expect("chunk size line");
        let size = usize::from_str_radix(std::str::from_utf8(&b[i..line_end]).unwrap(), 16)
            .expect("chunk size");
        i = line_end + 2 + size;
        assert_eq!(&b[i..i + 2], b"\r\n", "chunk not followed by CRLF");
        i += 2;
        if size == 0 {
            return i;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Checks the output framing; see the module docs.
fn check_output(mut out: &[u8], calls: &Calls) {
    let mut next_seq = 0;
    while !out.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(out) {
            Ok(httparse::Status::Complete(n)) => n,
            other => panic!(
                "bad response head {other:?}: {:?}",
                String::from_utf8_lossy(out)
            ),
        };
        let code = resp.code.unwrap();
        let get = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| std::str::from_utf8(h.value).unwrap().to_string())
        };
        if code == 100 {
            out = &out[n..];
            continue;
        }
        let close = get("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let mut may_be_short = false;
        let bodiless = match get("x-seq") {
            Some(seq) => {
                assert_eq!(
                    seq.parse::<usize>().unwrap(),
                    next_seq,
                    "response out of order"
                );
                next_seq += 1;
                // A sized stream that writes less than it declared ends the connection
                // with the body cut short: the client sees the error.
                may_be_short = calls.letter[next_seq - 1] == b'z';
                calls.head[next_seq - 1] || code == 204 || code == 304
            }
            None => {
                assert!(close, "a server error must close the connection");
                false
            }
        };
        if code == 101 {
            return; // raw upgraded bytes follow
        }
        out = &out[n..];
        let body_len = if bodiless {
            0
        } else if let Some(len) = get("content-length") {
            len.parse::<usize>().unwrap()
        } else if get("transfer-encoding").is_some() {
            chunked_len(out)
        } else {
            assert!(close, "unframed body without Connection: close");
            out.len()
        };
        if may_be_short && body_len > out.len() {
            break;
        }
        assert!(body_len <= out.len(), "body shorter than its framing");
        out = &out[body_len..];
        if close {
            assert!(out.is_empty(), "bytes after Connection: close");
        }
    }
    assert!(next_seq <= calls.head.len());
    // Every handler call was answered, except possibly the last one, replaced by an error.
    assert!(
        next_seq + 1 >= calls.head.len(),
        "{next_seq} of {} answered",
        calls.head.len()
    );
}

fuzz_target!(|data: &[u8]| {
    let [read_size, flags, timeouts, write_limit, wire @ ..] = data else {
        return;
    };
    let mock = Mock::new(
        wire,
        if *read_size == 255 {
            usize::MAX
        } else {
            usize::from(*read_size)
        },
    )
    .timeouts(*timeouts)
    // Short writes exercise the callers' write_all loops.
    .write_piece(4000)
    .write_limit((*write_limit != 0).then(|| usize::from(*write_limit) * 64));
    let (out, write_failed) = (mock.out.clone(), mock.write_failed.clone());
    let calls = RefCell::new(Calls::default());
    fibra_http::serve_connection(mock, &settings(*flags), &|req| handle(req, &calls));
    if !*write_failed.lock().unwrap() {
        check_output(&out.lock().unwrap(), &calls.borrow());
    }
});
