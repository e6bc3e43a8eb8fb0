//! `UdpSocket`'s std-like surface over loopback: echo with `send_to`/`recv_from`, a connected
//! pair, `peek_from`, `try_clone`, read timeouts, a receive parking its fiber while another
//! fiber sends, the same calls from plain threads, an ICMP error that must not leave the
//! socket spinning, buffer sizes, and a bind error naming the address.

mod util;

use fibra::net::{UdpSocket, QUIC_BUFFER_SIZE};
use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;
use util::{within, PATIENCE};

fn rt(workers: usize) -> fibra::Runtime {
    fibra::Runtime::builder().workers(workers).build().unwrap()
}

fn loopback() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    // A lost datagram fails the test instead of hanging it.
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

#[test]
fn echo_with_send_to_and_recv_from_in_fibers() {
    let (got, from, client_addr) = within("udp echo", || {
        rt(2).block_on(|| {
            let server = loopback();
            let addr = server.local_addr().unwrap();
            let echo = fibra::spawn(move || {
                let mut buf = [0u8; 64];
                for _ in 0..3 {
                    let (n, peer) = server.recv_from(&mut buf).unwrap();
                    assert_eq!(server.send_to(&buf[..n], peer).unwrap(), n);
                }
            });
            let client = loopback();
            let mut got = Vec::new();
            let mut from = Vec::new();
            for word in [&b"one"[..], b"two", b""] {
                assert_eq!(client.send_to(word, addr).unwrap(), word.len());
                let mut buf = [0u8; 64];
                let (n, peer) = client.recv_from(&mut buf).unwrap();
                got.push(buf[..n].to_vec());
                from.push(peer);
            }
            echo.join().unwrap();
            (got, from, (client.local_addr().unwrap(), addr))
        })
    });
    assert_eq!(got, [&b"one"[..], b"two", b""]);
    assert!(from.iter().all(|&a| a == client_addr.1));
    assert_ne!(client_addr.0, client_addr.1);
}

#[test]
fn connected_sockets_send_recv_peek_and_clone() {
    within("udp connected", || {
        rt(1).block_on(|| {
            let a = loopback();
            let b = loopback();
            let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
            assert_eq!(a.peer_addr().unwrap_err().kind(), ErrorKind::NotConnected);
            a.connect(ba).unwrap();
            b.connect(aa).unwrap();
            assert_eq!(a.peer_addr().unwrap(), ba);

            a.send(b"hello").unwrap();
            let mut buf = [0u8; 16];
            let (n, from) = b.peek_from(&mut buf).unwrap();
            assert_eq!((&buf[..n], from), (&b"hello"[..], aa));
            // Peeked, not taken: `recv` returns it again.
            assert_eq!(b.recv(&mut buf).unwrap(), 5);
            assert_eq!(&buf[..5], b"hello");

            // A datagram from a third socket is not for a connected socket.
            let stranger = loopback();
            stranger.send_to(b"noise", ba).unwrap();
            a.send(b"after").unwrap();
            let n = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"after");

            // A clone is the same socket, registered on its own.
            let b2 = b.try_clone().unwrap();
            assert_eq!(b2.local_addr().unwrap(), ba);
            b2.set_read_timeout(Some(PATIENCE)).unwrap();
            a.send(b"clone").unwrap();
            let n = b2.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"clone");
            b2.send(b"back").unwrap();
            let n = a.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"back");
        })
    });
}

#[test]
fn read_timeout_fires_in_a_fiber_and_on_a_plain_thread() {
    let in_fiber = within("udp read timeout", || {
        rt(1).block_on(|| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            assert_eq!(s.read_timeout(), None);
            s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
            assert_eq!(s.read_timeout(), Some(Duration::from_millis(30)));
            let mut buf = [0u8; 8];
            let kind = s.recv_from(&mut buf).unwrap_err().kind();
            // The socket still works after the timeout.
            let peer = loopback();
            peer.send_to(b"late", s.local_addr().unwrap()).unwrap();
            s.set_read_timeout(Some(PATIENCE)).unwrap();
            let (n, _) = s.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"late");
            kind
        })
    });
    assert_eq!(in_fiber, ErrorKind::TimedOut);

    let on_thread = within("udp read timeout, plain thread", || {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
        s.recv(&mut [0u8; 8]).unwrap_err().kind()
    });
    assert_eq!(on_thread, ErrorKind::TimedOut);

    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = s.set_write_timeout(Some(Duration::ZERO)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    assert_eq!(s.write_timeout(), Some(PATIENCE));
}

#[test]
fn recv_parks_its_fiber_while_another_fiber_sends() {
    // One worker: the sender can only run once the receiver has parked, not blocked it.
    let got = within("udp recv parks", || {
        rt(1).block_on(|| {
            let rx = Arc::new(loopback());
            let addr = rx.local_addr().unwrap();
            let (ready_tx, ready_rx) = fibra::sync::oneshot::channel();
            let receiver = {
                let rx = rx.clone();
                fibra::spawn(move || {
                    ready_tx.send(()).unwrap();
                    let mut buf = [0u8; 16];
                    let (n, _) = rx.recv_from(&mut buf).unwrap();
                    buf[..n].to_vec()
                })
            };
            ready_rx.recv().unwrap();
            let sender = fibra::spawn(move || {
                loopback().send_to(b"wake up", addr).unwrap();
            });
            sender.join().unwrap();
            receiver.join().unwrap()
        })
    });
    assert_eq!(got, b"wake up");
}

