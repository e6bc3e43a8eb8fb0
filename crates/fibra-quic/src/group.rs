//! A group: several server endpoints on one UDP port, one per worker, each with its own
//! socket (`SO_REUSEPORT`) and driver ([`Endpoint::server_group`](crate::Endpoint)).
//!
//! A connection belongs to the member that accepted it. Its datagrams must reach that member
//! whatever address they come from: the kernel's hash of the addresses would send a client
//! whose address changed (NAT rebinding, migration) to another socket. So every member
//! makes connection IDs that name it, and one rule ([`owner`]) reads the member from a
//! datagram's destination connection ID:
//!
//! - **Connection IDs.** 8 bytes (quinn-proto's default length): the first random among the
//!   values `≡ member (mod members)`, the next two the group's generation (random per group,
//!   or given), five random. An observer learns which member and which generation of the
//!   server a connection is on (as QUIC-LB's plaintext scheme with its config rotation
//!   bits), nothing that tells one client's connection from another's on that member.
//! - **Steering.** A classic BPF program attached to the port's `SO_REUSEPORT` group
//!   ([`steering_program`]) applies the same rule in the kernel, so each datagram reaches the
//!   right socket in the first place. The first packets of a connection carry the ID the
//!   client chose, which the same rule places on a member too: the one that then accepts it.
//! - **Forwarding.** Where the kernel refuses the program (or steering is turned off,
//!   `Config::steering`), or while the group's sockets change, a datagram may reach another
//!   member. Its driver hands it to the owner's queue ([`Group::forward`]) and wakes the
//!   owner's driver, which feeds it to quinn-proto as if it had received it. Replies leave
//!   from the owner's socket, on the same address and port.
//! - **A peer group** (a binary upgrade: the old process's group and the new one's, on the
//!   same sockets). Each knows the other's generation ([`Peer`]); a datagram with the peer's
//!   generation in its ID is handed to the peer's `forward` (in the server, a Unix socket
//!   between the processes), and what the peer hands back comes in through
//!   `Endpoint::deliver`. The old group stops reading the sockets
//!   (`Endpoint::set_receiving`) once the new one serves, and lives on what it is handed.

use bytes::BytesMut;
use fibra::net::BpfInstruction;
use fibra::sync::Notify;
use quinn_proto::{ConnectionId, ConnectionIdGenerator, RandomConnectionIdGenerator};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// The length of the connection IDs a group's members make (and that [`owner`] reads in a
/// short header).
pub(crate) const CID_LEN: usize = 8;

/// The most datagrams one member's queue of forwarded ones holds; more are dropped (QUIC
/// repairs the loss). Forwarding is the exception, so this is a bound against floods.
const MAX_FORWARDED: usize = 4096;

/// The generation in `packet`'s destination connection ID, if it has one of a group's
/// length ([`CID_LEN`]): bytes 1–2 of the ID, big-endian. (A client's first packets carry an
/// ID it chose, whose bytes may read as any generation.)
pub(crate) fn generation_of(packet: &[u8]) -> Option<u16> {
    let first = *packet.first()?;
    let at = if first & 0x80 != 0 {
        if usize::from(*packet.get(5)?) != CID_LEN {
            return None;
        }
        7
    } else {
        2
    };
    Some(u16::from_be_bytes([*packet.get(at)?, *packet.get(at + 1)?]))
}

/// The member of a group of `members` that owns `packet`: its destination connection ID's
/// first byte modulo `members`. `None` for a datagram with no ID to read (too short, or a
/// long header with an empty one): whoever received it handles it.
///
/// A short header (first bit 0) has the ID at byte 1; a long header (first bit 1) has the
/// version at bytes 1–4, the ID's length at byte 5 and the ID from byte 6
/// (RFC 9000 §17.2, §17.3; RFC 8999 for every version).
pub(crate) fn owner(packet: &[u8], members: usize) -> Option<usize> {
    let first = *packet.first()?;
    let byte = if first & 0x80 != 0 {
        if *packet.get(5)? == 0 {
            return None;
        }
        *packet.get(6)?
    } else {
        *packet.get(1)?
    };
    Some(usize::from(byte) % members.max(1))
}

