//! Bad input at the QUIC layer: nothing crashes, and a well-behaved client on the same
//! server is served after each. Garbage datagrams of every size; Initial packets cut short,
//! and one replayed from other ports; the 3× amplification limit towards an address that
//! never answers (RFC 9000 §8.1); a client opening more streams than allowed (held back by
//! the stream limit, not an error); and a client that stops acknowledging mid-response (the
//! server gives up at its idle timeout and forgets the connection).

mod util;

use fibra_quic::Config;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use util::wire::{capture_initial, wait_until, Relay};
use util::{echo_once, one_datagram_hello, run, serve_echo, server_with, PATIENCE};

/// A short idle timeout, so that handshakes nobody finishes are given up within the test.
fn short_idle() -> Config {
    Config {
        max_idle_timeout: Duration::from_secs(2),
        ..Config::default()
    }
}

/// xorshift64: the same "random" bytes on every run.
struct Bytes(u64);

impl Bytes {
    fn fill(&mut self, out: &mut [u8]) {
        for b in out {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *b = self.0 as u8;
        }
    }
}

/// Garbage of `len` bytes in one of four shapes: anything; a long header claiming QUIC v1
/// (an "Initial" whose protection and payload are noise); a long header with an unknown
/// version (the server may answer Version Negotiation); a short header.
fn garbage(rng: &mut Bytes, len: usize, shape: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    rng.fill(&mut d);
    let header: &[u8] = match shape {
        0 => &[],
        1 => &[0xc3, 0, 0, 0, 1, 8],
        2 => &[0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 8],
        _ => &[0x43],
    };
    let n = header.len().min(len);
    d[..n].copy_from_slice(&header[..n]);
    d
}

#[test]
fn garbage_datagrams_of_every_size_are_dropped_and_a_client_is_still_served() {
    let (sent, accepted, served) = run("garbage", || {
        let (server, client_config) = server_with(&short_idle());
        let accepted = serve_echo(&server);
        let addr = server.local_addr().unwrap();
        let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rng = Bytes(0x9e37_79b9_7f4a_7c15);
        let sizes = [
            0, 1, 2, 5, 6, 7, 20, 21, 100, 600, 1199, 1200, 1201, 1452, 1500, 2000, 4000, 9000,
            65507,
        ];
        let mut sent = 0;
        // Twice: before a client connects, and while one is being served.
        let client = {
            let config = client_config.clone();
            move || echo_once(addr, config)
        };
        let mut served = Vec::new();
        for round in 0..2 {
            for &len in &sizes {
                for shape in 0..4 {
                    raw.send_to(&garbage(&mut rng, len, shape), addr).unwrap();
                    sent += 1;
                }
            }
            if round == 0 {
                served.push(fibra::spawn(client.clone()));
            }
        }
        served.push(fibra::spawn(client));
        let served: Vec<bool> = served.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(wait_until(&server, |s| s.open_connections() == 0));
        assert_eq!(server.handshakes_in_progress(), 0);
        (sent, accepted.load(Relaxed), served)
    });
    println!("{sent} garbage datagrams");
    assert_eq!(accepted, 2, "only the real clients are accepted");
    assert_eq!(served, [true, true]);
}

/// Everything `socket` has received so far (it must not block: the sender has stopped).
fn drain(socket: &std::net::UdpSocket) -> Vec<usize> {
    socket.set_nonblocking(true).unwrap();
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    loop {
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => got.push(n),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return got,
            Err(e) => panic!("{e}"),
        }
    }
}

/// A plain socket whose first answer from the server is awaited on a thread of its own
/// (a blocking `recv` must not hold a fibra worker); returns it with that answer's length.
fn first_answer(socket: std::net::UdpSocket) -> (std::net::UdpSocket, usize) {
    fibra::task::spawn_blocking(move || {
        socket.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut buf = vec![0u8; 65536];
        let (n, _) = socket.recv_from(&mut buf).expect("an answer");
        (socket, n)
    })
}

