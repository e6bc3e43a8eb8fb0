//! HTTP/2 on the server's port: cleartext with prior knowledge, next to HTTP/1.1; the
//! unchanged handler per stream (bodies both ways, streaming, HEAD, panics), many streams on
//! one connection, and graceful shutdown with GOAWAY while a stream is in flight.

mod h2_util;
mod util;

use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;
use fibra_http::{Request, Response, ResponseBody, Settings};
use h2_util::*;
use http::{Method, StatusCode, Version};

/// The routes the tests use.
fn app(mut req: Request) -> Response {
    match req.uri().path() {
        "/hello" => Response::new("hello".into()),
        "/echo" => {
            let body = req.body_mut().read_to_vec(4 << 20).unwrap();
            Response::new(body.into())
        }
        "/big" => Response::new(vec![7u8; 1 << 20].into()),
        "/stream" => Response::new(ResponseBody::stream(|w| {
            for i in 0..100u8 {
                w.write_all(&[i; 1000])?;
            }
            Ok(())
        })),
        "/whoami" => {
            let host = req.headers().get("host").cloned();
            let text = format!("{:?} {:?}", req.version(), host);
            Response::new(text.into())
        }
        "/panic" => panic!("handler panic on purpose"),
        "/close" => Response::builder()
            .header("connection", "close")
            .header("keep-alive", "timeout=5")
            .body("closing".into())
            .unwrap(),
        _ => Response::builder()
            .status(404)
            .body("not found".into())
            .unwrap(),
    }
}

