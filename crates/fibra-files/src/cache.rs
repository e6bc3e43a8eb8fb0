//! The file-info cache (Mighty's `FileInfo`/`FdCache`, nginx's `open_file_cache`): request
//! path -> [`Lookup`], so a hot file costs one hash lookup and no system call per request.
//!
//! Keyed by the raw (still percent-encoded) path below the mount point, and by a *space*: one
//! cache may serve several file servers (a site file's roots: one bound on entries and bytes
//! for all of them), each looking up and invalidating its own space only. The value holds the
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
//!
//! Hashing: one keyed hash per operation (SipHash-1-3 with this process's random keys, std's
//! `RandomState`), used for both the shard (bits 32-35) and the shard's `hashbrown` table
//! (which takes the bucket from the low bits and its tag from the top seven). The keys make
//! the hash unknown to a client, so paths chosen to collide cannot pile up in one bucket (the
//! cache holds 404s too, so a client chooses what goes in). Each slot keeps the whole hash,
//! compared before the key, and a key of up to `INLINE_KEY` bytes (nearly every request path)
//! is stored in the slot itself: a hit touches the table and its slot, no other allocation.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hashbrown::HashTable;

use crate::open::Lookup;
use crate::watch::{Deps, Invalidation};
use fibra_http::inline_bytes::InlineBytes;

const SHARDS: usize = 16;

/// Keys up to this many bytes live in the slot (the rest in their own allocation).
const INLINE_KEY: usize = 46;

/// Counters for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that went to the filesystem.
    pub misses: u64,
}

/// A cached request path: in the slot when short, else boxed.
type Key = InlineBytes<INLINE_KEY>;

/// One entry, stored in the shard's table. The fields a hit reads come first (`repr(C)`
/// keeps them together: the hash, the key, the value and its expiry).
#[derive(Debug)]
#[repr(C)]
struct Slot {
    /// The cache's hash of `space` and `key`.
    hash: u64,
    /// Which catalog's entry it is (their change events and watches are their own).
    space: u32,
    key: Key,
    value: Lookup,
    /// When the entry stops being trusted (`None`: a TTL too long to add).
    expires: Option<Instant>,
    /// CLOCK's reference bit: set by a hit, cleared as the hand passes.
    referenced: bool,
    /// Bytes of file contents the entry holds in memory.
    bytes: u64,
    deps: Deps,
}

impl Slot {
    fn is(&self, hash: u64, space: u32, key: &[u8]) -> bool {
        self.hash == hash && self.space == space && self.key.as_bytes() == key
    }
}

#[derive(Debug, Default)]
struct Shard {
    table: HashTable<Slot>,
    /// The clock's hand: a bucket index of `table`.
    hand: usize,
    bytes: u64,
}

impl Shard {
    /// Evicts by CLOCK until one more entry of `bytes` fits. The clock is the table's bucket
    /// array: removals leave it as it is, and when an insert rebuilds it the hand just goes on
    /// from the same index (a second chance lost or given, never an unbounded scan).
    fn make_room(&mut self, cap: usize, max_bytes: u64, bytes: u64, now: Instant) {
        let buckets = self.table.num_buckets();
        let mut steps = 0;
        while (self.table.len() >= cap || self.bytes + bytes > max_bytes) && !self.table.is_empty()
        {
            // Two turns clear every bit, so the loop ends; the bound is a belt.
            steps += 1;
            if steps > 2 * buckets + 1 {
                break;
            }
            self.hand = (self.hand + 1) % buckets;
            let Some(slot) = self.table.get_bucket_mut(self.hand) else {
                continue;
            };
            let expired = slot.expires.is_some_and(|e| now >= e);
            if slot.referenced && !expired {
                slot.referenced = false;
            } else if let Ok(entry) = self.table.get_bucket_entry(self.hand) {
                let (slot, _) = entry.remove();
                self.bytes -= slot.bytes;
            }
        }
    }
}

/// A sharded, bounded map from request path to `Lookup`, invalidated by change events.
#[derive(Debug)]
pub struct FileCache {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
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
            hasher: RandomState::new(),
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

