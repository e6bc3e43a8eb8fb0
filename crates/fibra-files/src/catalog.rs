//! What a request path names *now*: the resolver, the cache in front of it and the watcher
//! that keeps the cache true, put together.
//!
//! Per request: apply the change events the poller has reported (usually none: one atomic
//! load), then a cache lookup. On a miss: note the watcher's epoch, watch the directories the
//! path goes through, resolve the path, and cache the result unless events were applied
//! meanwhile (see `cache.rs` and `watch.rs` for why that order is enough). Without inotify
//! (it failed to start, or a watch limit was reached) nothing is cached that could not be
//! watched: slower, never stale.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cache::{CacheStats, FileCache};
use crate::open::{Lookup, Resolver};
use crate::path::{self, PathError};
use crate::watch::Watcher;

/// The resolver, its cache and the cache's watcher.
#[derive(Debug)]
pub struct Catalog {
    resolver: Resolver,
    /// Its own, or one shared with other catalogs (each in a space of its own).
    cache: Arc<FileCache>,
    /// This catalog's space in `cache`.
    space: u32,
    /// `None` when caching is off (or inotify is unavailable, which turns it off).
    watcher: Option<Watcher>,
}

/// Spaces of catalogs, unique in the process (a shared cache keeps them apart).
static NEXT_SPACE: AtomicU32 = AtomicU32::new(0);

impl Drop for Catalog {
    fn drop(&mut self) {
        // A shared cache outlives this catalog: its entries go with it.
        if Arc::strong_count(&self.cache) > 1 {
            self.cache.purge(self.space);
        }
    }
}

impl Catalog {
    /// A catalog over `resolver` caching up to `entries` lookups and `max_bytes` of contents,
    /// each for at most `ttl` (zero entries or a zero TTL: no cache, no watcher).
    pub fn new(resolver: Resolver, entries: usize, max_bytes: u64, ttl: Duration) -> Catalog {
        Catalog::sharing(resolver, Arc::new(FileCache::new(ttl, entries, max_bytes)))
    }

    /// A catalog over `resolver` caching in `cache`, which other catalogs may share (one
    /// bound for all; each looks up and invalidates only its own entries).
    pub fn sharing(resolver: Resolver, cache: Arc<FileCache>) -> Catalog {
        let watcher = if cache.enabled() {
            match Watcher::new(&resolver.root) {
                Ok(w) => Some(w),
                Err(e) => {
                    log::warn!(
                        "{}: cannot watch for changes ({e}); file cache off",
                        resolver.root.display()
                    );
                    None
                }
            }
        } else {
            None
        };
        Catalog {
            resolver,
            cache,
            space: NEXT_SPACE.fetch_add(1, Ordering::Relaxed),
            watcher,
        }
    }

    /// The resolver (root, index name, symlink policy).
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// Whether lookups are cached (caching is on and changes can be watched).
    pub fn caching(&self) -> bool {
        self.watcher.is_some()
    }

    /// Cache counters.
    pub fn stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// What `rest` (a raw request path below the mount point) names.
    pub fn lookup(
        &self,
        rest: &str,
        allow_hidden: bool,
        now: Instant,
    ) -> Result<Lookup, PathError> {
        let Some(watcher) = &self.watcher else {
            self.cache.get(self.space, rest, now);
            let p = path::resolve(rest, allow_hidden)?;
            return Ok(self.resolver.lookup(&p));
        };
        if let Some(inv) = watcher.poll() {
            self.cache.invalidate(self.space, &inv);
        }
        if let Some(hit) = self.cache.get(self.space, rest, now) {
            return Ok(hit);
        }
        let p = path::resolve(rest, allow_hidden)?;
        let epoch = watcher.epoch();
        let deps = watcher.watch_path(&p, self.resolver.index.as_deref(), epoch);
        let resolved = self.resolver.resolve(&p);
        let Ok(mut deps) = deps else {
            return Ok(resolved.lookup);
        };
        if matches!(resolved.lookup, Lookup::Unavailable) {
            return Ok(resolved.lookup);
        }
        if resolved.trail.through_symlink {
            // Which names such a lookup depends on is unknown: any event drops it. One that
            // led nowhere is not cached (its target's creation might be in an unwatched place).
            if resolved.trail.dangling {
                return Ok(resolved.lookup);
            }
            deps.broad = true;
            for t in &resolved.trail.targets {
                // A target directory watched only now may have changed before the watch: cache
                // the lookup next time.
                if !matches!(watcher.watch_target(t, epoch), Ok(true)) {
                    return Ok(resolved.lookup);
                }
            }
        }
        self.cache
            .insert(self.space, rest, &resolved.lookup, deps, now, || {
                watcher.is_current(epoch)
            });
        Ok(resolved.lookup)
    }
}
