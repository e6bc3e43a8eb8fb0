//! Opening a request path below the served root in one system call:
//! `openat2(root_fd, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)`.
//!
//! The kernel walks the path from the root directory's descriptor and refuses to leave it, so
//! there is no `canonicalize` (one `readlink` per component) and no time-of-check gap. Any
//! symlink on the way (the file itself or a directory) fails with `ELOOP`: the caller then
//! takes its slower path, which resolves the links and checks where they lead (a relative or
//! absolute link inside the root is served; one leading out only with `--follow-symlinks`).
//! Refusing every symlink here also keeps the fast path's meaning simple for the cache: a file
//! found here depends only on the directories named in the request path.
//!
//! Where `openat2` is missing (Linux before 5.6: `ENOSYS`), the same answer comes from a walk
//! of `O_PATH` descriptors from the root, one `openat` per component, each with `O_NOFOLLOW`.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// The served directory, open as an `O_PATH` descriptor that every lookup starts from.
#[derive(Debug)]
pub struct RootDir {
    fd: OwnedFd,
    /// False once `openat2` answered `ENOSYS` (or refused the flags): walk instead.
    has_openat2: AtomicBool,
}

impl RootDir {
    /// Opens `path` (which must be a directory) as the root of later lookups.
    pub fn open(path: &Path) -> io::Result<RootDir> {
        let c = cstring(path.as_os_str().as_bytes())?;
        // SAFETY: `c` is a valid NUL-terminated string; the returned fd (if any) is owned here.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(RootDir {
            // SAFETY: `fd` was just opened and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            has_openat2: AtomicBool::new(true),
        })
    }

    /// Opens `rel` (relative, made of plain names: no `..`, no root) below the root for
    /// reading, non-blocking (a FIFO must not hang the worker). `ELOOP` when a component is a
    /// symlink; otherwise the error of the component that failed (`ENOENT`, `ENOTDIR`,
    /// `EACCES`, …). An empty `rel` opens the root itself.
    pub fn open_beneath(&self, rel: &Path) -> io::Result<File> {
        let bytes = rel.as_os_str().as_bytes();
        let bytes = if bytes.is_empty() { b"." } else { bytes };
        let c = cstring(bytes)?;
        if self.has_openat2.load(Ordering::Relaxed) {
            match self.openat2(&c) {
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::E2BIG)) => {
                    self.has_openat2.store(false, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        self.walk(rel)
    }

    fn openat2(&self, c: &CString) -> io::Result<File> {
        let how = OpenHow {
            flags: (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64,
            mode: 0,
            resolve: libc::RESOLVE_BENEATH
                | libc::RESOLVE_NO_MAGICLINKS
                | libc::RESOLVE_NO_SYMLINKS,
        };
        loop {
            // SAFETY: `c` is NUL-terminated, `how` a valid open_how whose size is passed; the
            // kernel only reads both. A non-negative result is a new fd owned by nobody.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                )
            };
            if r >= 0 {
                // SAFETY: see above: a fresh descriptor.
                return Ok(unsafe { File::from_raw_fd(r as RawFd) });
            }
            let e = io::Error::last_os_error();
            // EAGAIN: a concurrent rename raced the walk (the kernel asks for a retry).
            if !matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) {
                return Err(e);
            }
        }
    }

    /// The fallback: `O_PATH | O_NOFOLLOW` for each directory, then the last name.
    fn walk(&self, rel: &Path) -> io::Result<File> {
        let names: Vec<&[u8]> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.as_bytes()),
                _ => None,
            })
            .collect();
        let Some((last, dirs)) = names.split_last() else {
            return openat(self.fd.as_raw_fd(), b".", libc::O_RDONLY | libc::O_NONBLOCK);
        };
        let mut held: Option<File> = None;
        for name in dirs {
            let at = held.as_ref().map_or(self.fd.as_raw_fd(), |f| f.as_raw_fd());
            let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
            match openat(at, name, flags) {
                Ok(f) => held = Some(f),
                // O_PATH | O_NOFOLLOW on a symlink with O_DIRECTORY says ENOTDIR: tell a link
                // (the caller's slow path) from a plain file in the way.
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) && is_symlink(at, name) => {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                Err(e) => return Err(e),
            }
        }
        let at = held.as_ref().map_or(self.fd.as_raw_fd(), |f| f.as_raw_fd());
        openat(
            at,
            last,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW,
        )
    }
}

/// `struct open_how` of `linux/openat2.h` (libc's is `non_exhaustive`, so not buildable).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

fn openat(dir: RawFd, name: &[u8], flags: i32) -> io::Result<File> {
    let c = cstring(name)?;
    loop {
        // SAFETY: `dir` is an open directory fd borrowed for the call, `c` NUL-terminated.
        let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd >= 0 {
            // SAFETY: a fresh descriptor owned by nobody else.
            return Ok(unsafe { File::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn is_symlink(dir: RawFd, name: &[u8]) -> bool {
    let Ok(c) = cstring(name) else { return false };
    // SAFETY: an all-zero `stat` is a valid value for fstatat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is open for the call, `c` NUL-terminated, `st` a valid out-pointer.
    let r = unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn opens_below_the_root_and_refuses_every_symlink_both_ways() {
        let base = std::env::temp_dir().join(format!("fibra-beneath-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("root");
        fs::create_dir_all(root.join("d/e")).unwrap();
        fs::write(root.join("d/e/f.txt"), b"f").unwrap();
        fs::write(base.join("outside"), b"o").unwrap();
        std::os::unix::fs::symlink(root.join("d"), root.join("abs")).unwrap();
        std::os::unix::fs::symlink("d", root.join("rel")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("out")).unwrap();
        let r = RootDir::open(&root).unwrap();
        let ways: [fn(&RootDir, &Path) -> io::Result<File>; 2] =
            [|r, p| r.open_beneath(p), |r, p| r.walk(p)];
        for open in ways {
            let read = |p: &str| {
                let mut s = String::new();
                io::Read::read_to_string(&mut open(&r, Path::new(p))?, &mut s).map(|_| s)
            };
            assert_eq!(read("d/e/f.txt").unwrap(), "f");
            assert!(open(&r, Path::new(""))
                .unwrap()
                .metadata()
                .unwrap()
                .is_dir());
            assert!(open(&r, Path::new("d/e"))
                .unwrap()
                .metadata()
                .unwrap()
                .is_dir());
            let errno = |p: &str| open(&r, Path::new(p)).unwrap_err().raw_os_error();
            assert_eq!(errno("nope"), Some(libc::ENOENT));
            assert_eq!(errno("d/e/f.txt/x"), Some(libc::ENOTDIR));
            for link in ["abs/e/f.txt", "rel/e/f.txt", "out", "abs", "d/../out"] {
                let e = errno(link);
                assert!(
                    matches!(e, Some(libc::ELOOP | libc::EXDEV | libc::ENOENT)),
                    "{link}: {e:?}"
                );
                if !link.contains("..") {
                    assert_eq!(e, Some(libc::ELOOP), "{link}");
                }
            }
        }
        fs::remove_dir_all(&base).unwrap();
    }
}
