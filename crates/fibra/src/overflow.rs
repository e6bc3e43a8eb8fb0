//! Stack-overflow reporting for fibers.
//!
//! Every fiber stack has a guard page below it. A fiber that runs into it faults with SIGSEGV;
//! a bare segfault names nothing, so each worker installs a handler (on an alternate signal
//! stack) that checks whether the faulting address lies in the running fiber's guard page. If
//! it does, it prints which fiber overflowed and aborts; otherwise it restores the previous
//! handler (Rust's own thread-overflow reporter, or the default) and returns, so the fault
//! recurs and is handled as it would have been without fibra.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Once;

static INSTALL: Once = Once::new();
static mut PREVIOUS: [Option<libc::sigaction>; 2] = [None, None];

const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// An alternate signal stack owned by a worker thread; unmapped when the worker ends.
pub(crate) struct AltStack {
    base: *mut libc::c_void,
    len: usize,
}

impl Drop for AltStack {
    fn drop(&mut self) {
        if self.base.is_null() {
            return;
        }
        let disable = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: disabling this thread's alternate stack before unmapping the memory it used;
        // `base`/`len` describe the mapping made in `install` on this same thread.
        unsafe {
            libc::sigaltstack(&disable, std::ptr::null_mut());
            libc::munmap(self.base, self.len);
        }
    }
}

/// Installs the process-wide handler (once) and an alternate signal stack for this thread.
pub(crate) fn install() -> AltStack {
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; we fill in the
            // handler and flags, and save the previous action before any fault can use it
            // (call_once runs before any fiber of this process starts).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut old) == 0 {
                    PREVIOUS[i] = Some(old);
                }
            }
        }
    });
    let len = 64 * 1024 + crate::stack::page_size();
    // SAFETY: querying the current alternate stack into a zeroed stack_t is always valid.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; a null new-stack pointer only reads the current setting.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        // The thread already has one (std installs it for threads it spawns).
        return AltStack {
            base: std::ptr::null_mut(),
            len: 0,
        };
    }
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return AltStack {
            base: std::ptr::null_mut(),
            len: 0,
        };
    }
    let stack = libc::stack_t {
        ss_sp: base,
        ss_flags: 0,
        ss_size: len,
    };
    // SAFETY: `stack` describes the live mapping just created, owned by the returned AltStack
    // which disables it before unmapping.
    unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) };
    AltStack { base, len }
}

/// Writes `bytes` to stderr with a raw `write` (async-signal-safe).
fn write_stderr(bytes: &[u8]) {
    // SAFETY: writing a valid buffer to fd 2; the result is deliberately ignored.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers of SIGSEGV/SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    // Const-initialised thread-locals without destructors are plain TLS reads, safe here.
    let task = crate::fiber::current_ptr();
    // SAFETY: the current-fiber pointer is null or set from a live `&Task` for exactly as long
    // as that fiber runs on this thread, and the fault happened on this thread.
    let task = unsafe { task.as_ref() };
    let on_guard = task.is_some_and(|t| {
        let (lo, hi) = crate::stack::guard_range(t.stack_limit.load(Relaxed));
        lo <= addr && addr < hi
    });
    if let (true, Some(task)) = (on_guard, task) {
        let id = task.id;
        write_stderr(b"\nfibra: fiber '");
        write_stderr(task.display_name().as_bytes());
        write_stderr(b"' (id ");
        let mut buf = [0u8; 20];
        let mut n = id;
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        write_stderr(&buf[i..]);
        write_stderr(b") has overflowed its stack; raise it with fibra::Builder::stack_size\n");
        // SAFETY: abort is async-signal-safe.
        unsafe { libc::abort() };
    }
    // Not a fiber guard page: put the previous disposition back and return, so the faulting
    // instruction runs again and faults into that handler.
    let idx = if sig == libc::SIGSEGV { 0 } else { 1 };
    // SAFETY: PREVIOUS is written only inside `INSTALL.call_once`, which completed before this
    // handler could be installed; here it is only read.
    unsafe {
        let prev = (*std::ptr::addr_of!(PREVIOUS))[idx];
        match prev {
            Some(old) => {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
            None => {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}