#[test]
fn the_same_calls_block_plain_threads() {
    within("udp on plain threads", || {
        let server = loopback();
        let addr = server.local_addr().unwrap();
        let echo = std::thread::spawn(move || {
            let mut buf = [0u8; 32];
            let (n, peer) = server.recv_from(&mut buf).unwrap();
            server.send_to(&buf[..n], peer).unwrap();
        });
        let client = loopback();
        client.connect(addr).unwrap();
        client.send(b"thread").unwrap();
        let mut buf = [0u8; 32];
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"thread");
        echo.join().unwrap();
    });
}

#[test]
fn a_socket_a_fiber_used_blocks_a_plain_thread_then_serves_fibers_again() {
    within("udp handed to a thread", || {
        rt(1).block_on(|| {
            let s = loopback();
            let peer = loopback();
            let addr = s.local_addr().unwrap();
            peer.send_to(b"one", addr).unwrap();
            let mut buf = [0u8; 8];
            s.recv_from(&mut buf).unwrap(); // registers `s` with this worker
            let t = std::thread::spawn(move || {
                let mut buf = [0u8; 8];
                let (n, _) = s.recv_from(&mut buf).unwrap();
                (buf[..n].to_vec(), s)
            });
            fibra::time::sleep(Duration::from_millis(10));
            peer.send_to(b"two", addr).unwrap();
            let (got, s) = fibra::task::spawn_blocking(move || t.join().unwrap());
            assert_eq!(got, b"two");
            peer.send_to(b"three", addr).unwrap();
            let (n, _) = s.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"three");
        })
    });
}

/// A connected socket told "port unreachable" by ICMP gets the error once
/// (`ConnectionRefused`) and then waits again: the error must not leave it marked ready for
/// ever, where a receive would retry without parking and never time out.
#[test]
fn an_icmp_error_is_reported_once_and_the_socket_waits_again() {
    let (first, second, after) = within("udp ICMP error", || {
        rt(1).block_on(|| {
            let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
            let closed_addr = closed.local_addr().unwrap();
            drop(closed);
            let s = Arc::new(loopback());
            s.connect(closed_addr).unwrap();
            let (ready_tx, ready_rx) = fibra::sync::oneshot::channel();
            let receiver = {
                let s = s.clone();
                fibra::spawn(move || {
                    let mut buf = [0u8; 8];
                    ready_tx.send(()).unwrap();
                    // Parked when the error arrives: the driver reports it as an event.
                    let first = s.recv(&mut buf).unwrap_err().kind();
                    s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
                    let second = s.recv(&mut buf).unwrap_err().kind();
                    (first, second)
                })
            };
            ready_rx.recv().unwrap();
            s.send(b"anyone?").unwrap();
            let (first, second) = receiver.join().unwrap();

            // And it still works, connected elsewhere.
            let live = loopback();
            s.connect(live.local_addr().unwrap()).unwrap();
            s.set_read_timeout(Some(PATIENCE)).unwrap();
            s.send(b"hi").unwrap();
            let mut buf = [0u8; 8];
            let (n, _) = live.recv_from(&mut buf).unwrap();
            (first, second, buf[..n].to_vec())
        })
    });
    assert_eq!(first, ErrorKind::ConnectionRefused);
    assert_eq!(second, ErrorKind::TimedOut);
    assert_eq!(after, b"hi");
}

#[test]
fn buffer_sizes_are_asked_for_and_read_back() {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_recv_buffer_size(QUIC_BUFFER_SIZE).unwrap();
    s.set_send_buffer_size(QUIC_BUFFER_SIZE).unwrap();
    let (rcv, snd) = (s.recv_buffer_size().unwrap(), s.send_buffer_size().unwrap());
    // Linux grants min(asked, net.core.[rw]mem_max) and reports twice that.
    let max = |name: &str| -> Option<usize> {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    if let (Some(rmax), Some(wmax)) = (max("rmem_max"), max("wmem_max")) {
        assert_eq!(rcv, 2 * QUIC_BUFFER_SIZE.min(rmax), "SO_RCVBUF granted");
        assert_eq!(snd, 2 * QUIC_BUFFER_SIZE.min(wmax), "SO_SNDBUF granted");
    }
    println!("asked {QUIC_BUFFER_SIZE} each way; SO_RCVBUF reads {rcv}, SO_SNDBUF {snd}");
}

#[test]
fn a_bind_error_names_the_address() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let e = UdpSocket::bind(addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse);
    assert!(e.to_string().contains(&addr.to_string()), "{e}");

    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = s.connect("[::1]:9").unwrap_err();
    assert!(e.to_string().contains("[::1]:9"), "{e}");
}
