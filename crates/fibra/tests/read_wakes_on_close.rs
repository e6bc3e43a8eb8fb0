//! A fiber blocked in `read` is woken when the peer closes, or when the stream is shut down.

use fibra::net::{TcpListener, TcpStream, UnixStream};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn peer_close_wakes_a_parked_reader() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let got = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = fibra::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut all = Vec::new();
            s.read_to_end(&mut all).map(|_| all)
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"bye").unwrap();
        fibra::time::sleep(Duration::from_millis(30));
        drop(c);
        reader.join().unwrap()
    });
    assert_eq!(got.unwrap(), b"bye");
}

#[test]
fn close_from_a_plain_thread_wakes_a_parked_reader() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    let reader = rt.spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut buf = [0u8; 16];
        s.read(&mut buf)
    });
    let (peer, _) = std_listener.accept().unwrap();
    std::thread::sleep(Duration::from_millis(30));
    drop(peer);
    assert_eq!(reader.join().unwrap().unwrap(), 0);
}

#[test]
fn shutdown_from_another_fiber_wakes_a_parked_reader() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let n = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (s, _) = listener.accept().unwrap();
        let s = Arc::new(s);
        let s2 = s.clone();
        let reader = fibra::fiber::Builder::new()
            .worker(1)
            .spawn(move || (&*s2).read(&mut [0u8; 8]))
            .unwrap();
        fibra::time::sleep(Duration::from_millis(30));
        s.shutdown(Shutdown::Read).unwrap();
        reader.join().unwrap()
    });
    assert_eq!(n.unwrap(), 0);
}

#[test]
fn unix_stream_pair_close_wakes_reader() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let got = rt.block_on(|| {
        let (a, mut b) = UnixStream::pair().unwrap();
        let h = fibra::spawn(move || {
            let mut a = a;
            let mut s = String::new();
            a.read_to_string(&mut s).map(|_| s)
        });
        b.write_all(b"unix").unwrap();
        fibra::yield_now();
        drop(b);
        h.join().unwrap()
    });
    assert_eq!(got.unwrap(), "unix");
}
