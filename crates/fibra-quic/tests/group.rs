//! A group of server endpoints on one UDP port, one per worker (`Endpoint::server_group`):
//! new connections are spread over the members, and a connection stays with the member that
//! accepted it when its client's address changes (NAT rebinding), whether the kernel steers
//! its datagrams there (the steering program) or another member forwards them.

mod util;

use fibra::net::UdpSocket;
use fibra_quic::proto::{ClientConfig, ServerConfig};
use fibra_quic::{Config, Connection, Endpoint, Peer};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use util::nat::Nat;
use util::{certificate, client, pattern, run, serve_echo, ALPN};

/// Each member's count of connections accepted.
type Counts = Vec<std::sync::Arc<std::sync::atomic::AtomicUsize>>;

/// A group of `members` on loopback with `config`, each member echoing; returns the members,
/// their accepted-connection counters, and a client configuration that trusts them.
fn group(members: usize, config: &Config) -> (Vec<Endpoint>, Counts, ClientConfig) {
    let (server, client) = configs(config);
    let group =
        Endpoint::server_group("127.0.0.1:0".parse().unwrap(), members, config, server).unwrap();
    let counts = group.iter().map(serve_echo).collect();
    (group, counts, client)
}

/// A server configuration with a new certificate, and a client one that trusts it.
fn configs(config: &Config) -> (ServerConfig, ClientConfig) {
    let cert = certificate();
    let tls = Config::server_tls(cert.chain, cert.key, &[ALPN]).unwrap();
    let client_tls = Config::client_tls(cert.roots, &[ALPN]).unwrap();
    (
        config.server(tls).unwrap(),
        config.client(client_tls).unwrap(),
    )
}

/// Has one stream of `len` bytes echoed on `conn`; returns whether it came back whole.
fn echo(conn: &Connection, len: usize, seed: u8) -> bool {
    let (mut send, mut recv) = conn.open_bi().unwrap();
    let data = pattern(len, seed);
    send.write_all(&data).unwrap();
    send.finish().unwrap();
    let mut back = Vec::new();
    recv.read_to_end(&mut back).unwrap();
    back == data
}

fn accepted(counts: &Counts) -> Vec<usize> {
    counts.iter().map(|c| c.load(Relaxed)).collect()
}

/// Datagrams forwarded, summed over the members: (handed over, taken in).
fn forwarded(group: &[Endpoint]) -> (u64, u64) {
    group
        .iter()
        .map(Endpoint::forwarded)
        .fold((0, 0), |a, f| (a.0 + f.0, a.1 + f.1))
}

/// [`forwarded`] once every datagram handed over has been taken in, or as it stands after
/// 10 s of waiting (well inside the test's own bound, so a failure shows the counts). A
/// member counts a datagram taken in when its driver next runs, so the last
/// acknowledgements or the close of a connection may still be in its mailbox when the client
/// is done; one that was lost never arrives, and the counts stay apart.
fn forwarded_settled(group: &[Endpoint]) -> (u64, u64) {
    for _ in 0..1_000 {
        let fwd = forwarded(group);
        if fwd.0 == fwd.1 {
            return fwd;
        }
        fibra::time::sleep(std::time::Duration::from_millis(10));
    }
    forwarded(group)
}

#[test]
fn the_members_share_one_port_and_each_runs_on_its_worker() {
    run("a group's shape", || {
        let (group, _, _) = group(2, &Config::default());
        let addrs: Vec<SocketAddr> = group.iter().map(|e| e.local_addr().unwrap()).collect();
        assert_eq!(addrs[0], addrs[1]);
        assert_ne!(addrs[0].port(), 0);
        let workers: Vec<usize> = group.iter().map(Endpoint::worker).collect();
        assert_eq!(workers, [0, 1]);
        assert_eq!(forwarded(&group), (0, 0));
    });
}

