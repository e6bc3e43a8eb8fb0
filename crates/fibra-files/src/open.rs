//! Where a safe request path meets the filesystem: containment, `open` + `fstat`, index files,
//! precompressed siblings, and the pre-rendered header values of each file.
//!
//! Containment, fast path: the path is opened from the root directory's descriptor with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)` ([`beneath`]): one
//! system call, no `readlink`, and the kernel never leaves the root. A symlink anywhere on the
//! path takes the slow path: the path is canonicalized (all symlinks resolved) and must still
//! lie under the canonical root unless the server follows symlinks out of it; the canonical
//! path is then opened with `O_NOFOLLOW`, so a symlink swapped in between the two steps makes
//! the open fail instead of escaping. The slow path reports where the links led, so the cache
//! can watch the target's directory.
//!
//! [`beneath`]: crate::beneath

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use http::HeaderValue;

use crate::beneath::RootDir;
use crate::conditional::make_etag;
use crate::meta::{content_type, Encoding};
use crate::path::SafePath;
use fibra_http::prepared::PreparedHead;
use fibra_http::transport::is_resource_error;

/// One file with the header values that describe it, rendered once.
///
/// `repr(C)`: what sending the whole file reads (its bytes or descriptor, and its size) first.
#[derive(Debug)]
#[repr(C)]
pub struct OpenFile {
    /// The bytes to send: in memory, or an open file.
    pub data: FileData,
    /// Size in bytes at open time.
    pub size: u64,
    /// Modification time at open time.
    pub mtime: SystemTime,
    /// Strong `ETag` value, quotes included.
    pub etag: HeaderValue,
    /// `Last-Modified` value (IMF-fixdate).
    pub last_modified: HeaderValue,
}

/// Where a file's bytes come from.
#[derive(Debug)]
pub enum FileData {
    /// The whole contents, for files of at most [`INLINE_CONTENTS`] bytes, read when the file
    /// was opened (so a hot small file costs no `pread` per request, and holds no fd). Kept
    /// and dropped together with the `ETag`, so the bytes always match the validators.
    Memory(bytes::Bytes),
    /// The open file (read-only); shared with in-flight responses. A file that shrinks while
    /// it is sent makes the connection close rather than send less than announced.
    Open(SharedFile),
}

/// An open file shared by reference count (with responses that send part of it), and a view
/// of its descriptor kept here, in the owner's memory: a response sent by reference to its
/// cache entry ([`fibra_http::prepared`]) reads the descriptor from the entry, next to what it
/// reads anyway, instead of from the `Arc`'s allocation, a line of memory of its own (cold on
/// a site larger than the CPU caches).
#[derive(Debug)]
pub struct SharedFile {
    file: Arc<File>,
    /// The same descriptor as `file`, never closed through this value.
    view: ManuallyDrop<File>,
}

impl SharedFile {
    /// Shares `file`.
    pub fn new(file: File) -> SharedFile {
        let file = Arc::new(file);
        // SAFETY: the descriptor is open and owned by `file`, which this value holds for as
        // long as `view` exists. `view` is never dropped (`ManuallyDrop`, and `SharedFile`
        // has no `Drop` that takes it out), so it never closes the descriptor, and it is only
        // lent out as `&File`, through which the descriptor cannot be closed or replaced.
        let view = ManuallyDrop::new(unsafe { File::from_raw_fd(file.as_raw_fd()) });
        SharedFile { file, view }
    }
    /// The file, for sharing (e.g. in a [`fibra_http::FileRange`]).
    pub fn shared(&self) -> &Arc<File> {
        &self.file
    }
    /// The file, read through the view kept here.
    pub fn get(&self) -> &File {
        &self.view
    }
}

/// Files up to this size are kept in memory by the cache (nginx's `open_file_cache` keeps
/// descriptors only; Mighty and h2o serve small files from memory). It is the response
/// writer's own cut-off: a file range up to it is copied into the write buffer anyway, a
/// bigger one goes out with `sendfile`, so keeping bigger files in memory would gain nothing.
pub const INLINE_CONTENTS: u64 = fibra_http::response::INLINE_FILE_BYTES;

