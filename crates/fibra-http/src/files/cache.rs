//! The file-info cache (Mighty's `FileInfo`/`FdCache`, nginx's `open_file_cache`): request
//! path -> [`Lookup`], so a hot file costs one hash lookup and no system call per request.
//!
//! Keyed by the raw (still percent-encoded) path below the mount point. The value holds the
//! pre-rendered `ETag`/`Last-Modified`/`Content-Type`, and either the contents (small files)
//! or an open fd. Misses (404s) are cached too, so a missing `.br`/`.gz` sibling or a
//! hammered missing path costs nothing per request. Only paths that passed `path::resolve` are
//! ever inserted, so a hit needs no re-validation.
//!
//! Freshness: each entry carries the names it depends on ([`Deps`]); the file server applies
//! every batch of change events ([`Invalidation`], from `watch.rs`) before it looks anything
//! up, so an edit, a new file or a deletion is seen by the first request after the event is
//! read. An insert made across a batch (the lookup may predate the change) is discarded. The
//! TTL is a backstop for what inotify cannot see (a network filesystem changed elsewhere).
//!
//! Bounds: at most `capacity` entries and `max_bytes` of file contents held in memory.
//! Eviction is CLOCK (second chance) per shard: a hit sets the entry's reference bit, the hand
//! clears set bits and takes the first clear one. An insert costs O(1) amortised, and a
//! random-order working set larger than the cache keeps a hit rate of about capacity/set
//! instead of thrashing.
//!
//! Sharing: `SHARDS` `std::sync::Mutex`-guarded shards. A lock is held only for a hash lookup,
//! an insert or a scan (never across I/O or a fiber switch), so the std mutex is right even
//! inside fibers. Dropping an entry closes its fds once no in-flight response holds them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::open::Lookup;
use super::watch::{Deps, Invalidation};

const SHARDS: usize = 16;

/// Counters for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that went to the filesystem.
    pub misses: u64,
}

#[derive(Debug)]
struct Slot {
    key: Box<str>,
    value: Lookup,
    /// When the entry stops being trusted (`None`: a TTL too long to add).
    expires: Option<Instant>,
    deps: Deps,
    /// Bytes of file contents the entry holds in memory.
    bytes: u64,
    /// CLOCK's reference bit: set by a hit, cleared as the hand passes.
    referenced: bool,
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<Box<str>, usize>,
    /// The clock: `None` for a free place.
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    hand: usize,
    bytes: u64,
}

impl Shard {
    fn remove(&mut self, i: usize) {
        if let Some(slot) = self.slots[i].take() {
            self.map.remove(&slot.key);
            self.bytes -= slot.bytes;
            self.free.push(i);
        }
    }

    /// Evicts by CLOCK until one more entry of `bytes` fits.
    fn make_room(&mut self, cap: usize, max_bytes: u64, bytes: u64, now: Instant) {
        let mut steps = 0;
        while (self.map.len() >= cap || self.bytes + bytes > max_bytes) && !self.map.is_empty() {
            // Two turns clear every bit, so the loop ends; the bound is a belt.
            steps += 1;
            if steps > 2 * self.slots.len() + 1 {
                break;
            }
            self.hand = (self.hand + 1) % self.slots.len();
            let i = self.hand;
            let Some(slot) = &mut self.slots[i] else {
                continue;
            };
            let expired = slot.expires.is_some_and(|e| now >= e);
            if slot.referenced && !expired {
                slot.referenced = false;
            } else {
                self.remove(i);
            }
        }
    }
}

