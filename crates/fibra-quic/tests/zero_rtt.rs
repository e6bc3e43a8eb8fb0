//! 0-RTT (`Config::zero_rtt`): a client that holds a session ticket from an earlier
//! connection sends its first stream's data before the handshake is done
//! (`Endpoint::connect_early`), and the server sees that stream as opened by early data
//! (`RecvStream::is_0rtt`), a later one not; a server without 0-RTT makes the client wait
//! for the handshake, and nothing is early.

mod util;

use fibra_quic::{Config, Connection, Endpoint};
use std::io::{Read, Write};
use util::{certificate, client, run, ALPN};

/// A server with `server_0rtt` whose connections answer each stream with one byte (1 if
/// the stream was opened by 0-RTT data) and the stream's bytes; and a client configuration
/// with 0-RTT that trusts it.
fn server(server_0rtt: bool) -> (Endpoint, fibra_quic::proto::ClientConfig) {
    let cert = certificate();
    let on = Config {
        zero_rtt: true,
        ..Config::default()
    };
    let server_config = Config {
        zero_rtt: server_0rtt,
        ..Config::default()
    };
    let tls = Config::server_tls(cert.chain, cert.key, &[ALPN]).unwrap();
    let server = Endpoint::with_config(
        fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap(),
        &server_config,
        Some(server_config.server(tls).unwrap()),
    )
    .unwrap();
    let s = server.clone();
    fibra::spawn(move || {
        while let Some(conn) = s.accept() {
            fibra::spawn(move || {
                while let Ok((mut send, mut recv)) = conn.accept_bi() {
                    fibra::spawn(move || {
                        let early = recv.is_0rtt();
                        let mut all = Vec::new();
                        if recv.read_to_end(&mut all).is_ok() {
                            let _ = send.write_all(&[u8::from(early)]);
                            let _ = send.write_all(&all);
                            let _ = send.finish();
                        }
                    });
                }
            });
        }
    });
    let client_tls = Config::client_tls(cert.roots, &[ALPN]).unwrap();
    (server, on.client(client_tls).unwrap())
}

/// One stream on `conn`: sends `data`; returns the server's "early" byte and whether the
/// echo was whole.
fn exchange(conn: &Connection, data: &[u8]) -> (bool, bool) {
    let (mut send, mut recv) = conn.open_bi().unwrap();
    send.write_all(data).unwrap();
    send.finish().unwrap();
    let mut back = Vec::new();
    recv.read_to_end(&mut back).unwrap();
    (back[0] == 1, &back[1..] == data)
}

#[test]
fn a_resumed_client_sends_its_first_stream_in_0rtt_and_the_server_knows_it() {
    run("0-RTT", || {
        let (server, config) = server(true);
        let addr = server.local_addr().unwrap();
        let c = client();
        // The first connection: a full handshake, and a ticket for the next.
        let first = c.connect(addr, "localhost", config.clone()).unwrap();
        assert_eq!(exchange(&first, b"first"), (false, true));
        assert!(!first.accepted_0rtt().unwrap());
        first.close(0, b"done");

        let second = c.connect_early(addr, "localhost", config).unwrap();
        assert_eq!(
            exchange(&second, b"early request"),
            (true, true),
            "opened in 0-RTT"
        );
        assert!(
            second.accepted_0rtt().unwrap(),
            "the server took the early data"
        );
        assert_eq!(
            exchange(&second, b"later"),
            (false, true),
            "opened after the handshake"
        );
        second.close(0, b"done");
    });
}

#[test]
fn a_server_without_0rtt_makes_the_client_wait_and_nothing_is_early() {
    run("no 0-RTT", || {
        let (server, config) = server(false);
        let addr = server.local_addr().unwrap();
        let c = client();
        let first = c.connect(addr, "localhost", config.clone()).unwrap();
        assert_eq!(exchange(&first, b"first"), (false, true));
        first.close(0, b"done");
        let second = c.connect_early(addr, "localhost", config).unwrap();
        assert!(
            !second.is_handshaking(),
            "connect_early waited for the handshake"
        );
        assert_eq!(exchange(&second, b"request"), (false, true));
        assert!(!second.accepted_0rtt().unwrap());
        second.close(0, b"done");
    });
}
