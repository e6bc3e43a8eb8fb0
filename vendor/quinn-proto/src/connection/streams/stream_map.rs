//! (fibra) The streams of a connection by ID, in place of the `FxHashMap<StreamId, _>` that
//! quinn-proto 0.11.19 keeps for each half (see `FIBRA.md` at the crate's root).
//!
//! Stream IDs of one kind (initiator and direction) are handed out in order, and the ones in
//! use at a time are few and close together: the streams open now and the slots kept ready
//! for the streams the peer may open next. A hash map scatters them over its whole table, so a
//! request touches a cold cache line for each lookup once there are many connections. Here each
//! kind has a ring of slots for a window of consecutive stream indices, where neighbours share
//! cache lines; the IDs that fall behind the window (a stream left open while many newer ones
//! come and go) move to a hash map of their own, so memory stays bounded by the window plus the
//! streams that are still live.

use std::{collections::VecDeque, ops::Index};

use rustc_hash::FxHashMap;

use crate::StreamId;

/// The most slots a kind's ring holds; beyond it, the oldest entries move to `behind`.
const WINDOW: usize = 1024;

/// Values by stream ID; the subset of a hash map's interface that the streams' state uses.
#[derive(Debug)]
pub(crate) struct StreamMap<V> {
    /// By the ID's two low bits: initiator and direction.
    kinds: [Kind<V>; 4],
}

/// The entries of one kind of stream.
#[derive(Debug)]
struct Kind<V> {
    /// The stream index (the ID without its two low bits) of `slots[0]`.
    base: u64,
    /// Entries for indices `base..base + slots.len()`; `None` where there is none. The first
    /// and the last slot, if any, hold one.
    slots: VecDeque<Option<V>>,
    /// Entries for indices below `base`.
    behind: FxHashMap<u64, V>,
}

impl<V> Default for Kind<V> {
    fn default() -> Self {
        Self {
            base: 0,
            slots: VecDeque::new(),
            behind: FxHashMap::default(),
        }
    }
}

impl<V> Default for StreamMap<V> {
    fn default() -> Self {
        Self {
            kinds: Default::default(),
        }
    }
}

/// Where an index's entry would be kept.
enum Place {
    /// `slots[i]`, if the ring reaches that far.
    Ring(usize),
    /// In `behind`.
    Behind,
}

impl<V> Kind<V> {
    /// Where `index`'s entry would be; `None` for an index too far ahead of the ring to have
    /// one (its offset does not fit a `usize`).
    fn place(&self, index: u64) -> Option<Place> {
        match index.checked_sub(self.base) {
            Some(i) => usize::try_from(i).ok().map(Place::Ring),
            None => Some(Place::Behind),
        }
    }

    fn get(&self, index: u64) -> Option<&V> {
        match self.place(index)? {
            Place::Ring(i) => self.slots.get(i)?.as_ref(),
            Place::Behind => self.behind.get(&index),
        }
    }

    fn get_mut(&mut self, index: u64) -> Option<&mut V> {
        match self.place(index)? {
            Place::Ring(i) => self.slots.get_mut(i)?.as_mut(),
            Place::Behind => self.behind.get_mut(&index),
        }
    }

    fn insert(&mut self, index: u64, value: V) -> Option<V> {
        if self.slots.is_empty() && self.behind.is_empty() {
            // Nothing kept: the ring starts here, also below where it was (the streams opened
            // again from the first after 0-RTT data was rejected).
            self.base = index;
        }
        if index < self.base {
            return self.behind.insert(index, value);
        }
        // The ring ends within the window of `index`: older entries move behind it. (Stream
        // IDs come in order, so this moves one entry at a time, if any; an index far ahead
        // empties the ring without a slot for each index between.)
        let low = index.saturating_sub(WINDOW as u64 - 1);
        while self.base < low {
            match self.slots.pop_front() {
                Some(Some(old)) => {
                    self.behind.insert(self.base, old);
                    self.base += 1;
                }
                Some(None) => self.base += 1,
                None => break,
            }
        }
        if self.slots.is_empty() {
            // Every index in `behind` is below the old base, so below this one too.
            self.base = index;
        }
        let i = (index - self.base) as usize;
        debug_assert!(i < WINDOW);
        if i < self.slots.len() {
            return self.slots[i].replace(value);
        }
        while self.slots.len() < i {
            self.slots.push_back(None);
        }
        self.slots.push_back(Some(value));
        self.trim();
        None
    }

