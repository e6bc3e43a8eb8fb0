//! Zero-downtime binary upgrade on SIGUSR2, nginx's model.
//!
//! The running process (the old one) starts its binary again — the path it was started from,
//! so a binary replaced there is the one that runs — with the same arguments, handing it its
//! listening sockets as descriptors `3 ..` with `LISTEN_FDS`/`LISTEN_PID` (the socket
//! activation path, see `listeners`) and the write end of a pipe as `FIBRA_READY_FD`. The new
//! process serves on those sockets and, once it accepts, writes one byte to the pipe and
//! closes it ([`signal_ready`]). Then the old one drains (`ServerHandle::drain`): it stops
//! accepting, lets requests in flight finish, answers each keep-alive connection's next
//! request with `Connection: close`, closes connections still idle after a short grace, and
//! exits. Both accept on the same sockets meanwhile, so no connection waits unaccepted.
//!
//! If the new process exits or closes the pipe without the byte, or does not answer within
//! [`READY_TIMEOUT`], it is stopped and the old one keeps serving.
//!
//! The `--redirect-http` listener is handed over too, named apart in `LISTEN_FDNAMES`; the
//! old process stops its redirect server once the new one is ready.

use std::ffi::{CString, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// The variable naming the descriptor of the readiness pipe.
const READY_VAR: &str = "FIBRA_READY_FD";

/// How long the old process waits for the new one to say it is ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the old process keeps idle keep-alive connections open after the handover, for
/// their clients' next request (answered with `Connection: close`).
pub const IDLE_GRACE: Duration = Duration::from_secs(1);

/// What the process was started as: the binary's path and the arguments (taken at start, as
/// the path may be replaced by the time of the upgrade).
static STARTED_AS: Mutex<Option<(PathBuf, Vec<OsString>)>> = Mutex::new(None);

/// The readiness pipe inherited from an upgrading parent, if any.
static READY_FD: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// Called from `main` before any thread starts: notes the binary and arguments, and takes
/// the readiness pipe (clearing `FIBRA_READY_FD`).
pub fn init() {
    let exe = std::env::current_exe().ok();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    *STARTED_AS.lock().unwrap_or_else(|e| e.into_inner()) = exe.map(|e| (e, args));
    let fd = std::env::var(READY_VAR).ok();
    std::env::remove_var(READY_VAR);
    let Some(fd) = fd
        .and_then(|v| v.parse::<RawFd>().ok())
        .filter(|&fd| fd > 2)
    else {
        return;
    };
    // SAFETY: F_GETFD only reads the flags; a descriptor that is not open gives EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return;
    }
    // SAFETY: the descriptor is open and was handed to this process by its parent for this
    // one use; the variable is cleared above, so it is taken once.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: F_SETFD on a descriptor we own: close-on-exec, so a later upgrade's child does
    // not inherit it.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    *READY_FD.lock().unwrap_or_else(|e| e.into_inner()) = Some(owned);
}

/// Tells the process that started this one (in an upgrade) that it serves: one byte on the
/// readiness pipe, which is then closed. Nothing if there is none.
pub fn signal_ready() {
    if let Some(fd) = READY_FD.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = std::fs::File::from(fd).write_all(b"1");
    }
}