/// Reads exactly `size` bytes of `file`, or `None` if it is not that long any more.
/// Appends the `size` bytes of `file` to `buf`; false (and `buf` as it was) if they could not
/// all be read.
fn read_small(file: &File, size: u64, buf: &mut Vec<u8>) -> bool {
    use std::os::unix::fs::FileExt;
    let start = buf.len();
    buf.resize(start + size as usize, 0);
    let mut got = 0;
    while start + got < buf.len() {
        match file.read_at(&mut buf[start + got..], got as u64) {
            Ok(n) if n > 0 => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            _ => {
                buf.truncate(start);
                return false;
            }
        }
    }
    true
}

/// A servable file: the file itself plus its precompressed siblings, if any.
///
/// `repr(C)`: what a whole file sent as it is reads comes first, in the order of memory, next
/// to the reference count that the cache's hit touches anyway: the file's rendered head (kept
/// inline), then the file (its bytes or descriptor and its size first, see [`OpenFile`]). The
/// siblings and their heads, read only for a client that accepts a coding, come last.
#[derive(Debug)]
#[repr(C)]
pub struct FileEntry {
    /// The header fields of a `200` of the file as named, rendered on first use by the file
    /// server (they depend on its settings too) and kept with the bytes they describe: an
    /// entry replaced after a change takes its heads with it.
    pub head: OnceLock<PreparedHead>,
    /// The file as named in the request.
    pub identity: OpenFile,
    /// `Content-Type` of the file as named (siblings share it).
    pub content_type: HeaderValue,
    /// The heads of the brotli and the gzip sibling, as `head`.
    pub sibling_heads: [OnceLock<PreparedHead>; 2],
    /// `NAME.br`, when present.
    pub brotli: Option<OpenFile>,
    /// `NAME.gz`, when present.
    pub gzip: Option<OpenFile>,
}

impl FileEntry {
    /// The representation to send for the codings a client accepts (brotli preferred).
    pub fn select(&self, br_ok: bool, gzip_ok: bool) -> (&OpenFile, Encoding) {
        // The siblings are looked at only when their coding is accepted.
        if br_ok {
            if let Some(f) = &self.brotli {
                return (f, Encoding::Brotli);
            }
        }
        if gzip_ok {
            if let Some(f) = &self.gzip {
                return (f, Encoding::Gzip);
            }
        }
        (&self.identity, Encoding::Identity)
    }

    /// The representation `encoding` selects ([`FileEntry::select`]'s choice; the file itself
    /// for a sibling that is not there).
    pub fn representation(&self, encoding: Encoding) -> &OpenFile {
        let sibling = match encoding {
            Encoding::Identity => None,
            Encoding::Brotli => self.brotli.as_ref(),
            Encoding::Gzip => self.gzip.as_ref(),
        };
        sibling.unwrap_or(&self.identity)
    }

    /// The `200` head of representation `encoding` (`None` until the file server has made
    /// it).
    pub fn head(&self, encoding: Encoding) -> Option<&PreparedHead> {
        self.head_cell(encoding).get()
    }

    /// Where the head of representation `encoding` is kept.
    pub fn head_cell(&self, encoding: Encoding) -> &OnceLock<PreparedHead> {
        match encoding {
            Encoding::Identity => &self.head,
            Encoding::Brotli => &self.sibling_heads[0],
            Encoding::Gzip => &self.sibling_heads[1],
        }
    }

    /// Whether the response depends on `Accept-Encoding` (so caches need `Vary`).
    pub fn has_variants(&self) -> bool {
        self.brotli.is_some() || self.gzip.is_some()
    }
}

