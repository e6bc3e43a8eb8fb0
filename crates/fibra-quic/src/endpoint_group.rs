//! Several server endpoints on one UDP port, one per worker (see the `group` module for how
//! datagrams find their member), and what a group offers besides an endpoint's calls: its
//! generation, its sockets for an upgrade, the peer link, and its forwarding counts.

use crate::config::Config;
use crate::endpoint::{Endpoint, Prepared};
use crate::group::{self, Group, MemberCids, Membership, Peer};
use fibra::net::UdpSocket;
use quinn_proto::ServerConfig;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

impl Endpoint {
    /// Server endpoints on one UDP port, one per worker of the calling fiber's runtime
    /// (`members` of them: pass the worker count; more than 256 are refused): each with its
    /// own socket bound to `addr` with `SO_REUSEPORT` and its driver on worker
    /// `member`, so that the port's datagrams are received and answered on every worker.
    /// Port 0 picks a port. A port some socket already holds is refused (`AddrInUse`), even
    /// one of another group. Returned in member order; accept on each (fibers placed on its
    /// [`worker`](Endpoint::worker)).
    ///
    /// A connection stays on the member that accepted it, whatever address its datagrams
    /// come from later (NAT rebinding, migration): its connection IDs name the member, a
    /// program attached to the port steers each datagram by them where the kernel allows
    /// it ([`steered`](Endpoint::steered); [`Config::steering`]), and a member that receives
    /// another's datagram anyway forwards it ([`forwarded`](Endpoint::forwarded)). They
    /// share one stateless-reset key and `server`'s token key, so any of them can check
    /// a Retry token any other issued. `config` gives the endpoint settings, as for
    /// [`Endpoint::with_config`].
    pub fn server_group(
        addr: SocketAddr,
        members: usize,
        config: &Config,
        server: ServerConfig,
    ) -> io::Result<Vec<Endpoint>> {
        let workers = fibra::current_worker_count().ok_or_else(|| {
            io::Error::other("fibra_quic::Endpoint::server_group must be called in a fiber")
        })?;
        check_members(members)?;
        // Bound once without `SO_REUSEPORT` first: that fails if any socket holds the port
        // (another process's group too, which the members would otherwise join and split
        // its datagrams with), and picks the port for `addr`'s port 0.
        let mut at = std::net::UdpSocket::bind(addr)
            .and_then(|probe| probe.local_addr())
            .map_err(|e| io::Error::new(e.kind(), format!("binding UDP {addr}: {e}")))?;
        let mut sockets = Vec::with_capacity(members);
        for _ in 0..members {
            let socket = UdpSocket::bind_reuse_port(at)?;
            at = socket.local_addr()?;
            sockets.push(socket);
        }
        Endpoint::group_on(sockets, workers, random_generation(), config, server)
    }

    /// [`Endpoint::server_group`] on sockets already bound, one per member in the order they
    /// were bound: those an upgrading process handed over ([`Endpoint::socket`]), with a
    /// `generation` for the new connection IDs other than the old group's (see
    /// [`Endpoint::set_peer`]).
    pub fn server_group_on(
        sockets: Vec<UdpSocket>,
        generation: u16,
        config: &Config,
        server: ServerConfig,
    ) -> io::Result<Vec<Endpoint>> {
        let workers = fibra::current_worker_count().ok_or_else(|| {
            io::Error::other("fibra_quic::Endpoint::server_group_on must be called in a fiber")
        })?;
        check_members(sockets.len())?;
        Endpoint::group_on(sockets, workers, generation, config, server)
    }

    /// A group on `sockets`, the drivers spread over `workers`.
    fn group_on(
        sockets: Vec<UdpSocket>,
        workers: usize,
        generation: u16,
        config: &Config,
        server: ServerConfig,
    ) -> io::Result<Vec<Endpoint>> {
        let members = sockets.len();
        let steered = config.steering
            && sockets[0]
                .attach_reuse_port_program(&group::steering_program(members))
                .is_ok();
        // One reset key for all: `EndpointConfig` clones share it.
        let base = config.endpoint();
        let group = Group::new(generation);
        let mut prepared = Vec::with_capacity(members);
        for (member, socket) in sockets.into_iter().enumerate() {
            let mut endpoint = base.clone();
            endpoint.cid_generator(move || Box::new(MemberCids::new(member, members, generation)));
            let membership = Membership {
                group: group.clone(),
                member,
                members,
                steered,
            };
            prepared.push(Prepared::new(
                socket,
                member % workers,
                endpoint,
                Some(server.clone()),
                config.max_handshakes_before_retry,
                Some(membership),
            )?);
        }
        // Known to each other before any driver reads a datagram.
        group.set_members(
            prepared
                .iter()
                .map(|p| Arc::downgrade(&p.shared.mailbox))
                .collect(),
        );
        prepared.into_iter().map(Prepared::spawn).collect()
    }

