//! `Server::serve` called from a fiber: the server runs on the caller's runtime (no thread or
//! runtime of its own), so a one-worker runtime made by `fibra::Builder::run` serves
//! from the calling thread; `shutdown` parks only the calling fiber, so a request in flight on
//! the same worker still finishes.

mod util;

use std::io::Write;
use std::thread::ThreadId;
use std::time::Duration;

use fibra_http::{Response, Server};
use util::*;

/// Runs `client` on a plain thread (its blocking sockets must not hold the worker) and parks
/// the calling fiber until it returns.
fn on_a_client_thread<T: Send + 'static>(client: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = fibra::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(client());
    });
    rx.recv().expect("the client thread returns")
}

#[test]
fn a_one_worker_runtime_serves_from_the_calling_thread() {
    let caller = std::thread::current().id();
    let (answers, handler_threads, refused) = fibra::Runtime::builder()
        .workers(1)
        .run(|| {
            let (seen_tx, seen_rx) = std::sync::mpsc::channel::<ThreadId>();
            let seen_tx = std::sync::Mutex::new(seen_tx);
            let server = Server::bind("127.0.0.1:0")
                .serve(move |req: fibra_http::Request| {
                    seen_tx
                        .lock()
                        .unwrap()
                        .send(std::thread::current().id())
                        .unwrap();
                    Response::new(format!("hello {}", req.uri().path()).into())
                })
                .expect("the server starts");
            let addr = server.local_addr();
            let answers = on_a_client_thread(move || {
                let mut s = connect(addr);
                (0..3)
                    .map(|i| {
                        let (head, body) = get(&mut s, &format!("/{i}"));
                        (status_of(&head), String::from_utf8(body).unwrap())
                    })
                    .collect::<Vec<_>>()
            });
            server.shutdown(Duration::from_secs(5));
            let refused = on_a_client_thread(move || std::net::TcpStream::connect(addr).is_err());
            (answers, seen_rx.try_iter().collect::<Vec<_>>(), refused)
        })
        .unwrap();
    let expected: Vec<_> = (0..3).map(|i| (200, format!("hello /{i}"))).collect();
    assert_eq!(answers, expected);
    assert_eq!(handler_threads, vec![caller; 3]);
    assert!(refused, "still accepting after shutdown");
}

#[test]
fn shutdown_from_a_fiber_lets_the_request_in_flight_finish() {
    let (head, body) = fibra::Runtime::builder()
        .workers(1)
        .run(|| {
            let (entered_tx, entered_rx) = fibra::sync::oneshot::channel::<()>();
            let entered_tx = std::sync::Mutex::new(Some(entered_tx));
            let (release_tx, release_rx) = fibra::sync::oneshot::channel::<()>();
            let release_rx = std::sync::Mutex::new(Some(release_rx));
            let server = Server::bind("127.0.0.1:0")
                .serve(move |_req: fibra_http::Request| {
                    if let Some(tx) = entered_tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    let rx = release_rx.lock().unwrap().take();
                    if let Some(rx) = rx {
                        rx.recv().unwrap();
                    }
                    Response::new("slow done".into())
                })
                .expect("the server starts");
            let addr = server.local_addr();
            let (done_tx, done_rx) = fibra::sync::oneshot::channel();
            std::thread::spawn(move || {
                let mut s = connect(addr);
                s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
                    .unwrap();
                let _ = done_tx.send(read_response(&mut s, false));
            });
            entered_rx.recv().expect("the handler started");
            // The handler waits on this worker; a shutdown that blocked the thread would
            // never let it finish.
            let releaser = fibra::spawn(move || {
                fibra::time::sleep(Duration::from_millis(20));
                release_tx.send(()).unwrap();
            });
            server.shutdown(Duration::from_secs(10));
            releaser.join().unwrap();
            done_rx.recv().expect("the client read an answer")
        })
        .unwrap();
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert_eq!(body, b"slow done");
}

#[test]
fn workers_beyond_the_runtimes_are_the_runtimes() {
    // Four accept loops asked of a two-worker runtime: two, and every answer comes.
    let statuses = fibra::Runtime::builder()
        .workers(2)
        .run(|| {
            let server = Server::bind("127.0.0.1:0")
                .workers(4)
                .serve(hello)
                .expect("the server starts");
            let addr = server.local_addr();
            let statuses = on_a_client_thread(move || {
                (0..8)
                    .map(|_| status_of(&get(&mut connect(addr), "/").0))
                    .collect::<Vec<_>>()
            });
            server.shutdown(Duration::from_secs(5));
            statuses
        })
        .unwrap();
    assert_eq!(statuses, vec![200; 8]);
}