/// What a request path names on disk.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// A regular file (for a slash-terminated directory path: its index file).
    File(Arc<FileEntry>),
    /// A directory: redirect to the slash form, or (slash form without index) list or 403.
    Dir,
    /// Nothing there (or not a regular file we would serve): 404.
    NotFound,
    /// Exists but may not be served (permissions, symlink out of the root, device): 403.
    Forbidden,
    /// The server could not look: it is out of descriptors or memory (`EMFILE`, `ENFILE`,
    /// `ENOMEM`, `ENOBUFS`). 503, and never cached: the path is not to blame, and the next
    /// request may find it.
    Unavailable,
}

impl Lookup {
    /// Bytes of file contents this lookup holds in memory.
    pub fn bytes_in_memory(&self) -> u64 {
        let Lookup::File(e) = self else { return 0 };
        [Some(&e.identity), e.brotli.as_ref(), e.gzip.as_ref()]
            .into_iter()
            .flatten()
            .map(|f| match &f.data {
                FileData::Memory(b) => b.len() as u64,
                FileData::Open(_) => 0,
            })
            .sum()
    }
}

/// A lookup and where symlinks on its way led.
#[derive(Debug)]
pub struct Resolved {
    /// What the path names.
    pub lookup: Lookup,
    /// Symlinks on the way (the slow path was taken).
    pub trail: Trail,
}

/// Where symlinks led a lookup (all empty on the fast path).
#[derive(Debug, Default)]
pub struct Trail {
    /// A symlink was on the way of at least one of the names looked up.
    pub through_symlink: bool,
    /// Canonical paths of what the symlinks led to.
    pub targets: Vec<PathBuf>,
    /// A symlink led nowhere (dangling, a loop, unreadable): where it points is unknown.
    pub dangling: bool,
}

/// Maps safe paths under one root to `Lookup`s.
#[derive(Debug)]
pub struct Resolver {
    /// The served directory, canonicalized once at construction.
    pub root: PathBuf,
    /// The same directory, open: where every lookup starts.
    dir: RootDir,
    /// Index file name for directories (`index.html`); `None` disables index files.
    pub index: Option<String>,
    /// Serve symlinks whose target lies outside `root`.
    pub follow_outside: bool,
}

