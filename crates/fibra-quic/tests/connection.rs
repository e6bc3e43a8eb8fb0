//! Connections over loopback: the handshake (ALPN, addresses), a handshake that fails on the
//! certificate's name, `close` seen by the peer with its code, a dropped connection closed,
//! `accept` after the endpoint is closed, and a dropped endpoint's driver letting go of its
//! socket.

mod util;

use fibra::net::UdpSocket;
use fibra_quic::{Config, ConnectionError, Endpoint, Error};
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;
use util::{pair, run, server_with, within, ALPN};

#[test]
fn the_handshake_agrees_on_alpn_and_both_ends_know_each_other() {
    let (alpn, server_side_alpn, same_addrs) = run("handshake", || {
        let p = pair();
        let client_addr = p.client.local_addr().unwrap();
        let server_addr = p.server.local_addr().unwrap();
        let same =
            p.conn.remote_address() == server_addr && p.accepted.remote_address() == client_addr;
        assert!(p.conn.closed_reason().is_none());
        assert!(p.conn.current_mtu() <= 1452);
        (p.conn.alpn(), p.accepted.alpn(), same)
    });
    assert_eq!(alpn.as_deref(), Some(ALPN));
    assert_eq!(server_side_alpn.as_deref(), Some(ALPN));
    assert!(same_addrs);
}

#[test]
fn a_wrong_server_name_fails_the_handshake_with_a_clear_error() {
    let (message, kind, is_handshake, then_ok) = run("wrong name", || {
        let (server, client_config) = server_with(&Config::default());
        let addr = server.local_addr().unwrap();
        let client = util::client();
        let e = client
            .connect(addr, "wrong.example", client_config.clone())
            .unwrap_err();
        let is_handshake = matches!(Error::of(&e), Some(Error::HandshakeFailed { .. }));
        // The server is none the worse: the right name connects.
        let s = server.clone();
        let acceptor = fibra::spawn(move || s.accept().is_some());
        let ok = client.connect(addr, "localhost", client_config).is_ok();
        (
            e.to_string(),
            e.kind(),
            is_handshake,
            ok && acceptor.join().unwrap(),
        )
    });
    println!("{message}");
    assert!(is_handshake, "{message}");
    assert!(message.contains("handshake"), "{message}");
    assert!(message.contains("wrong.example"), "{message}");
    assert!(message.contains("certificate"), "{message}");
    assert_eq!(kind, ErrorKind::Other, "{message}");
    assert!(then_ok);
}

#[test]
fn close_is_seen_by_the_peer_with_its_code_and_reason() {
    let (peer_error, peer_code, reason, own_error) = run("close", || {
        let p = pair();
        p.conn.close(42, b"bye");
        // The peer's next wait fails with the code.
        let e = p.accepted.accept_bi().unwrap_err();
        let code = Error::of(&e).and_then(Error::code);
        let reason = p.accepted.closed_reason();
        // This side's calls fail too, saying it closed the connection itself.
        let own = p.conn.open_bi().unwrap_err();
        (e.to_string(), code, reason, own.to_string())
    });
    println!("{peer_error}\n{own_error}");
    assert_eq!(peer_code, Some(42), "{peer_error}");
    assert!(
        peer_error.contains("42") && peer_error.contains("bye"),
        "{peer_error}"
    );
    match reason {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 42);
            assert_eq!(&c.reason[..], b"bye");
        }
        other => panic!("{other:?}"),
    }
    assert!(own_error.contains("closed by this side"), "{own_error}");
}

#[test]
fn dropping_the_last_handle_closes_the_connection_with_code_0() {
    let (code, kind) = run("drop closes", || {
        let p = pair();
        let (mut send, _recv) = p.conn.open_bi().unwrap();
        send.write_all(b"x").unwrap();
        // The stream holds the connection open; the server sees the stream.
        let (_s, mut r) = p.accepted.accept_bi().unwrap();
        let mut one = [0u8; 1];
        r.read_exact(&mut one).unwrap();
        drop((send, _recv));
        drop(p.conn);
        let e = p.accepted.accept_bi().unwrap_err();
        (Error::of(&e).and_then(Error::code), e.kind())
    });
    assert_eq!(code, Some(0));
    assert_eq!(kind, ErrorKind::ConnectionAborted);
}

