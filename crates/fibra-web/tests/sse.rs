//! Server-sent events on the wire: events in order, keep-alive comments while the producer
//! waits, a client that leaves ends the producer, the server's shutdown ends the stream (over
//! HTTP/1.1 and, with END_STREAM after the GOAWAY, over HTTP/2: the h2 crate's client); and
//! the whole stream through `TestClient`.

#[path = "../../fibra-http/tests/h2_util/mod.rs"]
mod h2_util;
mod raw_http;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use fibra_web::response::sse::{Event, KeepAlive, Sse, SseSender};
use fibra_web::routing::get;
use fibra_web::test::{TestClient, TestServer};
use fibra_web::Router;
use raw_http::Conn;

/// Long enough for anything on a loaded machine; only a failing test waits it out.
const PATIENCE: Duration = Duration::from_secs(60);

/// Reads chunks until the text read has `until` `times` times (failing if the body ends).
fn read_until_n(conn: &mut Conn, text: &mut String, until: &str, times: usize) {
    while text.matches(until).count() < times {
        match conn.chunk() {
            Some(c) => text.push_str(std::str::from_utf8(&c).unwrap()),
            None => panic!("the stream ended before {until:?}: {text:?}"),
        }
    }
}

fn read_until(conn: &mut Conn, text: &mut String, until: &str) {
    read_until_n(conn, text, until, 1);
}

fn three_events() -> Sse {
    Sse::new(|tx: &mut SseSender| {
        tx.send(
            Event::default()
                .id("1")
                .retry(Duration::from_secs(2))
                .data("one"),
        )?;
        tx.send(Event::default().id("2").event("update").data("two\nlines"))?;
        tx.send(
            Event::default()
                .id("3")
                .json_data(serde_json::json!({"n": 3}))?,
        )
    })
}

const THREE_EVENTS: &str = "id: 1\nretry: 2000\ndata: one\n\n\
     id: 2\nevent: update\ndata: two\ndata: lines\n\n\
     id: 3\ndata: {\"n\":3}\n\n";

#[test]
fn events_arrive_in_order_then_the_stream_ends() {
    let server = TestServer::spawn(Router::new().route("/events", get(three_events))).unwrap();
    let mut conn = Conn::open(server.addr());
    conn.get("/events", &[]);
    let head = conn.head();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("cache-control"), Some("no-cache"));
    assert_eq!(head.header("transfer-encoding"), Some("chunked"));
    let body = String::from_utf8(conn.body(&head)).unwrap();
    assert_eq!(body, THREE_EVENTS);
}

#[test]
fn keep_alive_comments_come_while_the_producer_waits() {
    // The producer waits on a channel the test holds (a fibra channel: a fiber parks on it,
    // a thread sends).
    let (release_tx, release_rx) = fibra::sync::mpsc::channel::<()>();
    let release_rx = Mutex::new(Some(release_rx));
    let app = Router::new().route(
        "/events",
        get(move || {
            let rx = release_rx.lock().unwrap().take().expect("one request");
            Sse::new(move |tx: &mut SseSender| {
                tx.send(Event::default().data("first"))?;
                rx.recv().map_err(std::io::Error::other)?;
                tx.send(Event::default().data("second"))
            })
            .keep_alive(
                KeepAlive::new()
                    .interval(Duration::from_millis(20))
                    .text("ping"),
            )
        }),
    );
    let server = TestServer::spawn(app).unwrap();
    let mut conn = Conn::open(server.addr());
    conn.get("/events", &[]);
    assert_eq!(conn.head().status, 200);
    let mut text = String::new();
    read_until(&mut conn, &mut text, "data: first\n\n");
    read_until_n(&mut conn, &mut text, ": ping\n\n", 2);
    release_tx.send(()).unwrap();
    read_until(&mut conn, &mut text, "data: second\n\n");
    assert_eq!(conn.chunk(), None, "the stream ends with the producer");
    let pings = text.matches(": ping\n\n").count();
    assert!(pings >= 2, "{text:?}");
    assert_eq!(
        text,
        format!(
            "data: first\n\n{}data: second\n\n",
            ": ping\n\n".repeat(pings)
        )
    );
}