impl Resolver {
    /// Canonicalizes and opens `root`; fails, naming it, if it does not exist or is not a
    /// directory.
    pub fn new(root: &Path, index: Option<String>, follow_outside: bool) -> io::Result<Resolver> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", root.display()));
        let canon = std::fs::canonicalize(root).map_err(named)?;
        if !canon.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a directory", root.display()),
            ));
        }
        Ok(Resolver {
            dir: RootDir::open(&canon).map_err(named)?,
            root: canon,
            index,
            follow_outside,
        })
    }

    /// Looks a safe path up on disk (several syscalls: callers cache the result).
    pub fn lookup(&self, p: &SafePath) -> Lookup {
        self.resolve(p).lookup
    }

    /// [`Resolver::lookup`], also saying where symlinks led.
    pub fn resolve(&self, p: &SafePath) -> Resolved {
        let mut targets = Trail::default();
        let rel = p.rel_path();
        let lookup = match self.open_one(&rel, &mut targets) {
            Err(l) => l,
            Ok(None) if p.trailing_slash => {
                self.index_of(&rel, &mut targets).unwrap_or(Lookup::Dir)
            }
            Ok(None) => Lookup::Dir,
            Ok(Some(_)) if p.trailing_slash => Lookup::NotFound,
            Ok(Some(identity)) => match self.entry(identity, &rel, &mut targets) {
                Ok(entry) => Lookup::File(Arc::new(entry)),
                Err(lookup) => lookup,
            },
        };
        Resolved {
            lookup,
            trail: targets,
        }
    }

    /// The index file of directory `rel`, if there is one.
    fn index_of(&self, rel: &Path, targets: &mut Trail) -> Option<Lookup> {
        let name = self.index.as_deref()?;
        let rel = rel.join(name);
        match self.open_one(&rel, targets) {
            Ok(Some(identity)) => Some(match self.entry(identity, &rel, targets) {
                Ok(entry) => Lookup::File(Arc::new(entry)),
                Err(lookup) => lookup,
            }),
            Ok(None) | Err(Lookup::NotFound) => None,
            Err(other) => Some(other),
        }
    }

    /// The entry of file `rel` opened as `identity`, with its precompressed siblings; fails
    /// (`Unavailable`) when a sibling could not be looked for, rather than cache the file
    /// without it.
    fn entry(
        &self,
        identity: OpenFile,
        rel: &Path,
        targets: &mut Trail,
    ) -> Result<FileEntry, Lookup> {
        let mut sibling = |enc: Encoding| {
            let mut name = OsString::from(rel.as_os_str());
            name.push(enc.suffix());
            match self.open_one(Path::new(&name), targets) {
                Ok(file) => Ok(file),
                Err(Lookup::Unavailable) => Err(Lookup::Unavailable),
                Err(_) => Ok(None),
            }
        };
        Ok(FileEntry {
            identity,
            brotli: sibling(Encoding::Brotli)?,
            gzip: sibling(Encoding::Gzip)?,
            content_type: HeaderValue::from_str(&content_type(rel))
                .unwrap_or(HeaderValue::from_static("application/octet-stream")),
            head: OnceLock::new(),
            sibling_heads: Default::default(),
        })
    }

    /// Opens `rel` if it is a regular file inside the root: `Ok(Some)` for a file,
    /// `Ok(None)` for a directory, `Err(lookup)` otherwise.
    fn open_one(&self, rel: &Path, targets: &mut Trail) -> Result<Option<OpenFile>, Lookup> {
        let file = match self.dir.open_beneath(rel) {
            Ok(file) => file,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EXDEV)) => {
                self.open_through_symlinks(rel, targets)?
            }
            Err(e) => {
                self.log_refusal(rel, &e);
                return Err(io_lookup(&e));
            }
        };
        describe(file)
    }

    /// Opens directory `rel` inside the root (for a listing), with the same containment as a
    /// file: `Err(Forbidden)` if it resolves outside the root (unless following symlinks out
    /// of it), `Err(NotFound)` if it is missing or not a directory.
    pub fn open_dir(&self, rel: &Path) -> Result<File, Lookup> {
        let mut trail = Trail::default();
        let dir = match self.dir.open_beneath(rel) {
            Ok(file) => file,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EXDEV)) => {
                self.open_through_symlinks(rel, &mut trail)?
            }
            Err(e) => return Err(io_lookup(&e)),
        };
        match dir.metadata() {
            Ok(md) if md.is_dir() => Ok(dir),
            Ok(_) => Err(Lookup::NotFound),
            Err(e) => Err(io_lookup(&e)),
        }
    }

    /// Logs an open that failed for want of permission (the request gets 403) or of
    /// descriptors or memory (503), naming the file: an operator's matter, unlike a missing
    /// file.
    fn log_refusal(&self, rel: &Path, e: &io::Error) {
        if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) || is_resource_error(e) {
            log::warn!("open {}: {e}", self.root.join(rel).display());
        }
    }

    /// The slow path: a symlink is on the way (see the module docs).
    #[cold]
    fn open_through_symlinks(&self, rel: &Path, targets: &mut Trail) -> Result<File, Lookup> {
        targets.through_symlink = true;
        let canon = std::fs::canonicalize(self.root.join(rel)).map_err(|e| {
            targets.dangling = true;
            io_lookup(&e)
        })?;
        if !self.follow_outside && !canon.starts_with(&self.root) {
            log::debug!("refusing {}: resolves outside the root", rel.display());
            return Err(Lookup::Forbidden);
        }
        targets.targets.push(canon.clone());
        OpenOptions::new()
            .read(true)
            // NONBLOCK: opening a FIFO must not hang the worker; NOFOLLOW: see module docs.
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&canon)
            .map_err(|e| io_lookup(&e))
    }
}