/// A sharded, bounded map from request path to `Lookup`, invalidated by change events.
#[derive(Debug)]
pub struct FileCache {
    shards: Box<[Mutex<Shard>]>,
    ttl: Duration,
    per_shard: usize,
    bytes_per_shard: u64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl FileCache {
    /// A cache of at most `capacity` entries (zero disables it) holding at most `max_bytes`
    /// of file contents, trusting an entry for `ttl` at most.
    pub fn new(ttl: Duration, capacity: usize, max_bytes: u64) -> FileCache {
        FileCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            ttl,
            per_shard: capacity.div_ceil(SHARDS),
            bytes_per_shard: max_bytes / SHARDS as u64,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Whether anything is ever cached.
    pub fn enabled(&self) -> bool {
        self.per_shard > 0 && !self.ttl.is_zero()
    }

    /// The cached lookup for `key`, if there is a fresh one (counted as a hit or a miss).
    pub fn get(&self, key: &str, now: Instant) -> Option<Lookup> {
        if self.enabled() {
            let mut shard = lock(&self.shards[shard_of(key)]);
            if let Some(&i) = shard.map.get(key) {
                if let Some(slot) = &mut shard.slots[i] {
                    if slot.expires.map_or(true, |e| now < e) {
                        slot.referenced = true;
                        let v = slot.value.clone();
                        drop(shard);
                        self.hits.fetch_add(1, Ordering::Relaxed);
                        return Some(v);
                    }
                }
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Caches `value` for `key`, unless `still_current()` (asked under the shard's lock) says
    /// a batch of change events was applied since the lookup began. The invalidation bumps its
    /// epoch before it scans, so an entry inserted here is either refused or scanned.
    pub fn insert(
        &self,
        key: &str,
        value: &Lookup,
        deps: Deps,
        now: Instant,
        still_current: impl FnOnce() -> bool,
    ) {
        if !self.enabled() {
            return;
        }
        let bytes = value.bytes_in_memory() + key.len() as u64;
        if bytes > self.bytes_per_shard {
            return;
        }
        let mut shard = lock(&self.shards[shard_of(key)]);
        if !still_current() {
            return;
        }
        if let Some(&i) = shard.map.get(key) {
            shard.remove(i);
        }
        shard.make_room(self.per_shard, self.bytes_per_shard, bytes, now);
        let slot = Slot {
            key: key.into(),
            value: value.clone(),
            expires: now.checked_add(self.ttl),
            deps,
            bytes,
            referenced: false,
        };
        let i = match shard.free.pop() {
            Some(i) => {
                shard.slots[i] = Some(slot);
                i
            }
            None => {
                shard.slots.push(Some(slot));
                shard.slots.len() - 1
            }
        };
        shard.map.insert(key.into(), i);
        shard.bytes += bytes;
    }

    /// Drops every entry `inv` names.
    pub fn invalidate(&self, inv: &Invalidation) {
        for shard in self.shards.iter() {
            let mut shard = lock(shard);
            for i in 0..shard.slots.len() {
                if shard.slots[i].as_ref().is_some_and(|s| inv.drops(&s.deps)) {
                    shard.remove(i);
                }
            }
        }
    }

    /// Hit/miss counters since creation.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Number of cached entries (all shards).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).map.len()).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of file contents held in memory (all shards).
    pub fn bytes(&self) -> u64 {
        self.shards.iter().map(|s| lock(s).bytes).sum()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a shard inconsistent (its operations do not
    // unwind halfway), so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// FNV-1a: cheap, and shard choice needs no DoS resistance (each shard's map uses SipHash).
fn shard_of(key: &str) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    for &b in key.as_bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h as usize % SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes() -> bool {
        true
    }

    #[test]
    fn hit_then_expiry() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        assert!(c.get("/a", t0).is_none());
        c.insert("/a", &Lookup::NotFound, Deps::default(), t0, yes);
        let hit = c.get("/a", t0 + Duration::from_secs(9));
        assert!(matches!(hit, Some(Lookup::NotFound)));
        assert!(c.get("/a", t0 + Duration::from_secs(10)).is_none());
        assert_eq!(c.stats(), CacheStats { hits: 1, misses: 2 });
    }

    #[test]
    fn stale_inserts_are_refused_and_disabled_caches_hold_nothing() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        c.insert("/x", &Lookup::NotFound, Deps::default(), t0, || false);
        assert!(c.is_empty());
        for c in [
            FileCache::new(Duration::ZERO, 64, 1 << 20),
            FileCache::new(Duration::from_secs(1), 0, 1 << 20),
        ] {
            c.insert("/x", &Lookup::NotFound, Deps::default(), t0, yes);
            assert!(c.get("/x", t0).is_none() && c.is_empty());
        }
    }

    #[test]
    fn invalidation_drops_what_it_names() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        c.insert("/a", &Lookup::NotFound, Deps::default(), t0, yes);
        let broad = Deps {
            broad: true,
            ..Deps::default()
        };
        c.insert("/link", &Lookup::NotFound, broad, t0, yes);
        c.invalidate(&Invalidation::default());
        assert!(c.get("/a", t0).is_some() && c.get("/link", t0).is_none());
        c.invalidate(&Invalidation {
            all: true,
            ..Invalidation::default()
        });
        assert!(c.is_empty());
    }

    #[test]
    fn bounded_and_clock_keeps_what_is_used() {
        let c = FileCache::new(Duration::from_secs(10), 32, 1 << 20);
        let t0 = Instant::now();
        c.insert("/hot", &Lookup::Dir, Deps::default(), t0, yes);
        for i in 0..1000 {
            // A hot entry, used between every two inserts, survives them all.
            assert!(c.get("/hot", t0).is_some(), "evicted at {i}");
            let key = format!("/f{i}");
            c.insert(&key, &Lookup::NotFound, Deps::default(), t0, yes);
            assert!(c.len() <= 32, "{}", c.len());
        }
        assert!(c.len() >= 16);
    }

    #[test]
    fn bounded_in_bytes() {
        let c = FileCache::new(Duration::from_secs(10), 1000, 16 * 100);
        let t0 = Instant::now();
        for i in 0..1000 {
            c.insert(
                &format!("/{i:04}"),
                &Lookup::NotFound,
                Deps::default(),
                t0,
                yes,
            );
        }
        assert!(c.bytes() <= 16 * 100, "{}", c.bytes());
        assert!(c.len() >= 100, "{}", c.len());
    }
}