#[test]
fn initials_cut_short_or_replayed_start_nothing_that_lasts() {
    let (accepted, served) = run("truncated and replayed Initials", || {
        let config = short_idle();
        let (server, client_config) = server_with(&config);
        let accepted = serve_echo(&server);
        let addr = server.local_addr().unwrap();
        let initial = capture_initial(one_datagram_hello(&config));
        let cut = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for len in [1, 5, 6, 7, 20, 50, 100, 600, 1000, 1199, initial.len() - 1] {
            cut.send_to(&initial[..len], addr).unwrap();
        }
        // Whole, but with its authentication tag broken.
        let mut forged = initial.clone();
        *forged.last_mut().unwrap() ^= 1;
        cut.send_to(&forged, addr).unwrap();
        // Whole, from a port that never answers: a handshake starts (its first answer
        // shows it), then again from another port while it is in progress, and once more
        // after the server has given it up.
        let first = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        first.send_to(&initial, addr).unwrap();
        let (_first, _) = first_answer(first);
        let again = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        again.send_to(&initial, addr).unwrap();
        let mut served = vec![echo_once(addr, client_config.clone())];
        assert!(wait_until(&server, |s| s.open_connections() == 0));
        let later = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        later.send_to(&initial, addr).unwrap();
        served.push(echo_once(addr, client_config));
        assert!(wait_until(&server, |s| s.open_connections() == 0));
        assert_eq!(server.handshakes_in_progress(), 0);
        (accepted.load(Relaxed), served)
    });
    assert_eq!(accepted, 2, "only the real clients are accepted");
    assert_eq!(served, [true, true]);
}

#[test]
fn an_address_that_never_answers_gets_at_most_three_times_what_it_sent() {
    let (sent, got, served) = run("amplification", || {
        let config = short_idle();
        let (server, client_config) = server_with(&config);
        serve_echo(&server);
        let addr = server.local_addr().unwrap();
        let initial = capture_initial(one_datagram_hello(&config));
        let victim = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        victim.send_to(&initial, addr).unwrap();
        // The handshake has started once something comes back; it is over (given up at the
        // idle timeout, through every retransmission) once the server holds no connection.
        let (victim, first) = first_answer(victim);
        assert!(wait_until(&server, |s| s.open_connections() == 0));
        let mut got: Vec<usize> = vec![first];
        got.extend(drain(&victim));
        (initial.len(), got, echo_once(addr, client_config))
    });
    let total: usize = got.iter().sum();
    println!(
        "sent {sent} bytes, got {total} in {} datagrams: {got:?}",
        got.len()
    );
    assert!(total > 0);
    assert!(total <= 3 * sent, "{total} bytes for {sent}");
    assert!(served);
}

/// The server's limit on concurrent bidirectional streams, and the streams the client opens.
const STREAM_LIMIT: u32 = 4;
const STREAMS: usize = 20;

#[test]
fn streams_past_the_limit_wait_for_credit_and_the_connection_goes_on() {
    let (max_open, answered, reason) = run("too many streams", || {
        let config = Config {
            max_concurrent_bidi_streams: STREAM_LIMIT,
            ..Config::default()
        };
        let p = util::pair_with(&config);
        // The server holds each stream until the limit's worth are open at once, then
        // echoes; it records the most it ever had open.
        let open = Arc::new(AtomicUsize::new(0));
        let max_open = Arc::new(AtomicUsize::new(0));
        let full = Arc::new(fibra::sync::Notify::new());
        let accepted = p.accepted.clone();
        let (o, m, f) = (open.clone(), max_open.clone(), full.clone());
        fibra::spawn(move || {
            while let Ok((mut send, mut recv)) = accepted.accept_bi() {
                let (o, m, f) = (o.clone(), m.clone(), f.clone());
                fibra::spawn(move || {
                    let now = o.fetch_add(1, Relaxed) + 1;
                    m.fetch_max(now, Relaxed);
                    // A baton: each waiter woken wakes the next, and a notification that
                    // comes before its wait is kept as a permit.
                    if now < STREAM_LIMIT as usize && m.load(Relaxed) < STREAM_LIMIT as usize {
                        f.wait();
                    }
                    f.notify_one();
                    let mut all = Vec::new();
                    recv.read_to_end(&mut all).unwrap();
                    o.fetch_sub(1, Relaxed);
                    send.write_all(&all).unwrap();
                    send.finish().unwrap();
                });
            }
        });
        let requests: Vec<_> = (0..STREAMS)
            .map(|i| {
                let conn = p.conn.clone();
                fibra::spawn(move || {
                    let (mut send, mut recv) = conn.open_bi().unwrap();
                    send.write_all(format!("stream {i}").as_bytes()).unwrap();
                    send.finish().unwrap();
                    let mut back = String::new();
                    recv.read_to_string(&mut back).unwrap();
                    back == format!("stream {i}")
                })
            })
            .collect();
        let answered = requests
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&ok| ok)
            .count();
        let reason = p.conn.closed_reason();
        (max_open.load(Relaxed), answered, reason)
    });
    assert_eq!(max_open, STREAM_LIMIT as usize);
    assert_eq!(answered, STREAMS);
    assert!(reason.is_none(), "{reason:?}");
}

