//! HTTP/3 across a binary upgrade (SIGUSR2): the old process hands the new one its UDP
//! sockets, and each hands the other the datagrams of the other's connections.
//!
//! - **What goes over.** Besides the TCP listeners (see `upgrade`), the old process hands
//!   over a copy of each worker's UDP socket (`LISTEN_FDNAMES` name `quic`, with a prefix
//!   per site-file address) and two ends of a pair of Unix datagram sockets, the *link*: the
//!   one the new process reads (`quic-in.NEW.OLD`, naming the connection-ID generations of
//!   the new group and of the old) and the one it writes (`quic-out`).
//! - **Both serve for a moment.** The new process makes its group on the same sockets
//!   (`fibra_quic::Endpoint::server_group_on`), with the generation it was given. Until it
//!   says it is ready, both read the sockets; a datagram of the other's generation is sent
//!   over the link, so each connection's datagrams reach the process that has it. A new
//!   client is taken by whichever reads its first packet.
//! - **Then the new one reads alone.** Once the new process is ready the old one stops
//!   reading the sockets (`set_receiving(false)`), sends GOAWAY on its connections and lets
//!   them finish (the drain of `Http3::stop`); what their clients send reaches it through the
//!   link. It exits when they are done or the grace period ends; from then on a datagram of
//!   the old generation is the new process's to answer (with a stateless reset).
//! - **What a client sees.** A connection made before the upgrade goes on: its requests in
//!   flight are answered, it gets GOAWAY, and its next requests go on a new connection,
//!   which the new process serves. No datagram is refused on the way.
//!
//! On the link, a datagram is its sender (`4` and 4 bytes of IPv4 address, or `6` and 16
//! of IPv6; then the port, big-endian) and then its bytes.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use fibra_quic::{Endpoint, Peer};

use crate::listeners::{QUIC_LINK_IN as LINK_IN, QUIC_LINK_OUT as LINK_OUT, QUIC_SOCKET as SOCKET};

/// How often a link's reader looks whether it should stop.
const READ_POLL: Duration = Duration::from_millis(500);

/// The largest datagram on the link: a sender and a UDP payload.
const MAX_MESSAGE: usize = 19 + 65_535;

