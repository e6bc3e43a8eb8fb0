//! The file-info + fd cache (Mighty's `FileInfo`/`FdCache`, with a short TTL).
//!
//! A memo of `request path -> Lookup`, keyed by the raw (still percent-encoded) path below the
//! mount point. The value holds open fds and pre-rendered `ETag`/`Last-Modified`/`Content-Type`,
//! so a hot file costs one hash lookup and no `open`/`fstat`/`close` per request.
//!
//! Freshness: an entry is trusted for `ttl` after it was looked up, then looked up again on the
//! next request (a changed size/mtime, a replaced or deleted file is therefore noticed within
//! `ttl`). Misses (404s) are cached too, so a missing `.br`/`.gz` sibling or a hammered missing
//! path costs nothing per request; a file created afterwards appears within `ttl` as well.
//! Only paths that passed `path::resolve` are ever inserted, so a hit needs no re-validation.
//!
//! Sharing: `SHARDS` `std::sync::Mutex`-guarded maps. A lock is held only for a hash lookup or
//! insert (never across I/O or a fiber switch), so the std mutex is right even inside fibers.
//! Bounded: a full shard first drops its expired entries, then an arbitrary one; dropping an
//! entry closes its fds once no in-flight response holds them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::open::Lookup;

const SHARDS: usize = 16;

/// Counters for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that went to the filesystem.
    pub misses: u64,
}

/// One shard: request path -> cached lookup.
type Shard = Mutex<HashMap<Box<str>, Slot>>;

#[derive(Debug)]
struct Slot {
    value: Lookup,
    /// When the entry stops being trusted (checked + TTL; `None`: a TTL too long to add):
    /// one compare per hit.
    expires: Option<Instant>,
}

/// A sharded, bounded, TTL'd map from request path to `Lookup`.
#[derive(Debug)]
pub struct FileCache {
    shards: Box<[Shard]>,
    ttl: Duration,
    per_shard: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl FileCache {
    /// A cache trusting entries for `ttl` (zero disables caching) holding about `capacity`
    /// entries (each holds up to three fds: the file and two precompressed siblings).
    pub fn new(ttl: Duration, capacity: usize) -> FileCache {
        FileCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            ttl,
            per_shard: capacity.div_ceil(SHARDS).max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Returns the cached lookup for `key`, or runs `fill` (outside any lock) and caches its
    /// result. `fill` returning `Err` (a refused path) is passed through and not cached.
    pub fn get_or_fill<E>(
        &self,
        key: &str,
        now: Instant,
        fill: impl FnOnce() -> Result<Lookup, E>,
    ) -> Result<Lookup, E> {
        if self.ttl.is_zero() {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return fill();
        }
        let shard = &self.shards[shard_of(key)];
        if let Some(slot) = lock(shard).get(key) {
            if slot.expires.map_or(true, |e| now < e) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(slot.value.clone());
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let value = fill()?;
        let mut map = lock(shard);
        if map.len() >= self.per_shard && !map.contains_key(key) {
            map.retain(|_, s| s.expires.map_or(true, |e| now < e));
            if map.len() >= self.per_shard {
                if let Some(victim) = map.keys().next().cloned() {
                    map.remove(&victim);
                }
            }
        }
        map.insert(
            key.into(),
            Slot {
                value: value.clone(),
                expires: now.checked_add(self.ttl),
            },
        );
        Ok(value)
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
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the map inconsistent (std's HashMap
    // operations used here do not unwind halfway), so poisoning is ignored.
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

    fn nf() -> Result<Lookup, ()> {
        Ok(Lookup::NotFound)
    }

    #[test]
    fn hit_then_expiry() {
        let c = FileCache::new(Duration::from_secs(10), 64);
        let t0 = Instant::now();
        assert!(matches!(c.get_or_fill("/a", t0, nf), Ok(Lookup::NotFound)));
        let r = c.get_or_fill(
            "/a",
            t0 + Duration::from_secs(9),
            || -> Result<Lookup, ()> { panic!("must be a hit") },
        );
        assert!(matches!(r, Ok(Lookup::NotFound)));
        assert_eq!(c.stats(), CacheStats { hits: 1, misses: 1 });
        let r = c.get_or_fill("/a", t0 + Duration::from_secs(10), || {
            Ok::<_, ()>(Lookup::Dir)
        });
        assert!(matches!(r, Ok(Lookup::Dir)));
        assert_eq!(c.stats(), CacheStats { hits: 1, misses: 2 });
        assert!(matches!(
            c.get_or_fill("/a", t0 + Duration::from_secs(11), nf),
            Ok(Lookup::Dir)
        ));
    }

    #[test]
    fn errors_are_not_cached_and_zero_ttl_disables() {
        let c = FileCache::new(Duration::from_secs(10), 64);
        let t0 = Instant::now();
        assert_eq!(
            c.get_or_fill("/x", t0, || Err::<Lookup, _>(7)).unwrap_err(),
            7
        );
        assert!(c.is_empty());
        let c = FileCache::new(Duration::ZERO, 64);
        c.get_or_fill("/x", t0, nf).unwrap();
        c.get_or_fill("/x", t0, nf).unwrap();
        assert_eq!(c.stats(), CacheStats { hits: 0, misses: 2 });
        assert!(c.is_empty());
    }

    #[test]
    fn bounded() {
        let c = FileCache::new(Duration::from_secs(10), 32);
        let t0 = Instant::now();
        for i in 0..1000 {
            c.get_or_fill(&format!("/f{i}"), t0, nf).unwrap();
        }
        assert!(c.len() <= 32, "{}", c.len());
        assert!(c.len() >= 16);
    }
}