/// The classic BPF program that applies [`owner`] in the kernel for a group of `members`
/// sockets, bound in member order. A datagram with no ID gets an index past the last socket,
/// which falls back to the kernel's hash; one too short for a load gets 0 (the kernel ends a
/// program whose load fails with 0), and [`owner`] says the same member holds nothing for it.
pub(crate) fn steering_program(members: usize) -> Vec<BpfInstruction> {
    // <linux/filter.h>: classes, sizes, modes, operations, sources.
    const LD_B_ABS: u16 = 0x10 | 0x20; // BPF_LD is 0
    const JMP_JSET_K: u16 = 0x05 | 0x40;
    const JMP_JEQ_K: u16 = 0x05 | 0x10;
    const JMP_JA: u16 = 0x05;
    const ALU_MOD_K: u16 = 0x04 | 0x90;
    const RET_A: u16 = 0x06 | 0x10;
    const RET_K: u16 = 0x06;
    let n = u32::try_from(members.max(1)).unwrap_or(u32::MAX);
    let i = BpfInstruction::new;
    vec![
        /* 0 */ i(LD_B_ABS, 0, 0, 0), // A = the first byte
        /* 1 */ i(JMP_JSET_K, 0, 4, 0x80), // long header: 2; short: 6
        /* 2 */ i(LD_B_ABS, 0, 0, 5), // A = the ID's length
        /* 3 */ i(JMP_JEQ_K, 5, 0, 0), // empty: 9; else 4
        /* 4 */ i(LD_B_ABS, 0, 0, 6), // A = the ID's first byte
        /* 5 */ i(JMP_JA, 0, 0, 1), // to 7
        /* 6 */ i(LD_B_ABS, 0, 0, 1), // A = the ID's first byte
        /* 7 */ i(ALU_MOD_K, 0, 0, n),
        /* 8 */ i(RET_A, 0, 0, 0),
        /* 9 */ i(RET_K, 0, 0, u32::MAX), // past the last socket: the hash
    ]
}

/// Makes [`CID_LEN`]-byte connection IDs that [`owner`] reads as `member`'s.
#[derive(Debug)]
pub(crate) struct MemberCids {
    member: usize,
    generation: u16,
    /// 1 to 256: a byte has to tell them apart.
    members: usize,
    random: RandomConnectionIdGenerator,
}

impl MemberCids {
    /// IDs for `member` of `members` (at most 256) in `generation`.
    pub(crate) fn new(member: usize, members: usize, generation: u16) -> MemberCids {
        let members = members.clamp(1, 256);
        MemberCids {
            member: member % members,
            generation,
            members,
            random: RandomConnectionIdGenerator::new(CID_LEN),
        }
    }
}

impl ConnectionIdGenerator for MemberCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let cid = self.random.generate_cid();
        let mut bytes = [0u8; CID_LEN];
        bytes.copy_from_slice(&cid[..CID_LEN]);
        // The values of one byte that are `member` modulo `members`: `slots` of them, and
        // the largest, `(slots - 1) * members + member`, is below 256.
        let slots = 256 / self.members;
        let pick = usize::from(bytes[0]) % slots;
        bytes[0] = (pick * self.members + self.member) as u8;
        bytes[1..3].copy_from_slice(&self.generation.to_be_bytes());
        ConnectionId::new(&bytes)
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// Hands a peer group one datagram: its sender and bytes; see [`Peer::forward`].
pub type ForwardFn = dyn Fn(SocketAddr, &[u8]) -> bool + Send + Sync;

/// A group's peer in a binary upgrade: the other process's group on the same sockets.
pub struct Peer {
    /// The generation in the peer's connection IDs.
    pub generation: u16,
    /// Hands the peer a datagram (its sender, its bytes); false if it could not (the peer
    /// is gone), and the group handles the datagram itself. Called from a driver fiber with
    /// its state locked: it must not block.
    pub forward: Box<ForwardFn>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("generation", &self.generation)
            .finish()
    }
}