/// One side's end of the link: the reader that delivers what the peer sends to this side's
/// group. Dropping it stops the reader.
pub struct Link {
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// Links `group` to its peer: datagrams of `peer_generation` go out on `send`, and what
/// comes in on `recv` is delivered to the group.
fn link(
    group: &Endpoint,
    peer_generation: u16,
    send: UnixDatagram,
    recv: UnixDatagram,
) -> io::Result<Link> {
    send.set_nonblocking(true)?;
    recv.set_read_timeout(Some(READ_POLL))?;
    let gone = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let peer_gone = gone.clone();
    let buffer = std::sync::Mutex::new(Vec::with_capacity(MAX_MESSAGE));
    group.set_peer(Some(Peer {
        generation: peer_generation,
        forward: Box::new(move |from, datagram| {
            if peer_gone.load(Relaxed) {
                return false;
            }
            let mut m = buffer.lock().unwrap_or_else(|e| e.into_inner());
            encode(from, datagram, &mut m);
            match send.send(&m) {
                Ok(_) => true,
                // Full: dropped, as a network drops (QUIC repairs it).
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
                // The peer process is gone: its connections are over.
                Err(_) => {
                    peer_gone.store(true, Relaxed);
                    false
                }
            }
        }),
    }));
    let (to, stopping) = (group.clone(), stop.clone());
    let reader = std::thread::Builder::new()
        .name("fibra-http3-link".into())
        .spawn(move || {
            let mut buf = vec![0u8; MAX_MESSAGE];
            while !stopping.load(Relaxed) && !gone.load(Relaxed) {
                match recv.recv(&mut buf) {
                    Ok(n) => {
                        if let Some((from, datagram)) = decode(&buf[..n]) {
                            to.deliver(from, datagram);
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
            to.set_peer(None);
        })?;
    Ok(Link {
        stop,
        reader: Some(reader),
    })
}

/// The old process's side, begun before the new binary starts: the peer set, the link's
/// reader running, and the descriptors to hand over with their names.
pub struct Outgoing {
    pub link: Link,
    pub fds: Vec<(OwnedFd, String)>,
}

/// Begins handing `group` (one endpoint per worker, in member order) over, its names
/// prefixed with `prefix`.
pub fn begin(group: &[Endpoint], prefix: &str) -> io::Result<Outgoing> {
    let old = group
        .first()
        .and_then(Endpoint::generation)
        .ok_or_else(|| io::Error::other("HTTP/3 has no endpoint group to hand over"))?;
    let new = old.wrapping_add(1);
    let mut fds = Vec::with_capacity(group.len() + 2);
    for e in group {
        let socket = e
            .socket()
            .ok_or_else(|| io::Error::other("an HTTP/3 endpoint without its socket"))?;
        fds.push((socket.try_clone_to_owned()?, format!("{prefix}{SOCKET}")));
    }
    let (old_send, new_recv) = UnixDatagram::pair()?;
    let (new_send, old_recv) = UnixDatagram::pair()?;
    fds.push((new_recv.into(), format!("{prefix}{LINK_IN}.{new}.{old}")));
    fds.push((new_send.into(), format!("{prefix}{LINK_OUT}")));
    let link = link(&group[0], new, old_send, old_recv)?;
    Ok(Outgoing { link, fds })
}

/// What the new process was handed for one group: the sockets in member order, its
/// generation, and the link to the old process.
pub struct Incoming {
    pub sockets: Vec<fibra::net::UdpSocket>,
    pub generation: u16,
    peer_generation: u16,
    send: UnixDatagram,
    recv: UnixDatagram,
}

impl Incoming {
    /// Takes what the old process handed over under `prefix`, if it handed anything.
    pub fn take(prefix: &str) -> io::Result<Option<Incoming>> {
        let sockets = crate::listeners::take_named_fds(&format!("{prefix}{SOCKET}"));
        let ins = crate::listeners::take_fds_where(|n| {
            n.strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(&format!("{LINK_IN}.")))
        });
        let outs = crate::listeners::take_named_fds(&format!("{prefix}{LINK_OUT}"));
        let (Some((recv, name)), Some(send)) = (ins.into_iter().next(), outs.into_iter().next())
        else {
            return Ok(None);
        };
        if sockets.is_empty() {
            return Ok(None);
        }
        let bad = || io::Error::other(format!("a handed-over HTTP/3 link named {name:?}"));
        let mut parts = name.rsplit('.');
        let peer_generation = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let generation = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let sockets = sockets
            .into_iter()
            .map(|fd| fibra::net::UdpSocket::from_std(std::net::UdpSocket::from(fd)))
            .collect::<io::Result<_>>()?;
        Ok(Some(Incoming {
            sockets,
            generation,
            peer_generation,
            send: UnixDatagram::from(send),
            recv: UnixDatagram::from(recv),
        }))
    }

    /// Links the group made on the sockets to the old process.
    pub fn link(self, group: &Endpoint) -> io::Result<Link> {
        link(group, self.peer_generation, self.send, self.recv)
    }
}

/// Writes `from` and `datagram` as one link message into `out`.
fn encode(from: SocketAddr, datagram: &[u8], out: &mut Vec<u8>) {
    out.clear();
    match from.ip() {
        IpAddr::V4(ip) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&from.port().to_be_bytes());
    out.extend_from_slice(datagram);
}

/// Reads a link message: the sender and the datagram; `None` if it is malformed.
fn decode(message: &[u8]) -> Option<(SocketAddr, &[u8])> {
    let (&family, rest) = message.split_first()?;
    let (ip, rest): (IpAddr, &[u8]) = match family {
        4 if rest.len() >= 4 => {
            let (ip, rest) = rest.split_at(4);
            (Ipv4Addr::from(<[u8; 4]>::try_from(ip).ok()?).into(), rest)
        }
        6 if rest.len() >= 16 => {
            let (ip, rest) = rest.split_at(16);
            (Ipv6Addr::from(<[u8; 16]>::try_from(ip).ok()?).into(), rest)
        }
        _ => return None,
    };
    if rest.len() < 2 {
        return None;
    }
    let (port, datagram) = rest.split_at(2);
    let port = u16::from_be_bytes([port[0], port[1]]);
    Some((SocketAddr::new(ip, port), datagram))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_message_carries_the_sender_and_the_bytes() {
        let mut m = Vec::new();
        for from in ["127.0.0.1:4433", "[::1]:65535", "[2001:db8::7]:1"] {
            let from: SocketAddr = from.parse().unwrap();
            encode(from, b"\xc0quic", &mut m);
            assert_eq!(decode(&m), Some((from, &b"\xc0quic"[..])));
        }
        encode("10.0.0.1:9".parse().unwrap(), b"", &mut m);
        assert_eq!(decode(&m).unwrap().1, b"");
    }

    #[test]
    fn a_malformed_link_message_is_refused() {
        for m in [
            &b""[..],
            b"\x05abcdefg",
            b"\x04\x7f\x00\x00",
            b"\x04\x7f\x00\x00\x01\x00",
        ] {
            assert_eq!(decode(m), None, "{m:?}");
        }
    }

    #[test]
    fn the_names_of_handed_over_quic_descriptors_are_told_from_listeners() {
        use crate::listeners::is_quic_name;
        for n in [
            "quic",
            "quic-in.5.4",
            "quic-out",
            "site-3a3434-quic",
            "site-3a-quic-in.1.0",
        ] {
            assert!(is_quic_name(n), "{n}");
        }
        for n in ["main", "redirect", "", "site-3a3434"] {
            assert!(!is_quic_name(n), "{n}");
        }
    }
}