/// A producer that sends an event every few milliseconds until a send fails, and reports
/// how it ended.
fn until_send_fails(report: mpsc::Sender<std::io::Result<()>>) -> Sse {
    Sse::new(move |tx: &mut SseSender| {
        for i in 0..20_000 {
            if let Err(e) = tx.send(Event::default().data(i.to_string())) {
                let kind = e.kind();
                report.send(Err(e)).unwrap();
                return Err(kind.into());
            }
            fibra::time::sleep(Duration::from_millis(5));
        }
        report.send(Ok(())).unwrap();
        Ok(())
    })
}

#[test]
fn a_client_that_leaves_makes_send_fail() {
    let (report_tx, report_rx) = mpsc::channel();
    let report_tx = Mutex::new(report_tx);
    let app = Router::new().route(
        "/events",
        get(move || until_send_fails(report_tx.lock().unwrap().clone())),
    );
    let server = TestServer::spawn(app).unwrap();
    let mut conn = Conn::open(server.addr());
    conn.get("/events", &[]);
    assert_eq!(conn.head().status, 200);
    let mut text = String::new();
    read_until(&mut conn, &mut text, "data: 0\n\n");
    conn.stream().shutdown(std::net::Shutdown::Both).unwrap();
    drop(conn);
    let ended = report_rx
        .recv_timeout(PATIENCE)
        .expect("the producer ended");
    let err = ended.expect_err("send failed");
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
}

/// A server whose `/events` producer sends one event and then waits, sending nothing, until
/// its stream is closed (only the shutdown can end the connection's wait), and reports how
/// its next send failed; and a `/hold` request, held open, that keeps the server (and so the
/// producer) running until the test has heard from the producer.
struct ShutdownFixture {
    server: TestServer,
    held: Conn,
    report_rx: mpsc::Receiver<std::io::Result<()>>,
    release_tx: fibra::sync::mpsc::Sender<()>,
}

impl ShutdownFixture {
    fn start() -> ShutdownFixture {
        let (report_tx, report_rx) = mpsc::channel::<std::io::Result<()>>();
        let report_tx = Mutex::new(report_tx);
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let entered_tx = Mutex::new(entered_tx);
        let (release_tx, release_rx) = fibra::sync::mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let app = Router::new()
            .route(
                "/events",
                get(move || {
                    let report = report_tx.lock().unwrap().clone();
                    Sse::new(move |tx: &mut SseSender| {
                        tx.send(Event::default().data("hello"))?;
                        for _ in 0..20_000 {
                            if tx.is_closed() {
                                let err = tx.send(Event::default().data("late")).unwrap_err();
                                report.send(Err(err)).unwrap();
                                return Ok(());
                            }
                            fibra::time::sleep(Duration::from_millis(5));
                        }
                        report.send(Ok(())).unwrap();
                        Ok(())
                    })
                }),
            )
            .route(
                "/hold",
                get(move || {
                    entered_tx.lock().unwrap().send(()).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                    "released"
                }),
            );
        let server = TestServer::spawn(app).unwrap();
        let mut held = Conn::open(server.addr());
        held.get("/hold", &[]);
        entered_rx.recv_timeout(PATIENCE).expect("/hold entered");
        ShutdownFixture {
            server,
            held,
            report_rx,
            release_tx,
        }
    }
}

/// The fixture's end: the producer's send failed because of the shutdown; then the held
/// request is released and answered, and the shutdown (`stopper`) completes.
fn finish(
    mut held: Conn,
    report_rx: mpsc::Receiver<std::io::Result<()>>,
    release_tx: fibra::sync::mpsc::Sender<()>,
    stopper: std::thread::JoinHandle<()>,
) {
    let ended = report_rx
        .recv_timeout(PATIENCE)
        .expect("the producer ended");
    let err = ended.expect_err("the producer's send failed");
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
    assert!(err.to_string().contains("shutting down"), "{err}");

    release_tx.send(()).unwrap();
    let head = held.head();
    assert_eq!(String::from_utf8(held.body(&head)).unwrap(), "released");
    assert!(held.at_end());
    // (The server lingers until the client closes too.)
    drop(held);
    stopper.join().unwrap();
}