/// What a group's members share: each one's mailbox, to forward to; the generation; the peer.
pub(crate) struct Group {
    members: OnceLock<Vec<Weak<Mailbox>>>,
    pub(crate) generation: u16,
    /// Whether `peer` holds one: read for every batch of datagrams, the lock only when set.
    has_peer: AtomicBool,
    peer: Mutex<Option<Arc<Peer>>>,
}

/// Where other members leave datagrams for an endpoint's driver, and how they wake it.
pub(crate) struct Mailbox {
    /// The datagrams, oldest first.
    queue: Mutex<Vec<(SocketAddr, BytesMut)>>,
    /// The driver's `Notify` (`Shared::driver`).
    driver: Arc<Notify>,
}

impl Mailbox {
    /// A mailbox whose deliveries wake `driver`.
    pub(crate) fn new(driver: Arc<Notify>) -> Mailbox {
        Mailbox {
            queue: Mutex::new(Vec::new()),
            driver,
        }
    }

    /// Queues `datagram`, from `from`, and wakes the driver; false if the queue was full
    /// and it was dropped.
    pub(crate) fn deliver(&self, from: SocketAddr, datagram: BytesMut) -> bool {
        {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.len() >= MAX_FORWARDED {
                return false;
            }
            queue.push((from, datagram));
        }
        self.driver.notify_one();
        true
    }

    /// Takes what was delivered into `into` (emptied first).
    pub(crate) fn take(&self, into: &mut Vec<(SocketAddr, BytesMut)>) {
        into.clear();
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut *queue, into);
    }
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("members", &self.members.get().map_or(0, Vec::len))
            .finish()
    }
}

/// An endpoint's place in its group.
#[derive(Debug, Clone)]
pub(crate) struct Membership {
    pub(crate) group: Arc<Group>,
    pub(crate) member: usize,
    pub(crate) members: usize,
    /// Whether the kernel steers datagrams by connection ID (the program was attached).
    pub(crate) steered: bool,
}

impl Membership {
    /// The member that owns `packet`, if another than this one.
    pub(crate) fn elsewhere(&self, packet: &[u8]) -> Option<usize> {
        owner(packet, self.members).filter(|&m| m != self.member)
    }
}

impl Group {
    /// A group of `generation` whose members are not yet known ([`Group::set_members`]).
    pub(crate) fn new(generation: u16) -> Arc<Group> {
        Arc::new(Group {
            members: OnceLock::new(),
            generation,
            has_peer: AtomicBool::new(false),
            peer: Mutex::new(None),
        })
    }

    /// Sets (or with `None` clears) the peer.
    pub(crate) fn set_peer(&self, peer: Option<Peer>) {
        let mut slot = self.peer.lock().unwrap_or_else(PoisonError::into_inner);
        self.has_peer.store(peer.is_some(), Relaxed);
        *slot = peer.map(Arc::new);
    }

