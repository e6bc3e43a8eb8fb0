//! The driver's side of the socket: [`Inbox`], the buffers datagrams are received into
//! (with GRO, split back into datagrams), and [`Outbox`], the packets quinn-proto has made
//! and the socket has not yet taken (sent as GSO trains where quinn-proto built one).
//!
//! Both belong to the driver alone: the system calls run outside the shared state's lock.

use bytes::{Bytes, BytesMut};
use fibra::net::{InDatagram, OutDatagram, UdpSocket};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;

/// Entries per `recvmmsg`/`sendmmsg` (fibra's batch).
pub(crate) const BATCH: usize = 32;

/// The most payload bytes one GSO train may carry: what fits in one IPv4 datagram (65,535
/// less the 20-byte IP and 8-byte UDP headers), which the kernel's segmentation starts
/// from; IPv6 allows 20 more. 45 datagrams of 1,452 bytes.
const MAX_TRAIN_BYTES: usize = 65_507;

/// Receive buffers: [`BATCH`] of 2 KiB without GRO, 8 of 64 KiB with it (a coalesced entry
/// can hold up to 64 KiB of datagrams), and what the last receive put in them.
///
/// quinn-proto keeps pieces of a packet (stream data) until the application reads them, so it
/// takes each datagram as a `BytesMut` of its own. A large entry (a GRO batch of
/// [`HAND_OVER`] bytes or more) is handed over in its buffer, and the slot gets a new one that
/// is not zeroed: no copy of the bulk of a download or an upload. A small one is copied out
/// and its slot received into again, so that a datagram a stream holds on to pins its own
/// bytes and not a 64 KiB buffer.
pub(crate) struct Inbox {
    bufs: Vec<Vec<u8>>,
    /// The bytes each slot receives into.
    size: usize,
    /// Per filled entry: its buffer, sender, GRO segment size.
    filled: Vec<(usize, SocketAddr, Option<usize>)>,
}

/// The smallest entry [`Inbox::take`] hands over in its buffer rather than copying: a
/// datagram held on to pins at most four times its size.
const HAND_OVER: usize = 16 * 1024;

impl Inbox {
    /// Buffers for a socket with GRO on (`gro`) or off.
    pub(crate) fn new(gro: bool) -> Inbox {
        let (count, size) = if gro { (8, 65536) } else { (BATCH, 2048) };
        Inbox {
            bufs: (0..count).map(|_| Vec::with_capacity(size)).collect(),
            size,
            filled: Vec::with_capacity(count),
        }
    }

    /// Receives what has arrived, without waiting; returns how many entries were filled (0:
    /// nothing had arrived). A truncated entry is left out: too long for anything a peer may
    /// send us.
    pub(crate) fn receive(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        self.filled.clear();
        for slot in &mut self.bufs {
            // Empty, with room for `size` bytes (`new` and `take` give it that).
            slot.clear();
        }
        let count = self.bufs.len();
        let mut bufs = self.bufs.iter_mut();
        // On the stack: no allocation per receive. Each entry receives into its slot's spare
        // capacity: not zeroed.
        let mut batch: [InDatagram<'_>; BATCH] = std::array::from_fn(|_| match bufs.next() {
            Some(slot) => InDatagram::appending(slot),
            None => InDatagram::new(&mut []),
        });
        let n = match socket.try_recv_many(&mut batch[..count]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(e),
        };
        for (i, d) in batch[..n].iter().enumerate() {
            if let (Some(from), false) = (d.addr(), d.truncated()) {
                self.filled.push((i, from, d.segment_size()));
            }
        }
        Ok(n)
    }

    /// Takes the entries the last [`receive`](Inbox::receive) filled, one at a time through
    /// `each`: sender, bytes, and the GRO segment size where several datagrams were
    /// coalesced. A slot whose buffer was handed over gets a new one with room for a full entry.
    pub(crate) fn take(&mut self, mut each: impl FnMut(SocketAddr, BytesMut, Option<usize>)) {
        for &(i, from, segment) in &self.filled {
            let slot = &mut self.bufs[i];
            let data = if slot.len() >= HAND_OVER {
                // Both conversions keep the `Vec`'s allocation (`Bytes` wraps it, and gives it
                // back to `BytesMut` when it is the only owner, as here): no copy.
                let full = std::mem::replace(slot, Vec::with_capacity(self.size));
                BytesMut::from(Bytes::from(full))
            } else {
                BytesMut::from(&slot[..])
            };
            each(from, data, segment);
        }
        self.filled.clear();
    }
}

