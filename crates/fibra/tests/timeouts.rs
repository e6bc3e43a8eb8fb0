//! Sleeping and read/write timeouts.

use fibra::net::{TcpListener, TcpStream};
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

#[test]
fn sleep_waits_at_least_the_duration() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let (a, b) = rt.block_on(|| {
        let t = Instant::now();
        fibra::time::sleep(Duration::from_millis(30));
        let a = t.elapsed();
        let t = Instant::now();
        fibra::time::sleep_until(Instant::now() + Duration::from_millis(10));
        (a, t.elapsed())
    });
    assert!(a >= Duration::from_millis(30), "{a:?}");
    assert!(b >= Duration::from_millis(10), "{b:?}");
}

#[test]
fn sleeping_fibers_wake_in_deadline_order() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let order = rt.block_on(|| {
        let (tx, rx) = fibra::sync::mpsc::channel();
        for ms in [40u64, 10, 30, 20] {
            let tx = tx.clone();
            fibra::spawn(move || {
                fibra::time::sleep(Duration::from_millis(ms));
                tx.send(ms).unwrap();
            });
        }
        drop(tx);
        rx.iter().collect::<Vec<_>>()
    });
    assert_eq!(order, vec![10, 20, 30, 40]);
}

#[test]
fn read_timeout_fires_and_the_stream_stays_usable() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        assert_eq!(server.read_timeout(), Some(Duration::from_millis(50)));
        let t = Instant::now();
        let mut buf = [0u8; 8];
        let err = server.read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(t.elapsed() >= Duration::from_millis(50));
        // Data that arrives later is still read.
        client.write_all(b"late").unwrap();
        server.set_read_timeout(None).unwrap();
        server.read_exact(&mut buf[..4]).unwrap();
        assert_eq!(&buf[..4], b"late");
    });
}

#[test]
fn zero_timeout_is_rejected_like_std() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let e = s.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    });
}

#[test]
fn write_timeout_fires_when_the_peer_does_not_read() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server
            .set_write_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let chunk = vec![0u8; 1 << 16];
        let mut written = 0usize;
        let err = loop {
            match server.write(&chunk) {
                Ok(n) => written += n,
                Err(e) => break e,
            }
            assert!(written < 1 << 30, "socket buffers never filled");
        };
        assert_eq!(err.kind(), ErrorKind::TimedOut);
    });
}

#[test]
fn timeouts_work_on_plain_threads_too() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let s = TcpStream::connect(addr).unwrap();
    let _peer = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
    let err = (&s).read(&mut [0u8; 4]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
}
