//! `max_connections`: with a limit of 2, a third connection is not served while the first two
//! are open (it waits in the backlog), and is served once one of them closes — with one
//! worker and with two (the limit is over all workers).

mod util;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use fibra_http::{Request, Response};
use util::*;

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

/// Sends one keep-alive request and checks its response.
fn round_trip(s: &mut TcpStream) {
    s.write_all(GET).unwrap();
    let (head, body) = read_response(s, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"hi");
}

fn check_limit(workers: usize) {
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .workers(workers)
        .max_connections(2)
        .serve(|_req: Request| Response::new("hi".into()))
        .expect("server starts");
    let addr: SocketAddr = handle.local_addr();

    let mut c1 = connect(addr);
    let mut c2 = connect(addr);
    round_trip(&mut c1);
    round_trip(&mut c2);
    assert_eq!(handle.connections(), 2);

    // The third connects (the kernel completes the handshake) but gets no answer.
    let mut c3 = connect(addr);
    c3.write_all(GET).unwrap();
    c3.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut byte = [0u8; 1];
    for _ in 0..3 {
        match c3.read(&mut byte) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            other => panic!("third connection was served over the limit: {other:?}"),
        }
        // The first two are still served meanwhile.
        round_trip(&mut c1);
        round_trip(&mut c2);
        assert_eq!(handle.connections(), 2);
    }

    // One of the first two closes: the third is served (bounded by the client timeout).
    drop(c1);
    c3.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let (head, body) = read_response(&mut c3, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"hi");
    round_trip(&mut c2);
    round_trip(&mut c3);

    // The count follows (bounded wait: the server notices the close asynchronously).
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    while handle.connections() != 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(handle.connections(), 2);
    handle.shutdown(Duration::from_secs(1));
}

#[test]
fn third_waits_for_a_slot_one_worker() {
    check_limit(1);
}

#[test]
fn third_waits_for_a_slot_two_workers() {
    check_limit(2);
}
