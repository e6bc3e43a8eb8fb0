//! Server-sent events over HTTP/2 (prior knowledge, the h2 crate's client): the events
//! arrive as DATA, and the server's graceful shutdown ends the stream properly (END_STREAM
//! after the connection's GOAWAY), not by cutting the connection at the end of the grace
//! period; the producer's next send fails.

#[path = "../../fibra-http/tests/h2_util/mod.rs"]
mod h2_util;
mod raw_http;

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use fibra_web::response::sse::{Event, Sse, SseSender};
use fibra_web::routing::get;
use fibra_web::test::TestServer;
use fibra_web::Router;
use raw_http::Conn;

const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn shutdown_ends_an_http2_event_stream_with_end_stream() {
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
                    // Nothing more until the stream is closed: only the shutdown ends it.
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
    let addr = server.addr();
    // A request held open keeps the server (and the producer) running until the producer
    // has reported.
    let mut held = Conn::open(addr);
    held.get("/hold", &[]);
    entered_rx.recv_timeout(PATIENCE).expect("/hold entered");

    let rt = h2_util::runtime();
    let mut stopper = None;
    rt.block_on(async {
        let mut h2 = h2_util::client(addr).await;
        let req = http::Request::get(format!("http://localhost{}", "/events"))
            .body(())
            .unwrap();
        let (resp, _) = h2.send_request(req, true).unwrap();
        let resp = tokio::time::timeout(PATIENCE, resp).await.unwrap().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let mut body = resp.into_body();
        let mut text = String::new();
        while !text.contains("data: hello\n\n") {
            let chunk: Bytes = body.data().await.expect("an event").unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        stopper = Some(std::thread::spawn(move || server.shutdown()));
        // Every remaining frame arrives without error, and the stream ends (END_STREAM).
        while let Some(chunk) = tokio::time::timeout(PATIENCE, body.data())
            .await
            .expect("the stream ends well before the grace period")
        {
            let chunk = chunk.expect("no reset, no cut connection");
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        assert_eq!(text, "data: hello\n\n");
    });
    let err = report_rx
        .recv_timeout(PATIENCE)
        .expect("the producer ended")
        .expect_err("the producer's send failed");
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
    assert!(err.to_string().contains("shutting down"), "{err}");

    release_tx.send(()).unwrap();
    let head = held.head();
    assert_eq!(String::from_utf8(held.body(&head)).unwrap(), "released");
    drop(held);
    stopper.unwrap().join().unwrap();
}
