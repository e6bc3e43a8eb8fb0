//! Waiting for SIGINT/SIGTERM without a signal handler: the signals are blocked in every thread
//! (the mask is set before any thread starts, so all inherit it) and `sigwait`ed on the main
//! thread.

use std::io;

fn shutdown_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a sigset_t we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards.
pub fn block_shutdown_signals() -> io::Result<()> {
    let set = shutdown_set();
    // SAFETY: `set` is an initialised sigset_t; a null old-set pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Waits until SIGINT or SIGTERM arrives and returns its name.
pub fn wait_for_shutdown_signal() -> &'static str {
    let set = shutdown_set();
    let mut sig: libc::c_int = 0;
    loop {
        // SAFETY: `set` is initialised and `sig` is a valid out-pointer.
        let rc = unsafe { libc::sigwait(&set, &mut sig) };
        if rc == 0 {
            return if sig == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
        }
    }
}