/// One packet (or GSO train) waiting for the socket.
struct Packet {
    to: SocketAddr,
    buf: Vec<u8>,
    segment_size: Option<usize>,
}

/// The packets made and not yet sent, oldest first, and spare buffers to make more in.
#[derive(Default)]
pub(crate) struct Outbox {
    queue: VecDeque<Packet>,
    spare: Vec<Vec<u8>>,
    /// The socket's send buffer was full at the last flush: wait for it to be writable.
    pub(crate) blocked: bool,
}

impl Outbox {
    /// Whether enough is queued that making more should wait for a flush (one full batch).
    pub(crate) fn full(&self) -> bool {
        self.queue.len() >= BATCH
    }

    /// The most datagrams per train for `socket` now (1 without GSO), each up to
    /// `max_payload` bytes: as many as the kernel takes in one train. A train's cost is
    /// mostly per train, not per datagram (one pass through quinn-proto's transmit path, one
    /// socket buffer on each side of the kernel): a 1 MiB download over loopback took 0.83×
    /// the CPU with trains of 45 datagrams instead of 10, and 0.93× against 20. A train is
    /// no burst on a real path: quinn-proto's pacer ends it where the congestion window's
    /// pace says to wait.
    pub(crate) fn max_train(socket: &UdpSocket, max_payload: usize) -> usize {
        socket
            .max_gso_segments()
            .min(MAX_TRAIN_BYTES / max_payload.max(1))
            .max(1)
    }

