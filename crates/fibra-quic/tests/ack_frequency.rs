//! `Config::ack_frequency`: by default each side asks its peer (with the ACK frequency
//! extension) to acknowledge every tenth packet, and the peer gets the request; at 2, QUIC's
//! own rule, nothing is asked; 0 is refused.

mod util;

use fibra_quic::{Config, Connection};
use std::io::{ErrorKind, Read, Write};
use util::{pair_with, pattern, run};

/// The client asks for 512 KiB on a new stream and reads it all; returns (the client's
/// end, the server's end) after a whole answer.
fn download(config: Config) -> (Connection, Connection) {
    let p = pair_with(&config);
    let accepted = p.accepted.clone();
    let server = fibra::spawn(move || {
        let (mut send, mut recv) = accepted.accept_bi().unwrap();
        let mut ask = Vec::new();
        recv.read_to_end(&mut ask).unwrap();
        send.write_all(&pattern(512 * 1024, ask[0])).unwrap();
        send.finish().unwrap();
        // Until the client has all of it, so that the frames are counted.
        accepted.wait_acknowledged(0).unwrap();
    });
    let (mut send, mut recv) = p.conn.open_bi().unwrap();
    send.write_all(&[7]).unwrap();
    send.finish().unwrap();
    let mut got = Vec::new();
    recv.read_to_end(&mut got).unwrap();
    assert_eq!(got, pattern(512 * 1024, 7));
    server.join().unwrap();
    (p.conn, p.accepted)
}

#[test]
fn by_default_each_side_asks_the_other_to_acknowledge_less_often() {
    let (server_sent, client_received, client_sent) = run("default", || {
        let (conn, accepted) = download(Config::default());
        let (server, client) = (accepted.stats(), conn.stats());
        (
            server.frame_tx.ack_frequency,
            client.frame_rx.ack_frequency,
            client.frame_tx.ack_frequency,
        )
    });
    assert!(server_sent >= 1, "server sent {server_sent} ACK_FREQUENCY");
    assert!(client_received >= 1, "client got {client_received}");
    assert!(client_sent >= 1, "client sent {client_sent}");
}

#[test]
fn at_two_nothing_is_asked() {
    let (server_sent, client_sent) = run("two", || {
        let (conn, accepted) = download(Config {
            ack_frequency: 2,
            ..Config::default()
        });
        (
            accepted.stats().frame_tx.ack_frequency,
            conn.stats().frame_tx.ack_frequency,
        )
    });
    assert_eq!((server_sent, client_sent), (0, 0));
}

#[test]
fn zero_is_refused_with_a_clear_error() {
    let e = Config {
        ack_frequency: 0,
        ..Config::default()
    }
    .transport()
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("ack_frequency"), "{e}");
}