    /// In a group ([`Endpoint::server_group`]): how many datagrams this member received
    /// for another member and handed over, and how many others handed to it. (0, 0) for an
    /// endpoint on its own, and for a steered group while its sockets stay as they were.
    pub fn forwarded(&self) -> (u64, u64) {
        let st = self.shared().lock();
        (st.forwarded_out, st.forwarded_in)
    }

    /// In a group: whether the kernel steers each datagram to the member that owns it
    /// (the steering program was attached); without it, members forward what reaches the
    /// wrong one. `false` for an endpoint on its own.
    pub fn steered(&self) -> bool {
        self.shared().membership.as_ref().is_some_and(|m| m.steered)
    }

    /// In a group: the generation its connection IDs carry (bytes 1–2 of each).
    pub fn generation(&self) -> Option<u16> {
        self.shared()
            .membership
            .as_ref()
            .map(|m| m.group.generation)
    }

    /// In a group: this member's socket, for a binary upgrade to hand to the new process
    /// (which makes its group on them with [`Endpoint::server_group_on`]). `None` for an
    /// endpoint on its own.
    pub fn socket(&self) -> Option<BorrowedFd<'_>> {
        self.shared().socket_copy.as_ref().map(AsFd::as_fd)
    }

    /// Sets (or with `None` clears) the group's peer in a binary upgrade: the other
    /// process's group on the same sockets. From then on a datagram whose connection ID has
    /// the peer's generation goes to `peer.forward` instead of this group's connections,
    /// whichever member received it; the peer hands back this group's through
    /// [`deliver`](Endpoint::deliver). For any member: it is the group's. Does nothing for an
    /// endpoint on its own.
    pub fn set_peer(&self, peer: Option<Peer>) {
        if let Some(m) = &self.shared().membership {
            m.group.set_peer(peer);
        }
    }

    /// Turns reading the socket off or on (on by default). Off, the driver goes on
    /// sending, running timers and serving its connections, but what arrives on the socket
    /// is left for another reader: an upgrade's new process, which hands this endpoint its
    /// datagrams through [`deliver`](Endpoint::deliver).
    pub fn set_receiving(&self, on: bool) {
        self.shared().receiving.store(on, Relaxed);
        self.shared().driver.notify_one();
    }

    /// Hands the endpoint a datagram received elsewhere (by an upgrade's peer) from `from`:
    /// in a group, to the member that owns it (this one if none does); handled as if it
    /// had arrived on the socket.
    pub fn deliver(&self, from: SocketAddr, datagram: &[u8]) {
        let shared = &self.shared();
        let data = bytes::BytesMut::from(datagram);
        match &shared.membership {
            Some(m) => {
                let to = group::owner(datagram, m.members).unwrap_or(m.member);
                m.group.forward(to, from, data);
            }
            None => {
                shared.mailbox.deliver(from, data);
            }
        }
    }

    /// How many datagrams the group's members handed to its peer ([`Endpoint::set_peer`]):
    /// this member's count.
    pub fn handed_to_peer(&self) -> u64 {
        self.shared().lock().to_peer
    }
}

/// Refuses a group of no members or of more than a byte tells apart.
fn check_members(members: usize) -> io::Result<()> {
    if members == 0 || members > 256 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a QUIC endpoint group has 1 to 256 members, not {members}"),
        ));
    }
    Ok(())
}

/// A generation for a new group: random (it has only to differ from an upgrade's peer's,
/// which the upgrading process makes sure of).
fn random_generation() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    // `RandomState`'s keys are random: hashing nothing with them gives a random value.
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u16
}
