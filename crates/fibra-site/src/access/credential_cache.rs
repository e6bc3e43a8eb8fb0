//! [`CredentialCache`]: a fixed-size table of 128-bit tags (keyed hashes of `Authorization`
//! values) that a [`BasicAuth`](super::BasicAuth) has already judged, so that a repeated
//! header costs one hash and a few loads instead of a bcrypt run.
//!
//! The table is 4-way set associative and never grows. Reads take no lock and write nothing
//! shared: each slot is a seqlock (a sequence number, odd while a writer is inside) over
//! atomics, so worker threads that hit the same entry do not bounce a cache line between
//! them. A writer that finds the slot busy gives up: losing an insert only costs a later
//! re-verification.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use siphasher::sip128::Hash128;

/// Slots per set: a newcomer replaces one of these.
const WAYS: usize = 4;

/// One entry: a tag and the time it is good until.
#[derive(Default)]
struct Slot {
    /// Even when the slot is stable, odd while a writer fills it.
    seq: AtomicU64,
    h1: AtomicU64,
    h2: AtomicU64,
    /// Good while `now < until` (in the owner's clock); 0 marks an empty slot, so that the
    /// all-zero tag of an empty slot never matches.
    until: AtomicU64,
}

/// A bounded set of tags, each good until a time. See the module docs.
pub(crate) struct CredentialCache {
    slots: Box<[Slot]>,
    /// Sets − 1; the number of sets is a power of two.
    set_mask: usize,
}

impl CredentialCache {
    /// A table of at least `entries` slots (rounded up to a power of two, at least one set).
    pub(crate) fn new(entries: usize) -> CredentialCache {
        let sets = entries.div_ceil(WAYS).max(1).next_power_of_two();
        let slots = (0..sets * WAYS).map(|_| Slot::default()).collect();
        CredentialCache {
            slots,
            set_mask: sets - 1,
        }
    }

    /// The number of slots.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn set(&self, tag: Hash128) -> &[Slot] {
        // The tag is a keyed hash, so its bits spread evenly and cannot be aimed at one set.
        let first = (tag.h1 as usize & self.set_mask) * WAYS;
        &self.slots[first..first + WAYS]
    }

    /// Whether `tag` is in the table and still good at `now`.
    #[inline]
    pub(crate) fn contains(&self, tag: Hash128, now: u64) -> bool {
        self.set(tag).iter().any(|slot| slot.holds(tag, now))
    }

    /// Puts `tag` in, good until `until` (> `now`). Replaces the same tag, else a slot that is
    /// empty or expired at `now`, else one picked by the tag's bits.
    pub(crate) fn insert(&self, tag: Hash128, now: u64, until: u64) {
        let set = self.set(tag);
        let loaded = |slot: &Slot| {
            Hash128 {
                h1: slot.h1.load(Ordering::Relaxed),
                h2: slot.h2.load(Ordering::Relaxed),
            } == tag
        };
        let slot = set
            .iter()
            .find(|slot| loaded(slot))
            .or_else(|| {
                set.iter()
                    .find(|slot| slot.until.load(Ordering::Relaxed) <= now)
            })
            .unwrap_or(&set[(tag.h2 as usize) % WAYS]);
        slot.write(tag, until.max(1));
    }

    /// Empties the table.
    #[cfg(test)]
    pub(crate) fn clear(&self) {
        for slot in self.slots.iter() {
            slot.write(Hash128::default(), 0);
        }
    }
}

impl Slot {
    /// A consistent read of the slot compared with `tag`; a read that races a writer is
    /// retried a few times and then counts as a miss.
    #[inline]
    fn holds(&self, tag: Hash128, now: u64) -> bool {
        for _ in 0..4 {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let found = Hash128 {
                    h1: self.h1.load(Ordering::Relaxed),
                    h2: self.h2.load(Ordering::Relaxed),
                };
                let until = self.until.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    // `Hash128`'s `==` is constant-time.
                    return found == tag && now < until;
                }
            }
            std::hint::spin_loop();
        }
        false
    }

    /// Fills the slot unless another writer is inside it.
    fn write(&self, tag: Hash128, until: u64) {
        let seq = self.seq.load(Ordering::Relaxed);
        if seq & 1 == 1
            || self
                .seq
                .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        // Readers that see any of the stores below also see the odd sequence number.
        fence(Ordering::Release);
        self.h1.store(tag.h1, Ordering::Relaxed);
        self.h2.store(tag.h2, Ordering::Relaxed);
        self.until.store(until, Ordering::Relaxed);
        self.seq.store(seq + 2, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(n: u64) -> Hash128 {
        // Spread like a real keyed hash would.
        let h = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Hash128 {
            h1: h,
            h2: h.rotate_left(29) ^ n,
        }
    }

    #[test]
    fn holds_what_was_put_in_until_it_expires() {
        let cache = CredentialCache::new(16);
        assert!(!cache.contains(tag(1), 0));
        cache.insert(tag(1), 0, 100);
        assert!(cache.contains(tag(1), 0));
        assert!(cache.contains(tag(1), 99));
        assert!(!cache.contains(tag(1), 100));
        assert!(!cache.contains(tag(2), 0));
        cache.clear();
        assert!(!cache.contains(tag(1), 0));
    }

    #[test]
    fn the_zero_tag_does_not_match_an_empty_slot() {
        let cache = CredentialCache::new(4);
        assert!(!cache.contains(Hash128::default(), 0));
    }

    #[test]
    fn stays_bounded() {
        let cache = CredentialCache::new(1000);
        assert_eq!(cache.capacity(), 1024);
        for n in 0..100_000 {
            cache.insert(tag(n), 0, u64::MAX);
        }
        assert_eq!(cache.capacity(), 1024);
        let held = (0..100_000).filter(|&n| cache.contains(tag(n), 0)).count();
        assert!(held <= 1024, "{held}");
        // The latest insert is always there.
        assert!(cache.contains(tag(99_999), 0));
    }

    #[test]
    fn concurrent_readers_and_writers_see_whole_tags() {
        let cache = CredentialCache::new(4);
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let cache = &cache;
                s.spawn(move || {
                    for n in 0..20_000 {
                        cache.insert(tag(t * 1_000_000 + n % 8), 0, u64::MAX);
                    }
                });
            }
            // A torn read would mix two tags; none of these mixes was ever inserted.
            for n in 0..20_000u64 {
                let mixed = Hash128 {
                    h1: tag(n % 8).h1,
                    h2: tag(1_000_000 + n % 8).h2,
                };
                assert!(!cache.contains(mixed, 0));
            }
        });
    }
}