#[test]
fn a_group_of_none_or_of_more_than_a_byte_can_tell_apart_is_refused() {
    run("group sizes", || {
        let cert = certificate();
        let tls = Config::server_tls(cert.chain, cert.key, &[ALPN]).unwrap();
        let server = Config::default().server(tls).unwrap();
        for members in [0, 257] {
            let e = Endpoint::server_group(
                "127.0.0.1:0".parse().unwrap(),
                members,
                &Config::default(),
                server.clone(),
            )
            .unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains(&members.to_string()), "{e}");
        }
    });
}

/// Connections: enough that both members get some whatever their IDs (each lands on a
/// member by its client's random connection ID: all 32 on one has odds of 2^-31).
const CLIENTS: usize = 32;

#[test]
fn new_connections_are_spread_over_the_members_and_all_served() {
    run("connections over a group", || {
        let (group, counts, client_config) = group(2, &Config::default());
        let addr = group[0].local_addr().unwrap();
        let fibers: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let config = client_config.clone();
                fibra::spawn(move || {
                    let client = client();
                    let conn = client.connect(addr, "localhost", config).unwrap();
                    let ok = echo(&conn, 3_000, i as u8);
                    conn.close(0, b"done");
                    ok
                })
            })
            .collect();
        let echoed = fibers.into_iter().map(|f| f.join().unwrap());
        assert_eq!(echoed.filter(|&ok| ok).count(), CLIENTS, "every echo whole");
        let per_member = accepted(&counts);
        println!(
            "connections per member: {per_member:?}, steered: {}",
            group[0].steered()
        );
        assert_eq!(per_member.iter().sum::<usize>(), CLIENTS);
        assert!(per_member.iter().all(|&n| n > 0), "{per_member:?}");
        if group[0].steered() {
            // The kernel put every datagram on its member at once.
            assert_eq!(forwarded(&group), (0, 0));
        }
    });
}

/// Rebinds at most this many times, looking for one that the kernel's hash sends to the
/// other member (each does with odds of 1/2).
const REBINDS: usize = 40;

/// One connection through a [`Nat`] that moves the client to a new port before each of up
/// to [`REBINDS`] echoes, stopping early (after 4) once `enough` says so; returns the
/// accepted counts, the forwarded totals, whether steering was on, and the rebinds made.
fn rebinding(
    config: Config,
    enough: impl Fn(&[Endpoint]) -> bool + Send + 'static,
) -> (Vec<usize>, (u64, u64), bool, usize) {
    run("NAT rebinding over a group", move || {
        let (group, counts, client_config) = group(2, &config);
        let mut nat = Nat::start(group[0].local_addr().unwrap());
        let client = client();
        let conn = client
            .connect(nat.addr, "localhost", client_config)
            .unwrap();
        assert!(echo(&conn, 20_000, 0), "the first echo");
        let mut rebinds = 0;
        while rebinds < REBINDS {
            let at = nat.rebind();
            rebinds += 1;
            assert!(
                echo(&conn, 20_000, rebinds as u8),
                "the echo after rebinding to {at}"
            );
            if rebinds >= 4 && enough(&group) {
                break;
            }
        }
        assert_eq!(conn.remote_address(), nat.addr);
        conn.close(0, b"done");
        (
            accepted(&counts),
            forwarded_settled(&group),
            group[0].steered(),
            rebinds,
        )
    })
}

#[test]
fn without_steering_a_rebound_clients_datagrams_are_forwarded_to_its_member() {
    let config = Config {
        steering: false,
        ..Config::default()
    };
    let (per_member, fwd, steered, rebinds) = rebinding(config, |g| forwarded(g).1 > 0);
    println!("accepted {per_member:?}, forwarded {fwd:?} over {rebinds} rebinds");
    assert!(!steered);
    // One connection, on one member, throughout.
    assert_eq!(per_member.iter().sum::<usize>(), 1, "{per_member:?}");
    assert!(
        fwd.1 > 0,
        "no datagram reached the wrong member in {rebinds} rebinds"
    );
    assert_eq!(fwd.0, fwd.1, "every datagram handed over was taken in");
}

