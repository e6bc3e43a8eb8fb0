//! Waiting for signals without a signal handler: they are blocked in every thread (the mask is
//! set before any thread starts, so all inherit it) and `sigwait`ed on the main thread.
//! SIGINT/SIGTERM stop the program; the servers also take SIGHUP (reload the certificates) and
//! SIGUSR2 (binary upgrade).

use std::io;

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

/// Waits until SIGINT, SIGTERM, SIGHUP or SIGUSR2 arrives.
pub fn wait_for_server_signal() -> ServerSignal {
    match wait(SERVER) {
        libc::SIGHUP => ServerSignal::Reload,
        libc::SIGUSR2 => ServerSignal::Upgrade,
        sig => ServerSignal::Shutdown(name(sig)),
    }
}