#[test]
fn the_server_s_shutdown_ends_the_stream() {
    let ShutdownFixture {
        server,
        held,
        report_rx,
        release_tx,
    } = ShutdownFixture::start();
    let mut events = Conn::open(server.addr());
    events.get("/events", &[]);
    assert_eq!(events.head().status, 200);
    let mut text = String::new();
    read_until(&mut events, &mut text, "data: hello\n\n");

    let stopper = std::thread::spawn(move || server.shutdown());
    // The stream ends properly (its last chunk), not by a connection cut at the end of the
    // grace period, and the connection closes.
    assert_eq!(events.chunk(), None, "the stream ended: {text:?}");
    assert!(events.at_end());
    drop(events);
    finish(held, report_rx, release_tx, stopper);
}

#[test]
fn the_server_s_shutdown_ends_an_http2_stream_with_end_stream() {
    let ShutdownFixture {
        server,
        held,
        report_rx,
        release_tx,
    } = ShutdownFixture::start();
    let addr = server.addr();
    let mut stopper = None;
    h2_util::runtime().block_on(async {
        let mut h2 = h2_util::client(addr).await;
        let req = http::Request::get("http://localhost/events")
            .body(())
            .unwrap();
        let (resp, _) = h2.send_request(req, true).unwrap();
        let resp = tokio::time::timeout(PATIENCE, resp).await.unwrap().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let mut body = resp.into_body();
        let mut text = String::new();
        while !text.contains("data: hello\n\n") {
            let chunk = body.data().await.expect("an event").unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        stopper = Some(std::thread::spawn(move || server.shutdown()));
        // Every remaining frame arrives without error, and the stream ends (END_STREAM after
        // the connection's GOAWAY), well before the grace period would cut the connection.
        while let Some(chunk) = tokio::time::timeout(PATIENCE, body.data())
            .await
            .expect("the stream ends well before the grace period")
        {
            let chunk = chunk.expect("no reset, no cut connection");
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        assert_eq!(text, "data: hello\n\n");
    });
    finish(held, report_rx, release_tx, stopper.unwrap());
}

#[test]
fn a_producer_s_error_cuts_the_stream_short() {
    let app = Router::new().route(
        "/events",
        get(|| {
            Sse::new(|tx: &mut SseSender| {
                tx.send(Event::default().data("partial"))?;
                Err(std::io::Error::other("the source failed"))
            })
        }),
    );
    let server = TestServer::spawn(app).unwrap();
    let mut conn = Conn::open(server.addr());
    conn.get("/events", &[]);
    assert_eq!(conn.head().status, 200);
    let rest = String::from_utf8(conn.rest()).unwrap();
    // The event's chunk, and then the connection's end without the last chunk.
    assert!(rest.contains("data: partial\n\n"), "{rest:?}");
    assert!(!rest.ends_with("0\r\n\r\n"), "{rest:?}");
}

#[test]
fn the_test_client_collects_every_event() {
    let ran = Arc::new(AtomicBool::new(false));
    let ran2 = ran.clone();
    let app = Router::new().route("/events", get(three_events)).route(
        "/watched",
        get(move || {
            let ran = ran2.clone();
            Sse::new(move |_tx: &mut SseSender| {
                ran.store(true, Ordering::SeqCst);
                Ok(())
            })
        }),
    );
    let client = TestClient::new(app);
    let res = client.get("/events").send();
    assert_eq!(res.status(), 200);
    assert_eq!(res.header("content-type"), Some("text/event-stream"));
    assert_eq!(res.header("cache-control"), Some("no-cache"));
    assert_eq!(res.text(), THREE_EVENTS);
    // A HEAD gets the head; the producer never runs.
    let res = client.head("/watched").send();
    assert_eq!(res.header("content-type"), Some("text/event-stream"));
    assert!(res.bytes().is_empty());
    assert!(!ran.load(Ordering::SeqCst));
}
