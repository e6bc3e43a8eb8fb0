//! The `quic_datagram` fuzz target's entry point (only with the `fuzzing` feature): arbitrary
//! datagrams fed to a server endpoint through the driver's own functions, without a socket
//! or a runtime.
//!
//! Each input gets a fresh quinn-proto server endpoint (the rustls configuration, the costly
//! part, is built once by [`Server::new`]) in the driver's [`State`]. Every datagram goes
//! through `driver::handle_datagram`, as the driver feeds one it received; then each
//! connection touched is driven with `driver::drive_conn`, and what the outbox holds is taken
//! as the socket would take it. A record may first move the clock on, firing the timers due.

use crate::config::Config;
use crate::driver;
use crate::io::Outbox;
use crate::state::{Shared, State};
use bytes::BytesMut;
use quinn_proto::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The server address the datagrams are sent to.
const LOCAL: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 443);

/// A server configuration to fuzz against.
#[derive(Debug)]
pub struct Server {
    config: Arc<ServerConfig>,
}

impl Server {
    /// A server with [`Config::default`]'s settings, `h3` in ALPN, and this certificate.
    pub fn new(
        cert_chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> io::Result<Server> {
        let config = Config::default();
        let tls = Config::server_tls(cert_chain, key, &[b"h3"])?;
        Ok(Server {
            config: Arc::new(config.server(tls)?),
        })
    }

    /// Feeds `input` to a fresh endpoint and checks what it sends back:
    ///
    /// - at most 3× the bytes received (RFC 9000 §8.1: no fuzzed address can be validated,
    ///   that takes a token or a handshake key). Counted over all source addresses
    ///   together: the limit is per connection, over every datagram attributed to it from
    ///   any address, and the harness does not attribute datagrams to connections;
    /// - the count of handshakes in progress is the count of connections marked so, and
    ///   with a Retry bound of 0 nothing is ever accepted (a new client is only retried).
    ///
    /// Input: a flags byte (bit 0: Retry bound 0, else 64), then records: a byte (bits 0–1:
    /// which of 4 client ports sends; bit 7: move the clock on by a second and fire the
    /// timers due first), a 2-byte big-endian length, and that many bytes (fewer at the
    /// end of the input). Panics when a check fails.
    pub fn feed(&self, input: &[u8]) {
        let Some((&flags, mut rest)) = input.split_first() else {
            return;
        };
        let bound = if flags & 1 == 1 { 0 } else { 64 };
        let proto = quinn_proto::Endpoint::new(
            Arc::new(Config::default().endpoint()),
            Some(self.config.clone()),
            false,
            Some([0; 32]),
        );
        let shared = Shared::new(State::new(proto, bound), 0, LOCAL, None, None);
        let mut st = shared.lock();
        let mut outbox = Outbox::default();
        let mut now = Instant::now();
        let mut received: HashMap<SocketAddr, usize> = HashMap::new();
        let mut sent: HashMap<SocketAddr, usize> = HashMap::new();
        while let [head, hi, lo, tail @ ..] = rest {
            let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
            let (datagram, after) = tail.split_at(len);
            rest = after;
            if head & 0x80 != 0 {
                now += Duration::from_secs(1);
                fire_timers(&mut st, now);
            }
            let from = SocketAddr::new(LOCAL.ip(), 50_000 + u16::from(head & 3));
            *received.entry(from).or_default() += datagram.len();
            driver::handle_datagram(&mut st, now, from, BytesMut::from(datagram), &mut outbox);
            outbox.take_all(|to, d| *sent.entry(to).or_default() += d.len());
            drive_dirty(&mut st, &shared, now, &mut outbox, &mut sent);
            let handshaking = st.conns.values().filter(|c| c.handshaking).count();
            assert_eq!(st.handshakes, handshaking, "the handshake count drifted");
            if bound == 0 {
                assert!(
                    st.conns.is_empty(),
                    "accepted a client that was not validated"
                );
            }
        }
        // RFC 9000 §8.1: before the client's address is validated, at most three times the
        // bytes received in datagrams attributed to the connection, from whatever address.
        // (A datagram from a second address with the connection's ID adds to its budget,
        // which the server still spends on the first: the input that showed it sent 5,068
        // bytes to an address that had sent 1,282, after 1,200 more came from another. Its
        // sender paid for every byte at a third of the price, which is what the limit is
        // for.) No input completes a handshake, so no address is ever validated.
        let total_sent: usize = sent.values().sum();
        let total_received: usize = received.values().sum();
        assert!(
            total_sent <= 3 * total_received,
            "{total_sent} bytes sent after {total_received} received: {sent:?} for {received:?}"
        );
    }
}

/// `handle_timeout` for the connections whose deadline has passed (the driver's `Timers`
/// does this with a heap; here a scan).
fn fire_timers(st: &mut State, now: Instant) {
    let mut due = Vec::new();
    for (&id, c) in st.conns.iter_mut() {
        if c.conn.poll_timeout().is_some_and(|at| at <= now) {
            c.conn.handle_timeout(now);
            due.push(id);
        }
    }
    for id in due {
        st.mark_dirty(id);
    }
}

/// The driver's `drive` without a socket: every dirty connection driven until it has
/// nothing more to send (counted in `sent` per destination), and drained ones removed.
fn drive_dirty(
    st: &mut State,
    shared: &Shared,
    now: Instant,
    outbox: &mut Outbox,
    sent: &mut HashMap<SocketAddr, usize>,
) {
    // The fibers the driver would wake: there are none.
    let mut wake = Vec::new();
    while !st.dirty.is_empty() {
        for id in std::mem::take(&mut st.dirty) {
            if let Some(c) = st.conns.get_mut(&id) {
                c.dirty = false;
            }
            if driver::drive_conn(st, id, now, 1, outbox, shared, &mut wake) {
                st.mark_dirty(id);
            }
            wake.clear();
            outbox.take_all(|to, d| *sent.entry(to).or_default() += d.len());
            if st
                .conns
                .get(&id)
                .is_some_and(|c| c.drained && !c.held && !c.queued)
            {
                st.conns.remove(&id);
            }
        }
    }
}
