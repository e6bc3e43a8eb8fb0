//! Change notification for the file cache: one inotify instance watching the directories that
//! hold cached entries, its descriptor registered with the worker's poller
//! ([`fibra::net::Pollable`]).
//!
//! Nothing runs per request while nothing changes: [`Watcher::poll`] asks the poller's
//! readiness word (one atomic load) and reads the instance only after the poller has reported
//! it readable. What it read becomes an [`Invalidation`], which the cache applies.
//!
//! Granularity: a cached lookup of `/a/b/c.txt` records the names it depends on, as
//! `(watch of the directory, name)` pairs ([`Dep`]): `a` in the root, `b` in `a`, and `c.txt`,
//! `c.txt.br`, `c.txt.gz` in `a/b` (plus the index file's names for a directory). An event
//! for one of those names (written, truncated, created, deleted, renamed from or to, chmod)
//! drops the entry; an event on a directory itself (deleted, moved) drops every entry that
//! names something in it; an overflowed queue drops everything. An entry found through a
//! symlink cannot say which names it depends on, so it is dropped by any event at all.
//!
//! Directories are watched by path before the lookup that depends on them opens anything, so a
//! change made after the open is always reported. The table of watched directories is cleared
//! whenever a directory is created, deleted or moved (rare on a served tree), and refilled as
//! lookups need it.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use fibra::net::Pollable;

use crate::path::SafePath;

/// One name a cached lookup depends on: the watch descriptor of its directory and a hash of
/// the name (a collision only drops an entry that did not need to go).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dep {
    wd: i32,
    name: u64,
}

/// What a cached lookup depends on, and whether it may be cached at all.
#[derive(Debug, Default)]
pub struct Deps {
    /// The names, see [`Dep`].
    pub names: Vec<Dep>,
    /// Found through a symlink: dropped by any event.
    pub broad: bool,
}

/// What one batch of events drops from the cache.
#[derive(Debug, Default)]
pub struct Invalidation {
    /// Everything (the event queue overflowed).
    pub all: bool,
    /// Entries depending on any name in these directories (deleted or moved).
    pub dirs: HashSet<i32>,
    /// Entries depending on one of these names.
    pub names: HashSet<Dep>,
    /// A directory was created, deleted, moved or changed: the table of watched paths is
    /// renewed.
    pub tree_changed: bool,
}

impl Invalidation {
    /// Whether an entry with these dependencies must go.
    pub fn drops(&self, deps: &Deps) -> bool {
        self.all
            || deps.broad
            || deps
                .names
                .iter()
                .any(|d| self.dirs.contains(&d.wd) || self.names.contains(d))
    }
}

const MASK: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_DONT_FOLLOW
    | libc::IN_ONLYDIR;

/// The inotify instance, the directories it watches, and the epoch of the last batch.
#[derive(Debug)]
pub struct Watcher {
    inotify: Pollable<File>,
    /// Watched directories by path (below the root: relative; elsewhere: absolute).
    dirs: Mutex<HashMap<PathBuf, i32>>,
    /// Bumped before a batch of events is applied; a lookup made across a bump is not cached
    /// (it may have seen the file before the change and been dropped before it was inserted).
    epoch: AtomicU64,
    root: PathBuf,
}

/// Why a lookup's dependencies could not be watched.
#[derive(Debug)]
pub struct Unwatchable;