/// Starts the binary again with `listeners` handed over, named `names` in `LISTEN_FDNAMES`
/// (see `listeners`), and waits until it says it is ready; returns its pid. An error (it
/// could not start, exited, or did not answer in time) leaves this process serving, the new
/// one stopped.
pub fn start_new_binary(listeners: &[BorrowedFd<'_>], names: &[&str]) -> io::Result<u32> {
    let (exe, args) = STARTED_AS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .ok_or_else(|| io::Error::other("the binary's path is not known"))?;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors, owned here from now on.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };

    // The descriptors go to 3, 4, …; first copies above those numbers (close-on-exec), so
    // that moving one into place never overwrites another still to be moved.
    let n = listeners.len();
    let above = 3 + n as RawFd + 1;
    let mut sources: Vec<OwnedFd> = Vec::with_capacity(n + 1);
    for fd in listeners
        .iter()
        .map(|l| l.as_raw_fd())
        .chain([write_end.as_raw_fd()])
    {
        // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor of an open one, owned below.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, above) };
        if copy < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `copy` is a new descriptor nothing else owns.
        sources.push(unsafe { OwnedFd::from_raw_fd(copy) });
    }
    drop(write_end);

    // argv and envp built before the fork: the child only writes its pid into LISTEN_PID's
    // digits and calls dup2 and execve, which is all that is safe after a fork.
    let cstr = |b: &[u8]| CString::new(b).map_err(|_| io::Error::other("a NUL in an argument"));
    let path = cstr(exe.as_os_str().as_bytes())?;
    let mut argv = vec![path.clone()];
    for a in &args {
        argv.push(cstr(a.as_bytes())?);
    }
    let mut envp = Vec::new();
    for (k, v) in std::env::vars_os() {
        let k = k.as_bytes();
        if matches!(k, b"LISTEN_PID" | b"LISTEN_FDS" | b"LISTEN_FDNAMES")
            || k == READY_VAR.as_bytes()
        {
            continue;
        }
        envp.push(cstr(&[k, b"=", v.as_bytes()].concat())?);
    }
    envp.push(cstr(format!("LISTEN_FDS={n}").as_bytes())?);
    envp.push(cstr(
        format!("LISTEN_FDNAMES={}", names.join(":")).as_bytes(),
    )?);
    envp.push(cstr(format!("{READY_VAR}={}", 3 + n).as_bytes())?);
    // NUL-terminated; the child writes its pid over the zeros through `pid_at`, the one
    // pointer to this buffer that is used.
    let mut pid_var = b"LISTEN_PID=0000000000\0".to_vec();
    let pid_at = pid_var.as_mut_ptr();
    let digits_at = pid_at as usize + "LISTEN_PID=".len();
    let argv_ptrs: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let envp_ptrs: Vec<*const libc::c_char> = envp
        .iter()
        .map(|e| e.as_ptr())
        .chain([pid_at as *const libc::c_char, std::ptr::null()])
        .collect();
    let source_fds: Vec<RawFd> = sources.iter().map(|f| f.as_raw_fd()).collect();
    let (path_ptr, argv_at, envp_at) = (
        path.as_ptr() as usize,
        argv_ptrs.as_ptr() as usize,
        envp_ptrs.as_ptr() as usize,
    );

    let mut cmd = Command::new(&exe);
    // SAFETY: after fork, in the child, the closure calls only async-signal-safe functions
    // (getpid, dup2, execve) and writes ten digits into the child's copy of `pid_var`; the
    // pointers are into vectors and strings that outlive `spawn` (they are dropped after it
    // returns), so in the child's copy of memory they are valid.
    unsafe {
        cmd.pre_exec(move || {
            let mut pid = libc::getpid() as u32;
            let digits = digits_at as *mut u8;
            for i in (0..10).rev() {
                *digits.add(i) = b'0' + (pid % 10) as u8;
                pid /= 10;
            }
            for (i, &fd) in source_fds.iter().enumerate() {
                if libc::dup2(fd, 3 + i as RawFd) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            libc::execve(
                path_ptr as *const libc::c_char,
                argv_at as *const *const libc::c_char,
                envp_at as *const *const libc::c_char,
            );
            Err(io::Error::last_os_error())
        });
    }
    let mut child = cmd.spawn()?;
    drop(sources);
    drop((argv_ptrs, envp_ptrs, argv, envp, path, pid_var));

    match wait_ready(read_end, READY_TIMEOUT) {
        Ok(()) => Ok(child.id()),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// Waits for the readiness byte on `pipe`, for at most `timeout`: in a fiber only that fiber
/// waits (its worker goes on serving), on a plain thread the thread.
fn wait_ready(pipe: OwnedFd, timeout: Duration) -> io::Result<()> {
    let pipe = fibra::net::Pollable::new(std::fs::File::from(pipe))?;
    pipe.set_read_timeout(Some(timeout))?;
    let mut byte = [0u8; 1];
    match pipe.read_with(|mut f| f.read(&mut byte)) {
        Ok(1) => Ok(()),
        Ok(_) => Err(io::Error::other(
            "the new binary exited before it was ready",
        )),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the new binary did not say it was ready within {timeout:?}"),
        )),
        Err(e) => Err(e),
    }
}
