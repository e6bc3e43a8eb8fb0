//! The wire, for the tests that look at it or forge it: a relay between one client and a
//! server that sees every datagram (and can stop forwarding the client's), client Initial
//! packets captured on a socket that never answers, and the long-header fields of a packet.

use super::{receive_until, PATIENCE};
use fibra::net::UdpSocket;
use fibra_quic::{proto::ClientConfig, Endpoint};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether `d` is a QUIC v1 Retry packet: long header (0x80), type 3 (0x30). The fixed bit
/// (0x40) is left out: a peer that allows it may clear it (RFC 9287); the type bits are
/// never under header protection.
pub fn is_retry(d: &[u8]) -> bool {
    d.first().is_some_and(|&b| b & 0xb0 == 0xb0)
}

/// Whether `d` is a QUIC v1 Initial packet: long header, type 0 (see [`is_retry`]).
pub fn is_initial(d: &[u8]) -> bool {
    d.first().is_some_and(|&b| b & 0xb0 == 0x80)
}

/// The destination connection ID of a long-header packet.
pub fn long_header_dcid(d: &[u8]) -> Option<&[u8]> {
    let len = usize::from(*d.get(5)?);
    d.get(6..6 + len)
}

/// What a [`Relay`] saw and how it behaves, shared with its fiber.
#[derive(Default)]
struct RelayState {
    stop: AtomicBool,
    /// Drop what the client sends instead of forwarding it.
    cut: AtomicBool,
    from_client: AtomicUsize,
    from_server: AtomicUsize,
    retries: AtomicUsize,
}

/// A socket between the first client that writes to it and a server, forwarding both ways
/// and counting what passes.
pub struct Relay {
    pub addr: SocketAddr,
    state: Arc<RelayState>,
    fiber: Option<fibra::JoinHandle<()>>,
}

impl Relay {
    /// A relay to `server`, running in a fiber until [`Relay::stop`] (or drop).
    pub fn start(server: SocketAddr) -> Relay {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let state = Arc::new(RelayState::default());
        let st = state.clone();
        let fiber = fibra::spawn(move || relay(socket, server, &st));
        Relay {
            addr,
            state,
            fiber: Some(fiber),
        }
    }

    /// From now on, what the client sends is dropped: the client has gone silent, as far
    /// as the server can tell.
    pub fn cut_client(&self) {
        self.state.cut.store(true, Relaxed);
    }

    /// Retry packets the server sent through the relay.
    pub fn retries_seen(&self) -> usize {
        self.state.retries.load(Relaxed)
    }

    /// Datagrams from the client and from the server.
    pub fn datagrams(&self) -> (usize, usize) {
        (
            self.state.from_client.load(Relaxed),
            self.state.from_server.load(Relaxed),
        )
    }

    /// Stops the relay and waits for its fiber.
    pub fn stop(mut self) {
        self.state.stop.store(true, Relaxed);
        if let Some(f) = self.fiber.take() {
            f.join().unwrap();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.state.stop.store(true, Relaxed);
    }
}

/// The relay's loop; it looks at `stop` between datagrams.
fn relay(socket: UdpSocket, server: SocketAddr, st: &RelayState) {
    let mut client = None;
    receive_until(&socket, &st.stop, "relay", |d, from| {
        let to = if from == server {
            st.from_server.fetch_add(1, Relaxed);
            if is_retry(d) {
                st.retries.fetch_add(1, Relaxed);
            }
            match client {
                Some(c) => c,
                None => return,
            }
        } else {
            st.from_client.fetch_add(1, Relaxed);
            client = Some(from);
            if st.cut.load(Relaxed) {
                return;
            }
            server
        };
        // Loopback refuses only when the receiver's buffer is full: a network's loss.
        let _ = socket.send_to(d, to);
    });
}

/// `count` client Initial packets, each the first datagram of its own connection attempt
/// (distinct connection IDs), made by a client dialling a socket that never answers: no
/// server has seen them. The attempts go on in the background until their idle timeout.
pub fn capture_initials(count: usize, config: ClientConfig) -> Vec<Vec<u8>> {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sink_addr = sink.local_addr().unwrap();
    sink.set_read_timeout(Some(PATIENCE)).unwrap();
    let client = super::client();
    let started = Instant::now();
    let mut seen = std::collections::HashSet::new();
    let mut initials = Vec::new();
    let mut buf = vec![0u8; 65536];
    while initials.len() < count {
        // A few attempts at a time: all at once, their Initials overflow the sink's receive
        // buffer, and the same ones overflow it again on every retransmission.
        let wave = (count - initials.len()).min(16);
        for _ in 0..wave {
            let (client, config) = (client.clone(), config.clone());
            fibra::spawn(move || {
                let _ = client.connect(sink_addr, "localhost", config);
            });
        }
        let goal = initials.len() + wave;
        while initials.len() < goal {
            assert!(started.elapsed() < PATIENCE, "capturing client Initials");
            let (n, _) = sink.recv_from(&mut buf).expect("a client Initial");
            let d = &buf[..n];
            assert!(is_initial(d), "a client's first packet is an Initial");
            // Retransmissions repeat a connection ID already kept.
            if seen.insert(long_header_dcid(d).unwrap().to_vec()) {
                initials.push(d.to_vec());
            }
        }
    }
    initials
}

/// The one Initial of [`capture_initials`].
pub fn capture_initial(config: ClientConfig) -> Vec<u8> {
    capture_initials(1, config).remove(0)
}

/// Waits, within [`PATIENCE`], until `done` holds for `endpoint`; polls every 10 ms (the
/// endpoint has no event for these counts). Returns whether it held.
pub fn wait_until(endpoint: &Endpoint, done: impl Fn(&Endpoint) -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < PATIENCE {
        if done(endpoint) {
            return true;
        }
        fibra::time::sleep(Duration::from_millis(10));
    }
    done(endpoint)
}
