//! A socket whose open file description has another descriptor (a `dup` taken before or after
//! the socket was wrapped) stays in epoll after the socket is closed; the poller must not
//! report events for the dropped socket's freed state (run under AddressSanitizer in CI).

use fibra::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

#[test]
fn events_on_a_duplicated_fd_after_the_socket_is_dropped_are_harmless() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let echoed = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut keep: Vec<OwnedFd> = Vec::new();
        let mut peers = Vec::new();
        for _ in 0..16 {
            let mut client = TcpStream::connect(addr).unwrap();
            let (server, _) = listener.accept().unwrap();
            client.write_all(b"a").unwrap();
            let mut b = [0u8; 1];
            (&server).read_exact(&mut b).unwrap(); // registered with this worker
            keep.push(server.as_fd().try_clone_to_owned().unwrap());
            drop(server); // its state is released; the description lives on in `keep`
            peers.push(client);
        }
        // Events for the dropped sockets: data and then hang-ups.
        for c in &mut peers {
            c.write_all(b"more").unwrap();
        }
        fibra::time::sleep(Duration::from_millis(20));
        drop(peers);
        fibra::time::sleep(Duration::from_millis(20));
        // The worker still serves sockets normally (new states may reuse the freed memory).
        let server = fibra::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"hello").unwrap();
        let mut back = [0u8; 5];
        c.read_exact(&mut back).unwrap();
        server.join().unwrap();
        drop(keep);
        back
    });
    assert_eq!(&echoed, b"hello");
}

#[test]
fn a_stream_made_from_a_cloned_std_socket() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let n = rt.block_on(|| {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = std_listener.local_addr().unwrap();
        let mut total = 0;
        for _ in 0..8 {
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            let (accepted, _) = std_listener.accept().unwrap();
            let dup = accepted.try_clone().unwrap(); // before `from_std`
            let s = TcpStream::from_std(accepted).unwrap();
            client.write_all(b"z").unwrap();
            let mut b = [0u8; 1];
            total += (&s).read(&mut b).unwrap();
            drop(s);
            client.write_all(b"after").unwrap();
            fibra::time::sleep(Duration::from_millis(5));
            drop(dup);
        }
        total
    });
    assert_eq!(n, 8);
}
