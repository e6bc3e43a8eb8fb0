//! Waiting for signals without a signal handler: they are blocked in every thread (the mask is
//! set before any thread starts, so all inherit it), then `sigwait`ed on the main thread or,
//! for a server, read from a `signalfd` ([`ServerSignals`]) by a fiber.
//! SIGINT/SIGTERM stop the program; the servers also take SIGHUP (reload the certificates) and
//! SIGUSR2 (binary upgrade).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn set_of(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a sigset_t we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &sig in signals {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

const SHUTDOWN: &[libc::c_int] = &[libc::SIGINT, libc::SIGTERM];
const SERVER: &[libc::c_int] = &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR2];

fn block(signals: &[libc::c_int]) -> io::Result<()> {
    let set = set_of(signals);
    // SAFETY: `set` is an initialised sigset_t; a null old-set pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Waits until one of `signals` (blocked already) arrives and returns it.
fn wait(signals: &[libc::c_int]) -> libc::c_int {
    let set = set_of(signals);
    let mut sig: libc::c_int = 0;
    loop {
        // SAFETY: `set` is initialised and `sig` is a valid out-pointer.
        let rc = unsafe { libc::sigwait(&set, &mut sig) };
        if rc == 0 {
            return sig;
        }
    }
}

fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards.
pub fn block_shutdown_signals() -> io::Result<()> {
    block(SHUTDOWN)
}

/// Waits until SIGINT or SIGTERM arrives and returns its name.
pub fn wait_for_shutdown_signal() -> &'static str {
    name(wait(SHUTDOWN))
}

/// What a server is asked to do.
pub enum ServerSignal {
    /// Shut down (the signal's name: SIGINT or SIGTERM).
    Shutdown(&'static str),
    /// SIGHUP: reload the certificates.
    Reload,
    /// SIGUSR2: start the binary again and hand it the listening sockets.
    Upgrade,
}

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR2 in the calling thread and every thread it starts
/// afterwards.
pub fn block_server_signals() -> io::Result<()> {
    block(SERVER)
}

/// SIGINT, SIGTERM, SIGHUP and SIGUSR2, blocked already (see [`block_server_signals`]), read
/// from a `signalfd`: in a fiber only that fiber waits for them, so a server whose worker is
/// the same thread goes on serving; on a plain thread the thread waits (in `poll`).
pub struct ServerSignals(fibra::net::Pollable<OwnedFd>);

impl ServerSignals {
    /// A `signalfd` for the server's signals.
    pub fn new() -> io::Result<ServerSignals> {
        let set = set_of(SERVER);
        // SAFETY: `set` is an initialised sigset_t; -1 asks for a new descriptor.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: signalfd returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(ServerSignals(fibra::net::Pollable::new(fd)?))
    }

    /// Waits until one of the signals arrives.
    pub fn next(&self) -> io::Result<ServerSignal> {
        // SAFETY: signalfd_siginfo is plain integers, for which all zeros is a valid value.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        self.0.read_with(|fd| {
            // SAFETY: `info` is a writable buffer of `size` bytes; a signalfd read fills
            // whole records.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    size,
                )
            };
            match n {
                n if n < 0 => Err(io::Error::last_os_error()),
                n if n as usize == size => Ok(()),
                _ => Err(io::Error::other("signalfd: a short read")),
            }
        })?;
        Ok(match info.ssi_signo as libc::c_int {
            libc::SIGHUP => ServerSignal::Reload,
            libc::SIGUSR2 => ServerSignal::Upgrade,
            sig => ServerSignal::Shutdown(name(sig)),
        })
    }
}
