//! The wire: no datagram either side sends exceeds the configured 1,452 bytes. A relay fiber
//! between client and server receives every datagram on its own socket (GRO off, so each
//! arrives on its own, GSO trains included) and records the largest, while a megabyte goes
//! each way and path MTU discovery has room to probe; and neither socket refused a packet
//! or a GSO train.

mod util;

use fibra::net::UdpSocket;
use fibra_quic::{Config, DEFAULT_MAX_UDP_PAYLOAD_SIZE};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use util::{pattern, receive_until, run, server_with};

#[test]
fn the_default_config_caps_datagrams_at_1452_bytes() {
    let config = Config::default();
    assert_eq!(config.max_udp_payload_size, 1452);
    assert_eq!(DEFAULT_MAX_UDP_PAYLOAD_SIZE, 1452);
    assert_eq!(config.endpoint().get_max_udp_payload_size(), 1452);
    assert!(config.transport().is_ok());
    let too_small = Config {
        max_udp_payload_size: 1000,
        ..Config::default()
    };
    assert!(too_small.transport().is_err());
}

/// What the relay saw.
#[derive(Default)]
struct Seen {
    datagrams: AtomicUsize,
    largest: AtomicUsize,
}

/// Relays datagrams between the first client that writes and `server` until `stop`.
fn relay(socket: UdpSocket, server: SocketAddr, seen: Arc<Seen>, stop: Arc<AtomicBool>) {
    let mut client = None;
    receive_until(&socket, &stop, "relay", |d, from| {
        seen.datagrams.fetch_add(1, Relaxed);
        seen.largest.fetch_max(d.len(), Relaxed);
        let to = if from == server {
            match client {
                Some(c) => c,
                None => return,
            }
        } else {
            client = Some(from);
            server
        };
        socket.send_to(d, to).unwrap();
    });
}

#[test]
fn no_datagram_on_the_wire_exceeds_1452_bytes() {
    let (datagrams, largest, mtu, refused) = run("datagram sizes", || {
        let (server, client_config) = server_with(&Config::default());
        let server_end = server.clone();
        let server_addr = server.local_addr().unwrap();
        let relay_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let relay_addr = relay_socket.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let relayed = {
            let (seen, stop) = (seen.clone(), stop.clone());
            fibra::spawn(move || relay(relay_socket, server_addr, seen, stop))
        };
        // The server echoes one stream.
        fibra::spawn(move || {
            let conn = server.accept().unwrap();
            let (mut send, mut recv) = conn.accept_bi().unwrap();
            let mut all = Vec::new();
            recv.read_to_end(&mut all).unwrap();
            send.write_all(&all).unwrap();
            send.finish().unwrap();
            // Keep the connection until the client has read everything and closes.
            let _ = conn.accept_bi();
        });
        let client = util::client();
        let conn = client
            .connect(relay_addr, "localhost", client_config)
            .unwrap();
        let (mut send, mut recv) = conn.open_bi().unwrap();
        let data = pattern(1 << 20, 1);
        send.write_all(&data).unwrap();
        send.finish().unwrap();
        let mut back = Vec::new();
        recv.read_to_end(&mut back).unwrap();
        assert!(back == data, "the echo differs");
        let mtu = conn.current_mtu();
        conn.close(0, b"done");
        stop.store(true, Relaxed);
        relayed.join().unwrap();
        (
            seen.datagrams.load(Relaxed),
            seen.largest.load(Relaxed),
            mtu,
            // Every train the sockets were given (up to 45 datagrams) was taken.
            (server_end.packets_refused(), client.packets_refused()),
        )
    });
    println!("{datagrams} datagrams relayed, the largest {largest} bytes; path MTU found: {mtu}");
    assert!(
        datagrams > 700,
        "a megabyte each way is more than {datagrams} datagrams"
    );
    assert!(largest <= 1452, "a datagram of {largest} bytes");
    // Initial packets are padded to 1,200 bytes.
    assert!(largest >= 1200, "{largest}");
    assert!(mtu <= 1452, "{mtu}");
    assert_eq!(
        refused,
        (0, 0),
        "packets the sockets refused (server, client)"
    );
}
