//! The packets of one packet number space that were sent and are still tracked (neither
//! acknowledged nor lost), in the order they were sent.
//!
//! Added by fibra in place of the `BTreeMap<u64, SentPacket>` that quinn-proto 0.11.19 keeps
//! (see `FIBRA.md` at the crate's root). A packet is tracked from the moment it is sent until it
//! is acknowledged or declared lost; packet numbers only grow, so the map is appended to at one
//! end and mostly emptied from the other. The `BTreeMap` allocated and freed a node every few
//! packets and rebalanced on removal; here a deque holds the entries in packet-number order,
//! a removed one becomes a vacant entry until the vacant entries at either end are dropped, and
//! the deque is compacted when vacant entries outnumber live ones. Memory stays proportional to
//! the packets tracked, as with the map.

use std::{
    collections::VecDeque,
    ops::{Bound, Index, RangeBounds},
};

use super::spaces::SentPacket;

/// Vacant entries allowed in the middle of the deque beyond the number of live ones, before it
/// is compacted.
const SLACK: usize = 32;

/// The sent packets of one packet number space, by packet number (see the module's doc).
#[derive(Debug, Default)]
pub(super) struct SentPackets {
    /// Ascending packet numbers; `None` where the packet is no longer tracked. The first and the
    /// last entry, if any, are live.
    entries: VecDeque<(u64, Option<SentPacket>)>,
    /// How many entries are `Some`.
    live: usize,
}

impl SentPackets {
    /// An empty map.
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Starts tracking packet `number`. Packet numbers are expected in ascending order (an
    /// append); an older number is placed where it belongs, and a number tracked already has its
    /// packet replaced.
    pub(super) fn insert(&mut self, number: u64, packet: SentPacket) {
        match self.entries.back() {
            Some(&(last, _)) if last >= number => {
                match self.entries.binary_search_by_key(&number, |e| e.0) {
                    Ok(i) => {
                        if self.entries[i].1.replace(packet).is_none() {
                            self.live += 1;
                        }
                    }
                    Err(i) => {
                        self.entries.insert(i, (number, Some(packet)));
                        self.live += 1;
                    }
                }
            }
            _ => {
                self.entries.push_back((number, Some(packet)));
                self.live += 1;
            }
        }
    }

    /// The index of `number`'s entry, live or vacant.
    fn position(&self, number: u64) -> Option<usize> {
        let &(first, _) = self.entries.front()?;
        let guess = usize::try_from(number.checked_sub(first)?).ok()?;
        // Packet numbers are mostly consecutive (a few are skipped on purpose, and compaction
        // leaves gaps), so the distance from the first entry is mostly the index.
        match self.entries.get(guess) {
            Some(&(n, _)) if n == number => Some(guess),
            _ => self.entries.binary_search_by_key(&number, |e| e.0).ok(),
        }
    }

    /// Stops tracking packet `number` and returns it, if it was tracked.
    pub(super) fn remove(&mut self, number: &u64) -> Option<SentPacket> {
        // The oldest packet (most acknowledgements, in order): taken off the front, with no
        // search, no vacant entry left behind and no look at the back, which stays live.
        if self.entries.front().is_some_and(|e| e.0 == *number) {
            let (_, packet) = self.entries.pop_front()?;
            self.live -= usize::from(packet.is_some());
            self.drop_vacant_front();
            self.compact_if_sparse();
            return packet;
        }
        let i = self.position(*number)?;
        let packet = self.entries[i].1.take()?;
        self.live -= 1;
        self.drop_vacant_front();
        while self.entries.back().is_some_and(|e| e.1.is_none()) {
            self.entries.pop_back();
        }
        self.compact_if_sparse();
        Some(packet)
    }

    /// Drops the vacant entries at the front, so that the first entry, if any, is live.
    #[inline(always)]
    fn drop_vacant_front(&mut self) {
        while self.entries.front().is_some_and(|e| e.1.is_none()) {
            self.entries.pop_front();
        }
    }

    /// Drops the vacant entries once they outnumber the live ones (plus `SLACK`).
    #[inline(always)]
    fn compact_if_sparse(&mut self) {
        if self.entries.len() > 2 * self.live + SLACK {
            self.entries.retain(|e| e.1.is_some());
        }
    }

    /// The packet numbered `number`, if it is tracked.
    pub(super) fn get(&self, number: &u64) -> Option<&SentPacket> {
        self.entries[self.position(*number)?].1.as_ref()
    }

    /// The tracked packets numbered within `range`, in ascending order.
    pub(super) fn range<R: RangeBounds<u64>>(
        &self,
        range: R,
    ) -> impl Iterator<Item = (&u64, &SentPacket)> {
        let start = match range.start_bound() {
            Bound::Included(&n) => self.entries.partition_point(|e| e.0 < n),
            Bound::Excluded(&n) => self.entries.partition_point(|e| e.0 <= n),
            Bound::Unbounded => 0,
        };
        let end = range.end_bound().cloned();
        self.entries
            .range(start..)
            .take_while(move |e| match end {
                Bound::Included(n) => e.0 <= n,
                Bound::Excluded(n) => e.0 < n,
                Bound::Unbounded => true,
            })
            .filter_map(|(number, packet)| Some((number, packet.as_ref()?)))
    }

    /// The tracked packets, oldest first.
    pub(super) fn values(&self) -> impl Iterator<Item = &SentPacket> {
        self.entries.iter().filter_map(|e| e.1.as_ref())
    }

    /// The tracked packets, oldest first, to change.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut SentPacket> {
        self.entries.iter_mut().filter_map(|e| e.1.as_mut())
    }