#[test]
fn accept_returns_none_after_close_and_new_connections_are_refused() {
    let (waiting, after, refused) = run("accept after close", || {
        let (server, client_config) = server_with(&Config::default());
        let addr = server.local_addr().unwrap();
        // A fiber already waiting in `accept`, on the other worker.
        let s = server.clone();
        let waiter = fibra::fiber::Builder::new()
            .worker(server.worker() + 1)
            .spawn(move || s.accept().is_none())
            .unwrap();
        fibra::time::sleep(Duration::from_millis(10));
        server.close();
        let waiting = waiter.join().unwrap();
        let after = server.accept().is_none();
        let client = util::client();
        let refused = client
            .connect(addr, "localhost", client_config)
            .unwrap_err()
            .to_string();
        (waiting, after, refused)
    });
    println!("{refused}");
    assert!(waiting, "a waiting accept returns None");
    assert!(after, "accept after close returns None");
    // The server answers (it does not just go quiet until the client's idle timeout).
    assert!(refused.contains("refused"), "{refused}");
}

#[test]
fn a_dropped_endpoint_stops_its_driver_and_lets_go_of_the_socket() {
    let rebound = run("endpoint drop", || {
        let p = pair();
        let client_addr = p.client.local_addr().unwrap();
        let server_addr = p.server.local_addr().unwrap();
        drop(p);
        // Once both drivers have drained their (closed) connections and ended, their sockets
        // are closed and the ports can be bound again. Bounded: at most PATIENCE / 10 ms.
        let mut rebound = Vec::new();
        for addr in [client_addr, server_addr] {
            for _ in 0..6000 {
                if UdpSocket::bind(addr).is_ok() {
                    rebound.push(addr);
                    break;
                }
                fibra::time::sleep(Duration::from_millis(10));
            }
        }
        rebound.len()
    });
    assert_eq!(rebound, 2);
}

#[test]
fn eight_clients_at_once_each_get_their_own_connection() {
    let served = run("eight clients", || {
        let (server, client_config) = server_with(&Config::default());
        let addr = server.local_addr().unwrap();
        // Two fibers accept (the accept baton passes between them); each connection gets a
        // fiber that answers one stream with the client's own address, as the server sees it.
        let acceptors: Vec<_> = (0..2)
            .map(|_| {
                let s = server.clone();
                fibra::spawn(move || {
                    let mut n = 0;
                    while let Some(conn) = s.accept() {
                        n += 1;
                        fibra::spawn(move || {
                            let (mut send, mut recv) = conn.accept_bi().unwrap();
                            let mut hello = Vec::new();
                            recv.read_to_end(&mut hello).unwrap();
                            let answer = conn.remote_address().to_string();
                            send.write_all(answer.as_bytes()).unwrap();
                            send.finish().unwrap();
                            // Until the client closes.
                            let _ = conn.accept_bi();
                        });
                    }
                    n
                })
            })
            .collect();
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let config = client_config.clone();
                fibra::spawn(move || {
                    let client = util::client();
                    let conn = client.connect(addr, "localhost", config).unwrap();
                    let (mut send, mut recv) = conn.open_bi().unwrap();
                    send.write_all(b"hello").unwrap();
                    send.finish().unwrap();
                    let mut answer = String::new();
                    recv.read_to_string(&mut answer).unwrap();
                    conn.close(0, b"");
                    answer == client.local_addr().unwrap().to_string()
                })
            })
            .collect();
        let answered: Vec<bool> = clients.into_iter().map(|h| h.join().unwrap()).collect();
        server.close();
        let accepted: usize = acceptors.into_iter().map(|h| h.join().unwrap()).sum();
        (answered, accepted)
    });
    assert_eq!(served, (vec![true; 8], 8));
}

#[test]
fn a_runtime_shutting_down_ends_calls_parked_on_quic() {
    // The root fiber returns while other fibers are parked in `accept`, `accept_bi` and
    // `read`; dropping the runtime cancels them (and the drivers) without a hang.
    within("shutdown", || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(|| {
            let p = pair();
            let server = p.server.clone();
            fibra::spawn(move || server.accept());
            let accepted = p.accepted.clone();
            fibra::spawn(move || accepted.accept_bi().map(|_| ()));
            let (mut send, mut recv) = p.conn.open_bi().unwrap();
            send.write_all(b"x").unwrap();
            fibra::spawn(move || recv.read(&mut [0u8; 8]).map(|_| ()));
            fibra::time::sleep(Duration::from_millis(20));
        });
        drop(rt);
    });
}

#[test]
fn an_endpoint_outside_a_fiber_is_refused() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = Endpoint::client(socket).unwrap_err();
    assert!(e.to_string().contains("fiber"), "{e}");
}