impl Watcher {
    /// A new inotify instance for the tree at `root` (canonical).
    pub fn new(root: &Path) -> io::Result<Watcher> {
        // SAFETY: no pointer arguments; a non-negative result is a new fd owned here.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        Ok(Watcher {
            inotify: Pollable::new(file)?,
            dirs: Mutex::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            root: root.to_path_buf(),
        })
    }

    /// The current epoch: read before a lookup, compared when its result is inserted.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Whether `epoch` is still current (no batch of events was applied since).
    pub fn is_current(&self, epoch: u64) -> bool {
        self.epoch() == epoch
    }

    /// Watches the directories a lookup of `p` reads and returns the names it depends on:
    /// every directory along the path, and for the directory form the directory itself (its
    /// index file). A directory that does not exist ends the walk: its creation is an event in
    /// the last one that does. `Err` when a directory cannot be watched (a watch limit).
    pub fn watch_path(
        &self,
        p: &SafePath,
        index: Option<&str>,
        epoch: u64,
    ) -> Result<Deps, Unwatchable> {
        let mut deps = Deps::default();
        let mut dir = PathBuf::new();
        let Some(mut wd) = self.watch(&dir, epoch)? else {
            return Ok(deps);
        };
        deps.names.push(Dep { wd, name: 0 });
        for (i, seg) in p.segments.iter().enumerate() {
            for suffix in ["", ".br", ".gz"] {
                deps.names.push(Dep {
                    wd,
                    name: hash_name(seg, suffix.as_bytes()),
                });
            }
            let last = i + 1 == p.segments.len();
            if last && !p.trailing_slash {
                break;
            }
            dir.push(std::ffi::OsStr::from_bytes(seg));
            match self.watch(&dir, epoch)? {
                Some(w) => wd = w,
                None => return Ok(deps),
            }
        }
        if p.trailing_slash {
            if let Some(index) = index {
                for suffix in ["", ".br", ".gz"] {
                    deps.names.push(Dep {
                        wd,
                        name: hash_name(index.as_bytes(), suffix.as_bytes()),
                    });
                }
            }
        }
        Ok(deps)
    }

    /// Watches the directory holding `target` (where a symlink led), for an entry that any
    /// event drops. True if it was watched already (so no change since can have been missed).
    pub fn watch_target(&self, target: &Path, epoch: u64) -> Result<bool, Unwatchable> {
        let Some(parent) = target.parent() else {
            return Ok(true);
        };
        let key = parent.strip_prefix(&self.root).unwrap_or(parent);
        if lock(&self.dirs).contains_key(key) {
            return Ok(true);
        }
        self.watch(key, epoch)?;
        Ok(false)
    }

    /// The watch of directory `key` (relative to the root, or absolute), added if needed.
    /// `None` when it is not there (or not a directory).
    fn watch(&self, key: &Path, epoch: u64) -> Result<Option<i32>, Unwatchable> {
        if let Some(&wd) = lock(&self.dirs).get(key) {
            return Ok(Some(wd));
        }
        let full = self.root.join(key);
        let Ok(c) = CString::new(full.as_os_str().as_bytes()) else {
            return Ok(None);
        };
        // SAFETY: the inotify fd is open while `self` lives; `c` is NUL-terminated.
        let wd = unsafe { libc::inotify_add_watch(fibra_fd(&self.inotify), c.as_ptr(), MASK) };
        if wd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::ELOOP) => Ok(None),
                _ => {
                    log::warn!("cannot watch {} for changes: {e}", full.display());
                    Err(Unwatchable)
                }
            };
        }
        let mut dirs = lock(&self.dirs);
        // A batch applied meanwhile may have cleared the table because this very directory
        // moved: the lookup will not be cached, and the table must not learn a stale name.
        if self.is_current(epoch) {
            dirs.insert(key.to_path_buf(), wd);
        }
        Ok(Some(wd))
    }

    /// Reads the events that arrived since the last call, if the poller has reported any
    /// (otherwise this costs one atomic load), and bumps the epoch before returning them.
    pub fn poll(&self) -> Option<Invalidation> {
        let mut inv: Option<Invalidation> = None;
        // Made only once the poller says there is something to read: this runs on every
        // request, and zeroing a 16 KiB buffer each time cost more than the rest of it.
        let mut buf = Vec::new();
        loop {
            let read = self.inotify.try_read_with(|mut f| {
                if buf.is_empty() {
                    buf.resize(16 * 1024, 0);
                }
                f.read(&mut buf)
            });
            match read {
                Ok(0) => break,
                Ok(n) => parse(&buf[..n], inv.get_or_insert_with(Invalidation::default)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::warn!("reading file change events: {e}");
                    inv.get_or_insert_with(Invalidation::default).all = true;
                    break;
                }
            }
        }
        let inv = inv?;
        let mut dirs = lock(&self.dirs);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if inv.all || inv.tree_changed || !inv.dirs.is_empty() {
            dirs.clear();
        }
        Some(inv)
    }
}

/// Adds the events in `buf` (whole `inotify_event` records) to `inv`.
fn parse(buf: &[u8], inv: &mut Invalidation) {
    const HEAD: usize = std::mem::size_of::<libc::inotify_event>();
    let mut at = 0;
    while at + HEAD <= buf.len() {
        let field = |i: usize| {
            let b = &buf[at + 4 * i..at + 4 * i + 4];
            u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
        };
        let (wd, mask, len) = (field(0) as i32, field(1), field(3) as usize);
        let name_end = (at + HEAD + len).min(buf.len());
        let raw = &buf[at + HEAD..name_end];
        let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        at = name_end;
        if mask & libc::IN_Q_OVERFLOW != 0 {
            inv.all = true;
        } else if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED) != 0 {
            inv.dirs.insert(wd);
        } else {
            if mask & libc::IN_ISDIR != 0 {
                // A directory created, deleted or renamed: its entries depend on its name in
                // this directory (dropped here); the table of watched paths is renewed.
                inv.tree_changed = true;
            }
            inv.names.insert(Dep {
                wd,
                name: hash_name(name, b""),
            });
        }
    }
}

/// FNV-1a of `name` followed by `suffix`; never 0 (0 is the directory's own dependency).
fn hash_name(name: &[u8], suffix: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.iter().chain(suffix) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.max(1)
}

fn fibra_fd(p: &Pollable<File>) -> i32 {
    std::os::fd::AsRawFd::as_raw_fd(p)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