    /// An empty buffer to make a packet in.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b
    }

    /// Gives back a buffer that was not used.
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        self.spare.push(buf);
    }

    /// Queues the first `size` bytes of `buf` for `to`, cut into datagrams of `segment_size`
    /// if quinn-proto made a train.
    pub(crate) fn push(
        &mut self,
        to: SocketAddr,
        mut buf: Vec<u8>,
        size: usize,
        segment_size: Option<usize>,
    ) {
        buf.truncate(size);
        if buf.is_empty() {
            self.recycle(buf);
            return;
        }
        self.queue.push_back(Packet {
            to,
            buf,
            segment_size: segment_size.filter(|&s| s < size),
        });
    }

    /// Takes every packet queued, as a socket would (the fuzz target's outbox has none):
    /// each destination and datagram, a train cut into its datagrams.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn take_all(&mut self, mut sent: impl FnMut(SocketAddr, &[u8])) {
        while let Some(p) = self.queue.pop_front() {
            let size = p.segment_size.unwrap_or(p.buf.len()).max(1);
            for d in p.buf.chunks(size) {
                sent(p.to, d);
            }
            self.spare.push(p.buf);
        }
        self.spare.truncate(BATCH);
    }

    /// Sends what the socket takes now, oldest first. Stops, keeping the rest, when the send
    /// buffer is full ([`Outbox::blocked`]). A packet the socket refuses outright (too big
    /// for the route: a path MTU probe with "don't fragment"; an unreachable address) is
    /// dropped, as a network would drop it. Returns how many were dropped so.
    pub(crate) fn flush(&mut self, socket: &UdpSocket) -> u64 {
        self.blocked = false;
        let mut dropped = 0;
        while !self.queue.is_empty() {
            // On the stack: no allocation per flush.
            let mut batch = [OutDatagram::connected(&[]); BATCH];
            let mut count = 0;
            for (slot, p) in batch.iter_mut().zip(&self.queue) {
                let d = OutDatagram::to(p.to, &p.buf);
                *slot = match p.segment_size {
                    Some(s) => d.with_segment_size(s),
                    None => d,
                };
                count += 1;
            }
            let done = match socket.try_send_many(&batch[..count]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.blocked = true;
                    return dropped;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
                // `send_many` fails only for the first entry; later ones' errors end the
                // batch before them and come back on the next call.
                Err(_) => {
                    dropped += 1;
                    1
                }
            };
            for _ in 0..done {
                if let Some(p) = self.queue.pop_front() {
                    self.spare.push(p.buf);
                }
            }
        }
        // Keep a batch's worth of buffers; let a burst's extra ones go.
        self.spare.truncate(BATCH);
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest train for 1,452-byte datagrams is the longest the kernel takes.
    #[test]
    fn the_longest_train_is_one_the_kernel_takes() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = UdpSocket::bind("127.0.0.1:0").unwrap();
        to.set_recv_buffer_size(1 << 20).unwrap();
        let n = Outbox::max_train(&socket, 1452);
        assert!(Outbox::max_train(&socket, 9000) <= 7);
        assert_eq!(Outbox::max_train(&socket, 65_527), 1);
        if socket.max_gso_segments() == 1 {
            assert_eq!(n, 1, "no GSO, no trains");
            return;
        }
        assert_eq!(n, 45);
        // One datagram more is over the kernel's bound: refused whole.
        let over = vec![7u8; (n + 1) * 1452];
        let d = OutDatagram::to(to.local_addr().unwrap(), &over).with_segment_size(1452);
        assert!(socket.try_send_many(&[d]).is_err());
        let train = vec![7u8; n * 1452];
        let d = OutDatagram::to(to.local_addr().unwrap(), &train).with_segment_size(1452);
        assert_eq!(socket.try_send_many(&[d]).unwrap(), 1);
        let mut buf = [0u8; 2048];
        let (len, _) = to.recv_from(&mut buf).unwrap();
        assert_eq!(len, 1452);
    }

    /// Receives into `inbox` until `want` entries came (a bounded wait), and takes them.
    fn receive_entries(inbox: &mut Inbox, to: &UdpSocket, want: usize) -> Vec<BytesMut> {
        let mut got = Vec::new();
        for _ in 0..1000 {
            if inbox.receive(to).unwrap() > 0 {
                inbox.take(|_, data, _| got.push(data));
            }
            if got.len() >= want {
                return got;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{} of {want} entries arrived", got.len());
    }

    /// A GRO entry of 16 KiB or more goes to quinn-proto in the buffer it was received in
    /// (its slot gets a new one), a small datagram as a copy of its own size (a stream that
    /// holds on to it pins its bytes, not 64 KiB); the bytes are the ones sent either way,
    /// also in the slot's new buffer.
    #[test]
    fn a_large_entry_is_handed_over_and_a_small_one_copied() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = UdpSocket::bind("127.0.0.1:0").unwrap();
        to.set_recv_buffer_size(1 << 20).unwrap();
        let gro = to.set_gro(true).unwrap();
        let mut inbox = Inbox::new(gro);
        let addr = to.local_addr().unwrap();

        let small: Vec<u8> = (0..100u8).collect();
        socket
            .try_send_many(&[OutDatagram::to(addr, &small)])
            .unwrap();
        let got = receive_entries(&mut inbox, &to, 1);
        assert_eq!(&got[0][..], &small[..]);
        assert_eq!(got[0].capacity(), small.len(), "a copy of its own size");

        if !gro || socket.max_gso_segments() < 20 {
            return; // No coalesced entries here: every datagram is small.
        }
        for round in 0..3u8 {
            let train: Vec<u8> = (0..20 * 1200).map(|i| (i % 251) as u8 ^ round).collect();
            let d = OutDatagram::to(addr, &train).with_segment_size(1200);
            assert_eq!(socket.try_send_many(&[d]).unwrap(), 1);
            let got = receive_entries(&mut inbox, &to, 1);
            assert_eq!(got.len(), 1, "one coalesced entry");
            assert_eq!(&got[0][..], &train[..], "round {round}");
            assert!(
                got[0].capacity() >= 65536,
                "handed over in its 64 KiB buffer"
            );
            assert!(inbox
                .bufs
                .iter()
                .all(|b| b.is_empty() && b.capacity() >= 65536));
        }
    }
}