#[test]
fn a_client_that_stops_acknowledging_is_given_up_at_the_idle_timeout() {
    let (write_error, served) = run("a silent client", || {
        let config = short_idle();
        let (server, client_config) = server_with(&config);
        let addr = server.local_addr().unwrap();
        // Each stream: "big" is answered with far more than the flow and congestion windows
        // let through unacknowledged (the write's outcome is reported); anything else is
        // echoed.
        let (tx, rx) = fibra::sync::mpsc::channel();
        let s = server.clone();
        fibra::spawn(move || {
            while let Some(conn) = s.accept() {
                let tx = tx.clone();
                fibra::spawn(move || {
                    while let Ok((mut send, mut recv)) = conn.accept_bi() {
                        let mut request = Vec::new();
                        if recv.read_to_end(&mut request).is_err() {
                            continue;
                        }
                        if request == b"big" {
                            let body = util::pattern(16 << 20, 3);
                            let _ = tx.send(send.write_all(&body).map_err(|e| e.to_string()));
                        } else if send.write_all(&request).is_ok() {
                            let _ = send.finish();
                        }
                    }
                });
            }
        });
        let relay = Relay::start(addr);
        let silent = util::client();
        let conn = silent
            .connect(relay.addr, "localhost", client_config.clone())
            .unwrap();
        let (mut send, mut recv) = conn.open_bi().unwrap();
        send.write_all(b"big").unwrap();
        send.finish().unwrap();
        let mut first = [0u8; 1000];
        recv.read_exact(&mut first).unwrap();
        // The response has started: from now on nothing the client sends arrives.
        relay.cut_client();
        let write_error = rx.recv_timeout(PATIENCE).expect("the server's write ended");
        assert!(wait_until(&server, |s| s.open_connections() == 0));
        relay.stop();
        let served = echo_once(addr, client_config);
        drop((send, recv, conn));
        (write_error, served)
    });
    println!("the server's write: {write_error:?}");
    assert!(write_error.is_err(), "the write cannot finish");
    assert!(served);
}

#[test]
fn only_a_datagram_large_enough_for_an_initial_gets_version_negotiation() {
    let (answers, served) = run("version negotiation", || {
        let (server, client_config) = server_with(&Config::default());
        serve_echo(&server);
        let addr = server.local_addr().unwrap();
        let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // An unknown version, no connection IDs: 12 bytes must get nothing (RFC 9000
        // §5.2.2), 1,200 bytes a Version Negotiation packet. The server reads them in order,
        // so once the second's answer is in, the first would have been too.
        let mut small = vec![0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 0, 0];
        small.resize(12, 0);
        raw.send_to(&small, addr).unwrap();
        let mut large = small.clone();
        large.resize(1200, 0);
        raw.send_to(&large, addr).unwrap();
        let (raw, first) = first_answer(raw);
        let mut answers = vec![first];
        answers.extend(drain(&raw));
        (answers, echo_once(addr, client_config))
    });
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(served);
}