/// `fstat`s an open file: `Ok(None)` for a directory, the file and its header values for a
/// regular file, `Forbidden` for anything else (a FIFO, a device).
fn describe(file: File) -> Result<Option<OpenFile>, Lookup> {
    let md = file.metadata().map_err(|e| io_lookup(&e))?;
    if md.is_dir() {
        return Ok(None);
    }
    if !md.is_file() {
        return Err(Lookup::Forbidden);
    }
    let mtime = md.modified().unwrap_or(UNIX_EPOCH);
    let etag = make_etag(md.ino(), md.len(), mtime);
    let date = httpdate::fmt_http_date(mtime);
    // The validators and a small file's contents in one allocation: every response clones
    // all three, and one shared count is one cache line to touch instead of three.
    let small = md.len() <= INLINE_CONTENTS;
    let mut all =
        Vec::with_capacity(etag.len() + date.len() + if small { md.len() as usize } else { 0 });
    all.extend_from_slice(etag.as_bytes());
    all.extend_from_slice(date.as_bytes());
    let head = all.len();
    let in_memory = small && read_small(&file, md.len(), &mut all);
    let all = bytes::Bytes::from(all);
    let value = |r: std::ops::Range<usize>| {
        HeaderValue::from_maybe_shared(all.slice(r)).expect("ETag and HTTP date are ASCII")
    };
    Ok(Some(OpenFile {
        etag: value(0..etag.len()),
        last_modified: value(etag.len()..head),
        data: if in_memory {
            FileData::Memory(all.slice(head..))
        } else {
            FileData::Open(SharedFile::new(file))
        },
        size: md.len(),
        mtime,
    }))
}

fn io_lookup(e: &io::Error) -> Lookup {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::ELOOP) => Lookup::Forbidden,
        _ if is_resource_error(e) => Lookup::Unavailable,
        _ => Lookup::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::resolve;
    use std::fs;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fibra-open-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn look(r: &Resolver, p: &str) -> Lookup {
        r.lookup(&resolve(p, true).unwrap())
    }

    #[test]
    fn files_dirs_index_siblings_and_symlinks() {
        let base = tmp("all");
        let root = base.join("root");
        fs::create_dir_all(root.join("d/e")).unwrap();
        fs::write(root.join("a.js"), b"js").unwrap();
        fs::write(root.join("a.js.gz"), b"gz").unwrap();
        fs::write(root.join("d/index.html"), b"<p>").unwrap();
        fs::write(base.join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("a.js"), root.join("in")).unwrap();
        std::os::unix::fs::symlink(&base, root.join("outdir")).unwrap();
        let r = Resolver::new(&root, Some("index.html".into()), false).unwrap();

        let Lookup::File(f) = look(&r, "/a.js") else {
            panic!()
        };
        assert_eq!(f.identity.size, 2);
        assert!(f.gzip.is_some() && f.brotli.is_none() && f.has_variants());
        assert_eq!(f.select(true, true).1, Encoding::Gzip);
        assert_eq!(f.select(true, false).1, Encoding::Identity);
        assert!(f.content_type.to_str().unwrap().contains("javascript"));
        assert!(matches!(look(&r, "/a.js/"), Lookup::NotFound));
        assert!(matches!(look(&r, "/d"), Lookup::Dir));
        assert!(matches!(look(&r, "/d/e/"), Lookup::Dir));
        let Lookup::File(f) = look(&r, "/d/") else {
            panic!()
        };
        assert_eq!(f.content_type, "text/html; charset=utf-8");
        assert!(matches!(look(&r, "/nope"), Lookup::NotFound));
        assert!(matches!(look(&r, "/out"), Lookup::Forbidden));
        assert!(matches!(look(&r, "/outdir/secret"), Lookup::Forbidden));
        assert!(matches!(look(&r, "/in"), Lookup::File(_)));

        // A FIFO is refused without blocking on open (O_NONBLOCK).
        let fifo = std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status();
        if fifo.map(|s| s.success()).unwrap_or(false) {
            assert!(matches!(look(&r, "/pipe"), Lookup::Forbidden));
        }

        let r = Resolver::new(&root, None, true).unwrap();
        assert!(matches!(look(&r, "/out"), Lookup::File(_)));
        assert!(matches!(look(&r, "/d/"), Lookup::Dir));
        fs::remove_dir_all(&base).unwrap();
    }
}