#[test]
fn requests_and_bodies_over_h2c() {
    let srv = util::start(Settings::default(), app);
    runtime().block_on(async {
        let mut c = client(srv.addr).await;
        let (status, headers, body) = exchange(&mut c, Method::GET, "/hello", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, b"hello");
        assert_eq!(headers["content-length"], "5");
        assert!(headers.contains_key("date"));

        // The handler sees HTTP/2 and a Host made from :authority.
        let (_, _, body) = exchange(&mut c, Method::GET, "/whoami", None).await;
        assert_eq!(body, br#"HTTP/2.0 Some("localhost")"#);

        // A 1 MiB request body (more than the stream window: flow control both ways).
        let upload: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
        let (status, _, body) = exchange(
            &mut c,
            Method::POST,
            "/echo",
            Some(Bytes::from(upload.clone())),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(body == upload, "echoed body differs");

        let (_, headers, body) = exchange(&mut c, Method::GET, "/big", None).await;
        assert_eq!(headers["content-length"], "1048576");
        assert!(body.len() == 1 << 20 && body.iter().all(|&b| b == 7));

        let (_, headers, body) = exchange(&mut c, Method::HEAD, "/big", None).await;
        assert_eq!(headers["content-length"], "1048576");
        assert!(body.is_empty());

        let (_, headers, body) = exchange(&mut c, Method::GET, "/stream", None).await;
        assert!(!headers.contains_key("content-length"));
        assert_eq!(body.len(), 100_000);
        assert!(body
            .chunks(1000)
            .enumerate()
            .all(|(i, c)| c.iter().all(|&b| b == i as u8)));

        // Connection-specific headers a handler sets are not sent on HTTP/2.
        let (status, headers, body) = exchange(&mut c, Method::GET, "/close", None).await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"closing"[..]));
        assert!(!headers.contains_key("connection") && !headers.contains_key("keep-alive"));

        // A panicking handler answers 500; the connection goes on.
        let (status, _, _) = exchange(&mut c, Method::GET, "/panic", None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let (status, _, _) = exchange(&mut c, Method::GET, "/nope", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    });
}

#[test]
fn many_streams_at_once_on_one_connection() {
    let srv = util::start(Settings::default(), app);
    runtime().block_on(async {
        let mut c = client(srv.addr).await;
        // One exchange first: the server's SETTINGS (its stream limit) come before its first
        // response, so the client knows the limit before the burst. (Until then a client may
        // open any number of streams, and those past the limit are refused, as RFC 9113
        // §5.1.2 allows.)
        let (status, _, _) = exchange(&mut c, Method::GET, "/hello", None).await;
        assert_eq!(status, StatusCode::OK);
        // More than MAX_CONCURRENT_STREAMS: the client queues the rest as streams end.
        let n = 2 * fibra_http::http2::MAX_CONCURRENT_STREAMS as usize;
        let mut tasks = Vec::new();
        for i in 0..n {
            let mut c = c.clone();
            tasks.push(tokio::spawn(async move {
                let body = Bytes::from(format!("stream {i}"));
                let (status, _, echoed) =
                    exchange(&mut c, Method::POST, "/echo", Some(body.clone())).await;
                assert_eq!(status, StatusCode::OK);
                assert_eq!(echoed, body);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn http1_still_answered_on_the_same_port() {
    let srv = util::start(Settings::default(), app);
    let reply = util::send_and_read_to_close(
        srv.addr,
        b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.ends_with("\r\n\r\nhello"), "{reply}");
    // A request line that is merely malformed still gets its 400.
    let reply = util::send_and_read_to_close(srv.addr, b"GET /a b HTTP/1.1\r\n\r\n");
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
}

#[test]
fn http2_off_in_settings_leaves_the_preface_to_http1() {
    let settings = Settings {
        http2: false,
        ..Settings::default()
    };
    let srv = util::start(settings, app);
    let mut s = raw_connect(srv.addr, &[]);
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    assert!(
        reply.starts_with(b"HTTP/1.1 "),
        "{}",
        String::from_utf8_lossy(&reply)
    );
}

#[test]
fn a_connection_that_is_not_http_at_all_is_closed_without_an_answer() {
    let srv = util::start(Settings::default(), app);
    let reply = util::send_and_read_to_close(srv.addr, b"INVALID CONNECTION PREFACE\r\n\r\n");
    assert_eq!(reply, "");
}

/// A server whose `/slow` waits for a word on the channel returned (other paths answer
/// "fast"), and a raw HTTP/2 connection to it whose stream 1 is in `/slow`'s handler.
fn slow_stream_in_flight() -> (
    util::TestServer,
    std::net::TcpStream,
    fibra::sync::mpsc::Sender<()>,
) {
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let entered_tx = std::sync::Mutex::new(entered_tx);
    let (release_tx, release_rx) = fibra::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let srv = util::start(Settings::default(), move |req: Request| {
        if req.uri().path() == "/slow" {
            entered_tx.lock().unwrap().send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
            return Response::new("slow done".into());
        }
        Response::new("fast".into())
    });
    let mut s = raw_connect(srv.addr, &[]);
    s.write_all(&get(1, "/slow")).unwrap();
    entered_rx.recv_timeout(CLIENT_TIMEOUT).unwrap();
    (srv, s, release_tx)
}

#[test]
fn graceful_shutdown_sends_goaway_and_finishes_the_stream_in_flight() {
    let (srv, mut s, release_tx) = slow_stream_in_flight();

    let shutdown = std::thread::spawn(move || srv.shutdown(Duration::from_secs(30)));
    // GOAWAY while the stream is in flight.
    let goaway = read_until(&mut s, |f| f.ty == GOAWAY).expect("a GOAWAY");
    assert_eq!(goaway.error_code(), 0, "NO_ERROR");
    // Answer the server's PING (its way of timing the final GOAWAY), then let the handler
    // finish: its response still arrives whole.
    release_tx.send(()).unwrap();
    let mut body = Vec::new();
    let mut ended = false;
    while let Some(f) = read_frame(&mut s) {
        if f.ty == PING && f.flags & ACK == 0 {
            s.write_all(&frame(PING, ACK, 0, &f.payload)).unwrap();
        }
        if f.ty == DATA && f.stream == 1 {
            body.extend_from_slice(&f.payload);
            if f.flags & END_STREAM != 0 {
                ended = true;
            }
        }
    }
    assert!(ended, "the stream in flight ended");
    assert_eq!(body, b"slow done");
    shutdown.join().unwrap();
}

/// Graceful shutdown in two steps (RFC 9113 §6.8): the first GOAWAY names any stream and
/// comes with a PING; a stream the client opens before it answers the PING (it may not have
/// read the GOAWAY yet) is still answered, and the final GOAWAY names it.
#[test]
fn a_stream_opened_before_the_client_reads_the_first_goaway_is_answered() {
    let (srv, mut s, release_tx) = slow_stream_in_flight();

    let shutdown = std::thread::spawn(move || srv.shutdown(Duration::from_secs(30)));
    let last_stream = |f: &Frame| u32::from_be_bytes(f.payload[..4].try_into().unwrap());
    let first = read_until(&mut s, |f| f.ty == GOAWAY).expect("a first GOAWAY");
    assert_eq!((last_stream(&first), first.error_code()), (0x7fff_ffff, 0));
    let ping = read_until(&mut s, |f| f.ty == PING && f.flags & ACK == 0).expect("a PING");
    // A request the client sent before reading the GOAWAY, then the PING's answer.
    s.write_all(&get(3, "/fast")).unwrap();
    s.write_all(&frame(PING, ACK, 0, &ping.payload)).unwrap();
    let mut bodies = [Vec::new(), Vec::new()];
    let mut ended = [false, false];
    let mut finals = Vec::new();
    let mut released = false;
    while let Some(f) = read_frame(&mut s) {
        if f.ty == GOAWAY {
            finals.push((last_stream(&f), f.error_code()));
            // The stream in flight may finish now.
            if !released {
                release_tx.send(()).unwrap();
                released = true;
            }
        }
        if f.ty == DATA && (f.stream == 1 || f.stream == 3) {
            let i = usize::from(f.stream == 3);
            bodies[i].extend_from_slice(&f.payload);
            ended[i] |= f.flags & END_STREAM != 0;
        }
    }
    assert_eq!(finals, [(3, 0)], "one final GOAWAY, naming stream 3");
    assert_eq!(ended, [true, true]);
    assert_eq!(bodies, [b"slow done".to_vec(), b"fast".to_vec()]);
    shutdown.join().unwrap();
}

#[test]
fn version_is_http2_for_the_handler() {
    // The handler's view, through the HTTP/1.1 types it already knows.
    let srv = util::start(Settings::default(), |req: Request| {
        assert_eq!(req.version(), Version::HTTP_2);
        Response::new("ok".into())
    });
    runtime().block_on(async {
        let mut c = client(srv.addr).await;
        let (status, _, body) = exchange(&mut c, Method::GET, "/", None).await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"ok"[..]));
    });
}

/// Collects access-log lines.
struct Collect(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl fibra_http::AccessLogSink for Collect {
    fn log(&self, e: &fibra_http::access_log::LogEntry<'_>) {
        let line = format!(
            "{} {} {} {} {} {:?}",
            e.method,
            e.target,
            e.version,
            e.status,
            e.bytes,
            e.user_agent
                .map(|u| String::from_utf8_lossy(u).into_owned())
        );
        self.0.lock().unwrap().push(line);
    }
}

#[test]
fn streams_are_access_logged() {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let settings = Settings {
        access_log_sink: Some(std::sync::Arc::new(Collect(lines.clone()))),
        ..Settings::default()
    };
    let srv = util::start(settings, app);
    runtime().block_on(async {
        let mut c = client(srv.addr).await;
        exchange(&mut c, Method::GET, "/hello?x=1", None).await;
        exchange(&mut c, Method::HEAD, "/big", None).await;
        exchange(&mut c, Method::GET, "/stream", None).await;
    });
    srv.shutdown(Duration::from_secs(5));
    let mut lines = lines.lock().unwrap().clone();
    lines.sort();
    assert_eq!(
        lines,
        [
            "GET /hello?x=1 HTTP/2.0 200 5 None",
            "GET /stream HTTP/2.0 200 100000 None",
            "HEAD /big HTTP/2.0 200 0 None",
        ]
    );
}

#[test]
fn expect_100_continue_is_answered_before_the_body_is_read() {
    let srv = util::start(Settings::default(), app);
    let mut s = raw_connect(srv.addr, &[]);
    let block = request_block("POST", "/echo", &[("expect", "100-continue")]);
    s.write_all(&frame(HEADERS, END_HEADERS, 1, &block))
        .unwrap();
    // The interim response comes first: a HEADERS frame that does not end the stream,
    // while the client has sent no body yet.
    let interim = read_until(&mut s, |f| f.ty == HEADERS && f.stream == 1).unwrap();
    assert_eq!(
        interim.flags & END_STREAM,
        0,
        "an interim response: {interim:?}"
    );
    s.write_all(&frame(DATA, END_STREAM, 1, b"the body"))
        .unwrap();
    let data = read_until(&mut s, |f| f.ty == DATA && f.stream == 1).unwrap();
    assert_eq!(data.payload, b"the body");
}

/// `Settings::alt_svc`: written by the connection on every answer over HTTP/2 and HTTP/1.1, a
/// prepared response's too (it stays prepared), and left out where the
/// handler gave its own.
#[test]
fn the_servers_alt_svc_goes_on_every_answer_unless_the_handler_has_one() {
    let kept = util::prepared(&[("etag", "\"kept\"")], b"kept");
    let ours = "h3=\":4433\"; ma=86400";
    let settings = Settings {
        alt_svc: Some(http::HeaderValue::from_static("h3=\":4433\"; ma=86400")),
        server_header: Some("fibra".into()),
        ..Settings::default()
    };
    let srv = util::start(settings, move |req: Request| match req.uri().path() {
        "/prepared" => Response::prepared(kept.clone()),
        "/own" => Response::builder()
            .header("alt-svc", "clear")
            .body("own".into())
            .unwrap(),
        _ => Response::new("hello".into()),
    });
    runtime().block_on(async {
        let mut c = client(srv.addr).await;
        for _ in 0..2 {
            let (_, headers, body) = exchange(&mut c, Method::GET, "/hello", None).await;
            assert_eq!(body, b"hello");
            assert_eq!(headers["alt-svc"], ours);
            let (_, headers, body) = exchange(&mut c, Method::GET, "/prepared", None).await;
            assert_eq!(body, b"kept");
            assert_eq!(headers["alt-svc"], ours);
            assert_eq!(headers["etag"], "\"kept\"");
            let (_, headers, _) = exchange(&mut c, Method::GET, "/own", None).await;
            let all: Vec<_> = headers.get_all("alt-svc").iter().collect();
            assert_eq!(all, ["clear"]);
        }
    });
    // HTTP/1.1, one connection, the same three answers twice (the second time from the
    // cached head).
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    for _ in 0..2 {
        for path in ["/hello", "/prepared", "/own"] {
            write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                s.read_exact(&mut byte).unwrap();
                head.push(byte[0]);
            }
            let head = String::from_utf8(head).unwrap();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .unwrap()
                .parse()
                .unwrap();
            let mut body = vec![0u8; len];
            s.read_exact(&mut body).unwrap();
            let alt: Vec<&str> = head
                .lines()
                .filter(|l| l.to_ascii_lowercase().starts_with("alt-svc:"))
                .collect();
            if path == "/own" {
                assert_eq!(alt.len(), 1, "{head}");
                assert!(alt[0].ends_with("clear"), "{head}");
            } else {
                assert_eq!(alt, [format!("Alt-Svc: {ours}")], "{head}");
                assert!(head.contains("\r\nServer: fibra\r\n"), "{head}");
            }
        }
    }
}