    fn remove(&mut self, index: u64) -> Option<V> {
        let value = match self.place(index)? {
            Place::Ring(i) => self.slots.get_mut(i)?.take()?,
            Place::Behind => return self.behind.remove(&index),
        };
        self.trim();
        Some(value)
    }

    /// Drops the empty slots at either end of the ring.
    fn trim(&mut self) {
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.base += 1;
        }
        while self.slots.back().is_some_and(Option::is_none) {
            self.slots.pop_back();
        }
    }
}

impl<V> StreamMap<V> {
    fn kind(&self, id: StreamId) -> (&Kind<V>, u64) {
        (&self.kinds[(id.0 & 3) as usize], id.index())
    }

    fn kind_mut(&mut self, id: StreamId) -> (&mut Kind<V>, u64) {
        (&mut self.kinds[(id.0 & 3) as usize], id.index())
    }

    pub(crate) fn get(&self, id: &StreamId) -> Option<&V> {
        let (kind, index) = self.kind(*id);
        kind.get(index)
    }

    pub(crate) fn get_mut(&mut self, id: &StreamId) -> Option<&mut V> {
        let (kind, index) = self.kind_mut(*id);
        kind.get_mut(index)
    }

    pub(crate) fn contains_key(&self, id: &StreamId) -> bool {
        self.get(id).is_some()
    }

    /// Sets `id`'s value; returns the one it replaces.
    pub(crate) fn insert(&mut self, id: StreamId, value: V) -> Option<V> {
        let (kind, index) = self.kind_mut(id);
        kind.insert(index, value)
    }

    pub(crate) fn remove(&mut self, id: &StreamId) -> Option<V> {
        let (kind, index) = self.kind_mut(*id);
        kind.remove(index)
    }

    /// How many IDs have a value.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let kinds = self.kinds.iter();
        kinds
            .map(|k| k.slots.iter().flatten().count() + k.behind.len())
            .sum()
    }

    /// `id`'s entry, if it has a value (as a hash map's occupied entry).
    pub(crate) fn occupied(&mut self, id: StreamId) -> Option<Occupied<'_, V>> {
        self.contains_key(&id).then_some(Occupied { map: self, id })
    }
}

impl<V> Index<&StreamId> for StreamMap<V> {
    type Output = V;

    fn index(&self, id: &StreamId) -> &V {
        self.get(id).expect("no entry for the stream")
    }
}

/// An ID that has a value in a [`StreamMap`].
pub(crate) struct Occupied<'a, V> {
    map: &'a mut StreamMap<V>,
    id: StreamId,
}

