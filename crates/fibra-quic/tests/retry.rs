//! Address validation with Retry under a handshake flood (`Config::max_handshakes_before_retry`):
//! with a bound of 0 every new client is sent a Retry, comes back with the token and is
//! served; under the bound none is sent; and a flood of a few hundred Initials from as many
//! ports, none of which ever answers, holds the server at the bound (the rest get a Retry,
//! seen on their sockets) while a real client is still served.

mod util;

use fibra::net::UdpSocket;
use fibra_quic::Config;
use std::net::SocketAddr;
use util::wire::{capture_initials, is_initial, is_retry, wait_until, Relay};
use util::{echo_once, one_datagram_hello, run, serve_echo, server_with, PATIENCE};

/// A client served through a relay by a server with `bound`; returns the Retry packets the
/// relay saw, the server's count of them, and the handshakes in progress once the client is
/// served and gone.
fn one_client_through_a_relay(bound: usize) -> (usize, u64, usize) {
    run("one client, through a relay", move || {
        let config = Config {
            max_handshakes_before_retry: bound,
            ..Config::default()
        };
        let (server, client_config) = server_with(&config);
        serve_echo(&server);
        let relay = Relay::start(server.local_addr().unwrap());
        assert!(echo_once(relay.addr, client_config), "the echo came back");
        assert!(wait_until(&server, |s| s.open_connections() == 0));
        let seen = relay.retries_seen();
        relay.stop();
        (seen, server.retries_sent(), server.handshakes_in_progress())
    })
}

#[test]
fn with_a_bound_of_0_every_client_is_sent_a_retry_and_is_still_served() {
    let (seen, sent, handshaking) = one_client_through_a_relay(0);
    println!("Retry packets: {seen} seen by the relay, {sent} sent by the server");
    // One per attempt: a retransmitted first Initial may be retried once more.
    assert!(seen >= 1, "the relay saw no Retry");
    assert_eq!(seen as u64, sent);
    assert_eq!(handshaking, 0);
}

#[test]
fn under_the_bound_no_retry_is_sent() {
    let (seen, sent, handshaking) = one_client_through_a_relay(64);
    assert_eq!((seen, sent), (0, 0));
    assert_eq!(handshaking, 0);
}

/// Connection attempts in the flood, and the server's bound.
const FLOOD: usize = 200;
const BOUND: usize = 8;
/// Attempts sent before their answers are awaited: few enough that the server's receive
/// buffer never overflows (a lost Initial would leave its socket waiting for nothing).
const WAVE: usize = 20;

#[test]
fn a_flood_of_new_connections_is_answered_with_retries_past_the_bound() {
    let (retried, started, sent, handshaking, served) = run("handshake flood", || {
        let config = Config {
            max_handshakes_before_retry: BOUND,
            ..Config::default()
        };
        let (server, client_config) = server_with(&config);
        let accepted = serve_echo(&server);
        let addr = server.local_addr().unwrap();
        let initials = capture_initials(FLOOD, one_datagram_hello(&config));
        let (mut retried, mut started) = (0, 0);
        for wave in initials.chunks(WAVE) {
            // Each Initial from its own port, as from as many (forged) clients.
            let sockets: Vec<UdpSocket> = wave
                .iter()
                .map(|initial| {
                    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                    s.send_to(initial, addr).unwrap();
                    s
                })
                .collect();
            for s in sockets {
                match first_answer(&s, addr) {
                    a if is_retry(&a) => retried += 1,
                    a if is_initial(&a) => started += 1,
                    a => panic!("an answer of neither kind: {:x?}", &a[..a.len().min(8)]),
                }
            }
        }
        let sent = server.retries_sent();
        let handshaking = server.handshakes_in_progress();
        // A real client now: retried too (the bound is reached), it comes back with the
        // token and is served.
        let served = echo_once(addr, client_config);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(server.retries_sent() > sent, "the real client was retried");
        (retried, started, sent, handshaking, served)
    });
    println!("{FLOOD} Initials: {started} handshakes started, {retried} retried");
    assert_eq!(started, BOUND);
    assert_eq!(retried, FLOOD - BOUND);
    assert_eq!(sent as usize, FLOOD - BOUND);
    assert_eq!(handshaking, BOUND);
    assert!(served);
}

/// The first datagram `server` sends to `socket`, within [`PATIENCE`].
fn first_answer(socket: &UdpSocket, server: SocketAddr) -> Vec<u8> {
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = vec![0u8; 65536];
    let (n, from) = socket
        .recv_from(&mut buf)
        .expect("an answer to the Initial");
    assert_eq!(from, server);
    buf.truncate(n);
    buf
}
