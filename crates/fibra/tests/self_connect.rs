//! A dial to a local port on which nothing listens can connect the socket to itself (TCP's
//! simultaneous open, when the kernel picks that port as the source). `TcpStream::connect`
//! must refuse such a connection and close it without leaving it in `TIME_WAIT` on the port.
//! Made deterministic here by binding the source port to the target port.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use fibra::net::TcpStream;

/// A loopback port on which nothing listens (bound, read and released).
fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// Dials `addr` from `addr` itself and checks the refusal, then that the port is free to
/// listen on (a self-connected socket in `TIME_WAIT` would hold it: the socket had no
/// `SO_REUSEADDR`, so even a listener with it could not bind).
fn assert_refused_and_port_free(dial: impl Fn(&SocketAddr) -> io::Result<TcpStream>) {
    let addr = free_port();
    match dial(&addr) {
        Ok(s) => panic!(
            "connected: {:?} -> {:?}",
            s.local_addr().ok(),
            s.peer_addr().ok()
        ),
        Err(e) => {
            assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
            assert!(e.to_string().contains("itself"), "{e}");
            assert!(e.to_string().contains(&addr.to_string()), "{e}");
        }
    }
    let listener = TcpListener::bind(addr).expect("the port is free again (no TIME_WAIT)");
    drop(listener);
}

#[test]
fn a_plain_thread_dial_to_itself_is_refused() {
    assert_refused_and_port_free(|addr| TcpStream::connect_from(addr, addr, None));
    assert_refused_and_port_free(|addr| {
        TcpStream::connect_from(addr, addr, Some(Duration::from_secs(10)))
    });
}

#[test]
fn a_fiber_dial_to_itself_is_refused() {
    fibra::run(|| {
        assert_refused_and_port_free(|addr| TcpStream::connect_from(addr, addr, None));
        assert_refused_and_port_free(|addr| {
            TcpStream::connect_from(addr, addr, Some(Duration::from_secs(10)))
        });
    });
}

#[test]
fn a_dial_from_a_bound_address_reaches_a_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let from = free_port();
    fibra::run(move || {
        let s = TcpStream::connect_from(&from, &to, Some(Duration::from_secs(10))).unwrap();
        assert_eq!(s.local_addr().unwrap(), from);
        assert_eq!(s.peer_addr().unwrap(), to);
    });
    let (_, peer) = listener.accept().unwrap();
    assert_eq!(peer, from);
}