    /// The peer, if there is one.
    pub(crate) fn peer(&self) -> Option<Arc<Peer>> {
        if !self.has_peer.load(Relaxed) {
            return None;
        }
        self.peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records the members' mailboxes, in member order, before their drivers start.
    pub(crate) fn set_members(&self, members: Vec<Weak<Mailbox>>) {
        let _ = self.members.set(members);
    }

    /// Queues `datagram`, from `from`, for member `to` and wakes its driver. Returns false
    /// if it was dropped: the member is gone, or its queue full.
    pub(crate) fn forward(&self, to: usize, from: SocketAddr, datagram: BytesMut) -> bool {
        match self
            .members
            .get()
            .and_then(|m| m.get(to))
            .and_then(Weak::upgrade)
        {
            Some(target) => target.deliver(from, datagram),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(cid: &[u8]) -> Vec<u8> {
        let mut p = vec![0x40];
        p.extend_from_slice(cid);
        p.extend_from_slice(&[0; 20]);
        p
    }

    fn long(cid: &[u8]) -> Vec<u8> {
        let mut p = vec![0xc0, 0, 0, 0, 1, cid.len() as u8];
        p.extend_from_slice(cid);
        p.extend_from_slice(&[0; 20]);
        p
    }

    #[test]
    fn each_member_makes_ids_the_rule_reads_as_its_own() {
        for members in [1, 2, 3, 4, 7, 16, 255, 256] {
            for member in 0..members.min(20) {
                let mut g = MemberCids::new(member, members, 0xbeef);
                for _ in 0..200 {
                    let cid = g.generate_cid();
                    assert_eq!(cid.len(), CID_LEN);
                    assert_eq!(generation_of(&short(&cid)), Some(0xbeef));
                    assert_eq!(generation_of(&long(&cid)), Some(0xbeef));
                    assert_eq!(owner(&short(&cid), members), Some(member), "{members}");
                    assert_eq!(owner(&long(&cid), members), Some(member), "{members}");
                }
            }
        }
    }

    #[test]
    fn the_first_byte_stays_random_among_the_members_values() {
        let mut g = MemberCids::new(1, 4, 7);
        let seen: std::collections::HashSet<u8> = (0..2000).map(|_| g.generate_cid()[0]).collect();
        // 64 values are ≡ 1 (mod 4); 2,000 draws find nearly all of them.
        assert!(seen.len() > 48, "only {} first bytes", seen.len());
        assert!(seen.iter().all(|b| b % 4 == 1));
    }

    #[test]
    fn datagrams_without_an_id_belong_to_whoever_got_them() {
        assert_eq!(owner(&[], 4), None);
        assert_eq!(owner(&[0x40], 4), None);
        assert_eq!(owner(&[0xc0, 0, 0, 0, 1, 0, 9, 9], 4), None);
        assert_eq!(owner(&[0xc0, 0, 0, 0, 1], 4), None);
        // A client's first Initial: its own ID, placed by the same rule.
        assert_eq!(owner(&long(&[6, 1, 2, 3, 4, 5, 6, 7]), 4), Some(2));
        // A generation is read only from an ID of a group's length.
        assert_eq!(generation_of(&long(&[6, 1, 2, 3, 4, 5, 6, 7, 8])), None);
        assert_eq!(generation_of(&[0x40, 1, 2]), None);
    }

    /// The program, run by a small interpreter of the instructions it uses, agrees with
    /// [`owner`] (where `owner` says "anyone", the program says "past the last socket").
    #[test]
    fn the_kernel_program_applies_the_same_rule() {
        fn run(program: &[BpfInstruction], packet: &[u8]) -> u32 {
            let (mut a, mut pc) = (0u32, 0usize);
            loop {
                let ins = program[pc];
                pc += 1;
                match ins.code {
                    0x30 => match packet.get(ins.k as usize) {
                        Some(&b) => a = u32::from(b),
                        None => return 0,
                    },
                    0x45 => pc += usize::from(if a & ins.k != 0 { ins.jt } else { ins.jf }),
                    0x15 => pc += usize::from(if a == ins.k { ins.jt } else { ins.jf }),
                    0x05 => pc += ins.k as usize,
                    0x94 => a %= ins.k,
                    0x16 => return a,
                    0x06 => return ins.k,
                    code => panic!("unexpected code {code:#x}"),
                }
            }
        }
        for members in [1, 2, 3, 4, 8] {
            let program = steering_program(members);
            for b in 0..=255u8 {
                let cid = [b, 1, 2, 3, 4, 5, 6, 7];
                for p in [short(&cid), long(&cid)] {
                    assert_eq!(Some(run(&program, &p) as usize), owner(&p, members));
                }
            }
            let empty = [0xc0, 0, 0, 0, 1, 0, 1, 2, 3];
            assert_eq!(run(&program, &empty), u32::MAX);
            assert_eq!(owner(&empty, members), None);
        }
    }
}