#[test]
fn with_steering_a_rebound_clients_datagrams_go_straight_to_its_member() {
    let (per_member, fwd, steered, rebinds) = rebinding(Config::default(), |_| false);
    println!(
        "accepted {per_member:?}, forwarded {fwd:?} over {rebinds} rebinds, steered {steered}"
    );
    assert_eq!(per_member.iter().sum::<usize>(), 1, "{per_member:?}");
    if steered {
        assert_eq!(fwd, (0, 0), "the kernel steered every datagram");
    } else {
        println!("this kernel refused the steering program: the members forwarded instead");
    }
}

#[test]
fn a_port_already_held_is_refused_even_by_another_group() {
    run("a held port", || {
        let (first, _, _) = group(2, &Config::default());
        let addr = first[0].local_addr().unwrap();
        let cert = certificate();
        let tls = Config::server_tls(cert.chain, cert.key, &[ALPN]).unwrap();
        let server = Config::default().server(tls).unwrap();
        let e = Endpoint::server_group(addr, 2, &Config::default(), server).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
        assert!(e.to_string().contains(&addr.to_string()), "{e}");
    });
}

/// `to`'s side of a peer link: datagrams with `generation` go to `to`.
fn peer_of(to: &Endpoint, generation: u16) -> Peer {
    let to = to.clone();
    Peer {
        generation,
        forward: Box::new(move |from, datagram| {
            to.deliver(from, datagram);
            true
        }),
    }
}

#[test]
fn an_upgrades_new_group_reads_the_sockets_and_hands_the_old_one_its_connections() {
    run("a handover between groups", || {
        let config = Config::default();
        let (server, client_config) = configs(&config);
        let old =
            Endpoint::server_group("127.0.0.1:0".parse().unwrap(), 2, &config, server.clone())
                .unwrap();
        let old_counts: Counts = old.iter().map(serve_echo).collect();
        let addr = old[0].local_addr().unwrap();
        let old_client = client();
        let old_conn = old_client
            .connect(addr, "localhost", client_config.clone())
            .unwrap();
        assert!(echo(&old_conn, 20_000, 1), "before the upgrade");

        // The new process's group, on copies of the same sockets, in member order.
        let sockets = old
            .iter()
            .map(|e| {
                let fd = e.socket().expect("a member's socket").try_clone_to_owned();
                UdpSocket::from_std(std::net::UdpSocket::from(fd.unwrap())).unwrap()
            })
            .collect();
        let old_generation = old[0].generation().unwrap();
        let new_generation = old_generation.wrapping_add(1);
        let new = Endpoint::server_group_on(sockets, new_generation, &config, server).unwrap();
        let new_counts: Counts = new.iter().map(serve_echo).collect();
        assert_eq!(new[0].local_addr().unwrap(), addr);
        old[0].set_peer(Some(peer_of(&new[0], new_generation)));
        new[0].set_peer(Some(peer_of(&old[0], old_generation)));
        for e in &old {
            e.set_receiving(false);
        }

        // The old connection goes on, its datagrams read by the new group and handed over.
        for round in 0..4 {
            assert!(
                echo(&old_conn, 20_000, 2 + round),
                "old connection, round {round}"
            );
        }
        let handed: u64 = new.iter().map(Endpoint::handed_to_peer).sum();
        assert!(handed > 0, "the new group handed the old one nothing");
        // A new connection is the new group's.
        let new_client = client();
        let new_conn = new_client
            .connect(addr, "localhost", client_config)
            .unwrap();
        assert!(
            echo(&new_conn, 20_000, 9),
            "a connection made after the upgrade"
        );
        assert_eq!(accepted(&old_counts).iter().sum::<usize>(), 1);
        assert_eq!(accepted(&new_counts).iter().sum::<usize>(), 1);
        assert_eq!(old.iter().map(Endpoint::handed_to_peer).sum::<u64>(), 0);
        println!("handed to the old group: {handed} datagrams");
        old_conn.close(0, b"done");
        new_conn.close(0, b"done");
        old[0].set_peer(None);
        new[0].set_peer(None);
    });
}