    /// The tracked packets, oldest first, taken out of the map.
    pub(super) fn into_values(self) -> impl Iterator<Item = SentPacket> {
        self.entries.into_iter().filter_map(|e| e.1)
    }

    /// How many packets are tracked.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.live
    }
}

impl Index<&u64> for SentPackets {
    type Output = SentPacket;

    fn index(&self, number: &u64) -> &SentPacket {
        self.get(number).expect("packet number not tracked")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Instant, frame};

    fn packet(size: u16) -> SentPacket {
        SentPacket {
            path_generation: 0,
            time_sent: Instant::now(),
            size,
            ack_eliciting: true,
            largest_acked: None,
            retransmits: Default::default(),
            stream_frames: frame::StreamMetaVec::new(),
        }
    }

    /// Checks every query against a `BTreeMap` holding the same packets.
    fn check(map: &SentPackets, model: &BTreeMap<u64, u16>) {
        assert_eq!(map.len(), model.len());
        let all: Vec<(u64, u16)> = map.range(..).map(|(n, p)| (*n, p.size)).collect();
        let expected: Vec<(u64, u16)> = model.iter().map(|(n, s)| (*n, *s)).collect();
        assert_eq!(all, expected);
        let values: Vec<u16> = map.values().map(|p| p.size).collect();
        assert_eq!(values, model.values().copied().collect::<Vec<_>>());
        for n in 0..=model.keys().next_back().map_or(4, |n| n + 4) {
            assert_eq!(
                map.get(&n).map(|p| p.size),
                model.get(&n).copied(),
                "get({n})"
            );
            let a: Vec<u64> = map.range(n..n + 7).map(|(n, _)| *n).collect();
            let b: Vec<u64> = model.range(n..n + 7).map(|(n, _)| *n).collect();
            assert_eq!(a, b, "range({n}..{})", n + 7);
            let a: Vec<u64> = map.range(n..=n + 3).map(|(n, _)| *n).collect();
            let b: Vec<u64> = model.range(n..=n + 3).map(|(n, _)| *n).collect();
            assert_eq!(a, b, "range({n}..={})", n + 3);
            let a = map
                .range((Bound::Excluded(n), Bound::Unbounded))
                .next()
                .map(|e| *e.0);
            let b = model
                .range((Bound::Excluded(n), Bound::Unbounded))
                .next()
                .map(|e| *e.0);
            assert_eq!(a, b, "first after {n}");
            let a: Vec<u64> = map.range(0..n).map(|(n, _)| *n).collect();
            let b: Vec<u64> = model.range(0..n).map(|(n, _)| *n).collect();
            assert_eq!(a, b, "range(0..{n})");
        }
    }

    #[test]
    fn acknowledged_in_order_and_out_of_order() {
        let mut map = SentPackets::new();
        let mut model = BTreeMap::new();
        // Sent with gaps (skipped packet numbers), as the Data space does.
        for n in (0..200u64).filter(|n| n % 17 != 5) {
            map.insert(n, packet(n as u16));
            model.insert(n, n as u16);
        }
        check(&map, &model);
        // Every third packet acknowledged, then the oldest ones, then everything left.
        for n in (0..200u64).step_by(3) {
            assert_eq!(map.remove(&n).map(|p| p.size), model.remove(&n));
        }
        check(&map, &model);
        assert!(map.remove(&3).is_none(), "removed twice");
        for n in 0..60u64 {
            assert_eq!(map.remove(&n).map(|p| p.size), model.remove(&n));
        }
        check(&map, &model);
        for n in (0..250u64).rev() {
            assert_eq!(map.remove(&n).map(|p| p.size), model.remove(&n));
        }
        check(&map, &model);
        assert!(map.entries.is_empty());
        // And used again after being emptied.
        map.insert(300, packet(1));
        model.insert(300, 1);
        check(&map, &model);
    }

    #[test]
    fn an_old_packet_held_keeps_memory_proportional_to_live_ones() {
        let mut map = SentPackets::new();
        map.insert(0, packet(0));
        for n in 1..100_000u64 {
            map.insert(n, packet(1));
            if n > 1 {
                // The one before the newest: a vacant entry in the middle.
                map.remove(&(n - 1));
            }
        }
        assert_eq!(map.len(), 2);
        assert!(
            map.entries.len() <= 2 * 2 + SLACK + 1,
            "{} entries",
            map.entries.len()
        );
        assert_eq!(map[&0].size, 0);
    }

    #[test]
    fn out_of_order_insert_and_replace() {
        let mut map = SentPackets::new();
        let mut model = BTreeMap::new();
        for n in [10u64, 20, 5, 15, 20, 0] {
            map.insert(n, packet(n as u16 + 1));
            model.insert(n, n as u16 + 1);
        }
        check(&map, &model);
        let values: Vec<u16> = map.into_values().map(|p| p.size).collect();
        assert_eq!(values, model.into_values().collect::<Vec<_>>());
    }

    #[test]
    fn values_mut_reaches_every_live_packet() {
        let mut map = SentPackets::new();
        for n in 0..10u64 {
            map.insert(n, packet(1));
        }
        map.remove(&4);
        for p in map.values_mut() {
            p.size = 9;
        }
        assert_eq!(map.values().filter(|p| p.size == 9).count(), 9);
    }
}