impl<V> Occupied<'_, V> {
    pub(crate) fn get(&self) -> &V {
        &self.map[&self.id]
    }

    pub(crate) fn get_mut(&mut self) -> &mut V {
        self.map
            .get_mut(&self.id)
            .expect("an occupied entry has a value")
    }

    pub(crate) fn remove(self) -> V {
        self.remove_entry().1
    }

    pub(crate) fn remove_entry(self) -> (StreamId, V) {
        let value = self
            .map
            .remove(&self.id)
            .expect("an occupied entry has a value");
        (self.id, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dir, Side};
    use std::collections::HashMap;

    fn id(n: u64) -> StreamId {
        let side = if n & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        };
        let dir = if n & 2 == 0 { Dir::Bi } else { Dir::Uni };
        StreamId::new(side, dir, n >> 2)
    }

    /// Random inserts and removes, mostly of recent IDs with a few old ones kept for long:
    /// always the same answers as a hash map, and the ring never past its window.
    #[test]
    fn answers_as_a_hash_map_does() {
        let mut map = StreamMap::default();
        let mut model = HashMap::new();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let mut newest = 0u64;
        for step in 0..200_000u64 {
            // New streams keep coming; one access in ten is to any ID so far, which leaves
            // old entries behind the window.
            newest += next(3);
            let n = match next(10) {
                0 => next(newest + 1),
                _ => newest.saturating_sub(next(600)),
            };
            let key = id(n);
            match next(3) {
                0 => {
                    assert_eq!(map.insert(key, step), model.insert(key, step));
                }
                1 => assert_eq!(map.remove(&key), model.remove(&key)),
                _ => {
                    if let Some(mut e) = map.occupied(key) {
                        *e.get_mut() += 1;
                        *model.get_mut(&key).unwrap() += 1;
                        if next(2) == 0 {
                            assert_eq!(e.remove(), model.remove(&key).unwrap());
                        }
                    } else {
                        assert!(!model.contains_key(&key));
                    }
                }
            }
            assert_eq!(map.get(&key), model.get(&key));
            if step % 1000 == 0 {
                assert_eq!(map.len(), model.len());
            }
            for kind in &map.kinds {
                assert!(kind.slots.len() <= WINDOW);
                assert!(kind.slots.front().is_none_or(Option::is_some));
                assert!(kind.slots.back().is_none_or(Option::is_some));
                if step % 1000 == 0 {
                    assert!(kind.behind.keys().all(|&k| k < kind.base));
                }
            }
        }
        for (key, value) in &model {
            assert_eq!(map[key], *value);
        }
        assert!(
            map.kinds.iter().all(|k| !k.behind.is_empty()),
            "the test reached `behind`"
        );
    }

    /// An index far ahead of the others: no slot for each index between, and the older
    /// entries are still found.
    #[test]
    fn a_far_index_takes_no_slots_between() {
        let mut map = StreamMap::default();
        for n in 0..10 {
            map.insert(id(n * 4), n);
        }
        map.insert(id(1 << 50), 99);
        assert!(map.kinds[0].slots.len() <= 1);
        for n in 0..10 {
            assert_eq!(map.get(&id(n * 4)), Some(&n));
        }
        assert_eq!(map.get(&id(1 << 50)), Some(&99));
        assert_eq!(map.remove(&id(1 << 50)), Some(99));
        assert_eq!(map.len(), 10);
    }

    /// Once every entry is gone, the ring starts again where the next one is, also below
    /// where it was (local streams opened again from index 0 after 0-RTT was rejected).
    #[test]
    fn an_emptied_map_starts_again_anywhere() {
        let mut map = StreamMap::default();
        for n in 10..20 {
            map.insert(id(n * 4), n);
        }
        for n in 10..20 {
            assert_eq!(map.remove(&id(n * 4)), Some(n));
        }
        map.insert(id(0), 0);
        map.insert(id(4), 1);
        assert_eq!(map.kinds[0].slots.len(), 2);
        assert!(map.kinds[0].behind.is_empty());
        assert_eq!(map.get(&id(4)), Some(&1));
    }

    /// A stream left open while a million newer ones come and go: the ring stays within its
    /// window, and the old stream is still found.
    #[test]
    fn an_old_stream_does_not_hold_the_window_open() {
        let mut map = StreamMap::default();
        map.insert(id(0), 0u64);
        for n in 1..1_000_000u64 {
            map.insert(id(n * 4), n);
            if n > 1 {
                map.remove(&id((n - 1) * 4));
            }
        }
        assert_eq!(map.get(&id(0)), Some(&0));
        assert!(map.kinds[0].slots.len() <= WINDOW);
        assert_eq!(map.len(), 2);
    }
}
