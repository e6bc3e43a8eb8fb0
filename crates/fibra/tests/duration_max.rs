//! `Duration::MAX` as a timeout means "forever", as with std; nothing panics adding it to now.

mod util;

use fibra::sync::{mpsc, Notify};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn sleep_for_duration_max_parks_until_cancelled() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let h = rt.spawn(|| fibra::time::sleep(Duration::MAX));
    rt.block_on(|| fibra::time::sleep(Duration::from_millis(20)));
    assert!(!h.is_finished(), "sleep(Duration::MAX) returned");
    drop(rt);
    let payload = h.join().unwrap_err();
    assert!(payload.is::<fibra::Cancelled>(), "not cancelled: a panic");
}

#[test]
fn receive_and_wait_with_duration_max() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let (got, notified) = rt.block_on(|| {
        let (tx, rx) = mpsc::channel();
        let n = Arc::new(Notify::new());
        let n2 = n.clone();
        let r = fibra::spawn(move || rx.recv_timeout(Duration::MAX));
        let w = fibra::spawn(move || n2.wait_timeout(Duration::MAX));
        fibra::time::sleep(Duration::from_millis(10));
        tx.send(7).unwrap();
        n.notify_one();
        (r.join().unwrap(), w.join().unwrap())
    });
    assert_eq!(got, Ok(7));
    assert!(notified);
    // On a plain thread too.
    let (tx, rx) = mpsc::channel();
    tx.send(8).unwrap();
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(8));
    let n = Notify::new();
    n.notify_one();
    assert!(n.wait_timeout(Duration::MAX));
}

#[test]
fn socket_timeouts_of_duration_max() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let echoed = rt.block_on(|| {
        let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_accept_timeout(Some(Duration::MAX)).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = fibra::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::MAX)).unwrap();
            s.set_write_timeout(Some(Duration::MAX)).unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        });
        let mut c = fibra::net::TcpStream::connect_timeout(&addr, Duration::MAX).unwrap();
        c.set_read_timeout(Some(Duration::MAX)).unwrap();
        fibra::time::sleep(Duration::from_millis(5));
        c.write_all(b"ping").unwrap();
        let mut back = [0u8; 4];
        c.read_exact(&mut back).unwrap();
        server.join().unwrap();
        back
    });
    assert_eq!(&echoed, b"ping");
    // A stream used from a plain thread waits in poll(2) with the same timeout.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut peer, _) = listener.accept().unwrap();
    c.set_read_timeout(Some(Duration::MAX)).unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4];
        (&c).read_exact(&mut buf).map(|_| buf)
    });
    std::thread::sleep(Duration::from_millis(10));
    peer.write_all(b"pong").unwrap();
    assert_eq!(&reader.join().unwrap().unwrap(), b"pong");
    assert!(fibra::time::deadline_in(Duration::MAX) > std::time::Instant::now());
}
