//! The reverse proxy against upstreams that misbehave: refusing connections, answering with
//! something that is not HTTP, closing before the answer or in the middle of the body,
//! never answering (504 once the read timeout passes) and sending a head over the parser's
//! 64 KiB limit. Each gets its 502 or 504 (or, once the head has gone out, a closed
//! connection the client can tell from a complete response); the front keeps serving; and
//! after many rounds of all of them the process has no more descriptors open than before
//! (counted in /proc/self/fd): no upstream or client connection leaks.
//!
//! One test, its cases in sequence: the descriptor count is the whole process's.

mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_proxy::{Proxy, UpstreamError};
use proxy_util::{
    answer_all, front, get_closing, raw_upstream, read_head, wait_for_close, RawUpstream,
};
use util::{connect, open_fds, read_response, status_of, wait_for_fds_at_most};

fn upstreams() -> Vec<(&'static str, RawUpstream)> {
    let huge: &'static [u8] = {
        let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..2 {
            h.extend_from_slice(format!("X-Big-{i}: {}\r\n", "v".repeat(40_000)).as_bytes());
        }
        h.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        Box::leak(h.into_boxed_slice())
    };
    vec![
        (
            "/malformed",
            raw_upstream(|s, _| answer_all(s, b"HTTP/1.1 two hundred OK\r\n\r\n")),
        ),
        (
            "/garbage",
            raw_upstream(|s, _| answer_all(s, b"\x00\x01 not http at all\r\n\r\n")),
        ),
        (
            "/bad-length",
            raw_upstream(|s, _| {
                answer_all(
                    s,
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
                )
            }),
        ),
        (
            "/closes-early",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
            }),
        ),
        (
            "/closes-in-head",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Le");
            }),
        ),
        (
            "/resets",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
                let _ = socket2_linger_zero(&s);
            }),
        ),
        ("/huge-head", raw_upstream(move |s, _| answer_all(s, huge))),
        (
            "/silent",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
                wait_for_close(&mut s); // never answers; ends when the proxy gives up
            }),
        ),
        (
            "/cut-length",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
                let _ = s.write_all(&[b'x'; 30_000]);
            }),
        ),
        (
            "/cut-chunked",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nab",
                );
            }),
        ),
        (
            "/bad-chunk",
            raw_upstream(|mut s, _| {
                let _ = read_head(&mut s);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n",
                );
                wait_for_close(&mut s);
            }),
        ),
        (
            "/ok",
            raw_upstream(|s, _| answer_all(s, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")),
        ),
    ]
}

/// Closes `s` with a reset (SO_LINGER 0) instead of a FIN.
fn socket2_linger_zero(s: &TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc_linger();
    // SAFETY: a valid socket descriptor and a properly sized `linger` value.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn libc_linger() -> libc::linger {
    libc::linger {
        l_onoff: 1,
        l_linger: 0,
    }
}

#[test]
fn misbehaving_upstreams_get_502_or_504_and_leak_nothing() {
    let ups = upstreams();
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let errors = Arc::new(Mutex::new(Vec::<UpstreamError>::new()));
    let seen = errors.clone();
    let mut proxy = Proxy::new()
        .read_timeout(Duration::from_millis(500))
        .on_error(move |e| seen.lock().unwrap().push(e.clone()))
        .route("/refused/", &format!("http://{refused}/"))
        .unwrap();
    for (prefix, up) in &ups {
        proxy = proxy.route(prefix, &format!("http://{}", up.addr)).unwrap();
    }
    let front = front(proxy);
    let expect_status = |path: &str| -> u16 {
        match path {
            "/silent" => 504,
            "/cut-length" | "/cut-chunked" | "/bad-chunk" | "/ok" => 200,
            _ => 502,
        }
    };
    let one_round = || {
        for path in ["/refused/x"]
            .into_iter()
            .chain(ups.iter().map(|(p, _)| *p))
        {
            let (status, all) = get_closing(front.addr, path);
            assert_eq!(status, expect_status(path), "{path}: {all:?}");
            match path {
                // The head went out before the upstream failed: the client gets fewer bytes
                // than announced, or no last chunk, and then the end of the connection.
                "/cut-length" => {
                    let body = &all[all.find("\r\n\r\n").unwrap() + 4..];
                    assert!(all.contains("Content-Length: 100000\r\n"), "{all:?}");
                    assert!(body.len() < 100_000, "{path}: {} body bytes", body.len());
                }
                "/cut-chunked" | "/bad-chunk" => {
                    assert!(all.contains("Transfer-Encoding: chunked\r\n"), "{all:?}");
                    assert!(all.contains("5\r\nhello\r\n"), "{all:?}");
                    assert!(
                        !all.ends_with("0\r\n\r\n"),
                        "{path}: looks complete: {all:?}"
                    );
                }
                "/ok" => assert!(all.ends_with("\r\n\r\nok"), "{all:?}"),
                _ => {}
            }
        }
    };
    one_round();
    // Errors were reported with the upstream and what went wrong.
    {
        let errors = errors.lock().unwrap();
        let refused_err = errors
            .iter()
            .find(|e| e.upstream == refused.to_string())
            .unwrap();
        assert_eq!(refused_err.status, 502);
        assert!(refused_err.message.contains("connecting"), "{refused_err}");
        assert!(errors.iter().any(|e| e.status == 504), "{errors:?}");
        assert!(
            errors.iter().any(|e| e.message.contains("larger than")),
            "{errors:?}"
        );
    }
    // Descriptors: after a warm-up round, many more rounds open nothing that stays open.
    let before = open_fds();
    for _ in 0..10 {
        one_round();
    }
    let after = wait_for_fds_at_most(before);
    assert!(
        after <= before,
        "descriptors open: {before} before, {after} after 10 rounds"
    );
    // The front still answers on a kept-alive connection.
    let mut c = connect(front.addr);
    for _ in 0..3 {
        c.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut c, false);
        assert_eq!(
            (status_of(&head), body.as_slice()),
            (200, &b"ok"[..]),
            "{head}"
        );
    }
    let mut rest = [0u8; 1];
    c.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    assert!(c.read(&mut rest).is_err(), "nothing more arrives");
}
