//! Graceful shutdown: idle connections closed at once, the request in flight finishes with
//! `Connection: close`, new connections are refused afterwards.

mod util;

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use fibra_http::{Response, Settings};
use util::*;

#[test]
fn in_flight_finishes_idle_closed() {
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let entered_tx = std::sync::Mutex::new(entered_tx);
    // A fibra channel: the handler's fiber parks on it without blocking the worker.
    let (release_tx, release_rx) = fibra::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let srv = start(Settings::default(), move |req: fibra_http::Request| {
        if req.uri().path() == "/slow" {
            entered_tx.lock().unwrap().send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
            return Response::new("slow done".into());
        }
        Response::new("fast".into())
    });
    let addr = srv.addr;

    // An idle keep-alive connection.
    let mut idle = connect(addr);
    idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut idle, false).1, b"fast");

    // A request in flight.
    let mut busy = connect(addr);
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    entered_rx
        .recv_timeout(CLIENT_TIMEOUT)
        .expect("slow handler started");

    let stopper = std::thread::spawn(move || srv.shutdown(Duration::from_secs(10)));

    // The idle connection is closed at once, while the slow request is still running.
    assert_eq!(read_to_close(&mut idle), "");
    release_tx.send(()).unwrap();
    let (head, body) = read_response(&mut busy, false);
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert_eq!(body, b"slow done");
    assert_eq!(read_to_close(&mut busy), "");
    stopper.join().unwrap();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
}

#[test]
fn grace_deadline_force_closes() {
    let srv = start(Settings::default(), |_req| {
        fibra::time::sleep(Duration::from_secs(30));
        Response::new("too late".into())
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    srv.shutdown(Duration::from_millis(100));
    assert!(!read_to_close(&mut s).contains("too late"));
}