    /// The keyed hash of `key`, with `space` mixed in after it (a multiply by an odd
    /// constant: spaces land on different hashes, and a cache of one space pays two
    /// instructions for it).
    #[inline]
    fn hash(&self, space: u32, key: &str) -> u64 {
        self.hasher.hash_one(key.as_bytes()) ^ u64::from(space).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    fn shard(&self, hash: u64) -> &Mutex<Shard> {
        &self.shards[(hash >> 32) as usize % SHARDS]
    }

    /// The cached lookup for `key` in `space`, if there is a fresh one (counted as a hit or
    /// a miss).
    pub fn get(&self, space: u32, key: &str, now: Instant) -> Option<Lookup> {
        if self.enabled() {
            let hash = self.hash(space, key);
            let mut shard = lock(self.shard(hash));
            if let Some(slot) = shard
                .table
                .find_mut(hash, |s| s.is(hash, space, key.as_bytes()))
            {
                if slot.expires.is_none_or(|e| now < e) {
                    slot.referenced = true;
                    let v = slot.value.clone();
                    drop(shard);
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Some(v);
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
        space: u32,
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
        let hash = self.hash(space, key);
        let mut guard = lock(self.shard(hash));
        if !still_current() {
            return;
        }
        let shard = &mut *guard;
        if let Ok(old) = shard
            .table
            .find_entry(hash, |s| s.is(hash, space, key.as_bytes()))
        {
            let (old, _) = old.remove();
            shard.bytes -= old.bytes;
        }
        shard.make_room(self.per_shard, self.bytes_per_shard, bytes, now);
        let slot = Slot {
            hash,
            space,
            key: Key::new(key.as_bytes()),
            value: value.clone(),
            expires: now.checked_add(self.ttl),
            referenced: false,
            bytes,
            deps,
        };
        shard.table.insert_unique(hash, slot, |s| s.hash);
        shard.bytes += bytes;
    }

    /// Drops every entry of `space` that `inv` names.
    pub fn invalidate(&self, space: u32, inv: &Invalidation) {
        self.drop_where(|s| s.space == space && inv.drops(&s.deps));
    }

    /// Drops every entry of `space` (its file server is gone).
    pub fn purge(&self, space: u32) {
        self.drop_where(|s| s.space == space);
    }

    fn drop_where(&self, drop: impl Fn(&Slot) -> bool) {
        for shard in self.shards.iter() {
            let mut guard = lock(shard);
            let shard = &mut *guard;
            let mut freed = 0;
            shard.table.retain(|s| {
                let keep = !drop(s);
                if !keep {
                    freed += s.bytes;
                }
                keep
            });
            shard.bytes -= freed;
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
        self.shards.iter().map(|s| lock(s).table.len()).sum()
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
        assert!(c.get(0, "/a", t0).is_none());
        c.insert(0, "/a", &Lookup::NotFound, Deps::default(), t0, yes);
        let hit = c.get(0, "/a", t0 + Duration::from_secs(9));
        assert!(matches!(hit, Some(Lookup::NotFound)));
        assert!(c.get(0, "/a", t0 + Duration::from_secs(10)).is_none());
        assert_eq!(c.stats(), CacheStats { hits: 1, misses: 2 });
    }

    #[test]
    fn stale_inserts_are_refused_and_disabled_caches_hold_nothing() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        c.insert(0, "/x", &Lookup::NotFound, Deps::default(), t0, || false);
        assert!(c.is_empty());
        for c in [
            FileCache::new(Duration::ZERO, 64, 1 << 20),
            FileCache::new(Duration::from_secs(1), 0, 1 << 20),
        ] {
            c.insert(0, "/x", &Lookup::NotFound, Deps::default(), t0, yes);
            assert!(c.get(0, "/x", t0).is_none() && c.is_empty());
        }
    }

    #[test]
    fn spaces_are_apart() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        c.insert(1, "/a", &Lookup::NotFound, Deps::default(), t0, yes);
        c.insert(2, "/a", &Lookup::Dir, Deps::default(), t0, yes);
        assert!(matches!(c.get(1, "/a", t0), Some(Lookup::NotFound)));
        assert!(matches!(c.get(2, "/a", t0), Some(Lookup::Dir)));
        assert!(c.get(3, "/a", t0).is_none());
        c.invalidate(
            1,
            &Invalidation {
                all: true,
                ..Invalidation::default()
            },
        );
        assert!(c.get(1, "/a", t0).is_none() && c.get(2, "/a", t0).is_some());
        c.purge(2);
        assert!(c.is_empty());
    }

    #[test]
    fn invalidation_drops_what_it_names() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        c.insert(0, "/a", &Lookup::NotFound, Deps::default(), t0, yes);
        let broad = Deps {
            broad: true,
            ..Deps::default()
        };
        c.insert(0, "/link", &Lookup::NotFound, broad, t0, yes);
        c.invalidate(0, &Invalidation::default());
        assert!(c.get(0, "/a", t0).is_some() && c.get(0, "/link", t0).is_none());
        c.invalidate(
            0,
            &Invalidation {
                all: true,
                ..Invalidation::default()
            },
        );
        assert!(c.is_empty());
    }

    #[test]
    fn bounded_and_clock_keeps_what_is_used() {
        let c = FileCache::new(Duration::from_secs(10), 32, 1 << 20);
        let t0 = Instant::now();
        c.insert(0, "/hot", &Lookup::Dir, Deps::default(), t0, yes);
        for i in 0..1000 {
            // A hot entry, used between every two inserts, survives them all.
            assert!(c.get(0, "/hot", t0).is_some(), "evicted at {i}");
            let key = format!("/f{i}");
            c.insert(0, &key, &Lookup::NotFound, Deps::default(), t0, yes);
            assert!(c.len() <= 32, "{}", c.len());
        }
        assert!(c.len() >= 16);
    }

    #[test]
    fn short_and_long_keys_are_told_apart() {
        let c = FileCache::new(Duration::from_secs(10), 1024, 1 << 20);
        let t0 = Instant::now();
        let long = format!("/{}", "d/".repeat(120));
        let mut keys: Vec<String> = vec!["/".into(), "/a".into(), "/ab".into()];
        for n in [INLINE_KEY - 1, INLINE_KEY, INLINE_KEY + 1, 200] {
            // Keys on either side of the inline limit, and a prefix of each.
            keys.push(long[..n].to_string());
            keys.push(long[..n - 1].to_string() + "x");
        }
        for (i, k) in keys.iter().enumerate() {
            let v = if i % 2 == 0 {
                Lookup::Dir
            } else {
                Lookup::Forbidden
            };
            c.insert(0, k, &v, Deps::default(), t0, yes);
        }
        assert_eq!(c.len(), keys.len());
        for (i, k) in keys.iter().enumerate() {
            let got = c.get(0, k, t0);
            let want_dir = i % 2 == 0;
            assert!(
                matches!(
                    (got, want_dir),
                    (Some(Lookup::Dir), true) | (Some(Lookup::Forbidden), false)
                ),
                "{k}"
            );
        }
        assert!(c.get(0, "/abc", t0).is_none() && c.get(0, &long, t0).is_none());
        // A re-insert replaces the entry.
        c.insert(0, &keys[4], &Lookup::NotFound, Deps::default(), t0, yes);
        assert!(matches!(c.get(0, &keys[4], t0), Some(Lookup::NotFound)));
        assert_eq!(c.len(), keys.len());
    }

    #[test]
    fn byte_count_follows_evictions_and_invalidations() {
        let c = FileCache::new(Duration::from_secs(10), 64, 1 << 20);
        let t0 = Instant::now();
        for i in 0..500 {
            let key = format!("/{i}/{}", "n".repeat(i % 90));
            c.insert(0, &key, &Lookup::NotFound, Deps::default(), t0, yes);
            if i % 7 == 0 {
                // Replaced in place.
                c.insert(0, &key, &Lookup::Dir, Deps::default(), t0, yes);
            }
        }
        assert!(c.len() <= 64);
        let held: u64 = (0..500)
            .map(|i| format!("/{i}/{}", "n".repeat(i % 90)))
            .filter(|k| c.get(0, k, t0).is_some())
            .map(|k| k.len() as u64)
            .sum();
        assert_eq!(c.bytes(), held);
        c.invalidate(
            0,
            &Invalidation {
                all: true,
                ..Invalidation::default()
            },
        );
        assert!(c.is_empty());
        assert_eq!(c.bytes(), 0);
    }

    #[test]
    fn bounded_in_bytes() {
        let c = FileCache::new(Duration::from_secs(10), 1000, 16 * 100);
        let t0 = Instant::now();
        for i in 0..1000 {
            c.insert(
                0,
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
