//! Stack-overflow reporting for fibers.
//!
//! Every fiber stack has a guard page below it. A fiber that runs into it faults with SIGSEGV
//! (or SIGBUS); a bare segfault names nothing, so the first worker installs, process-wide, a
//! handler for both signals (run on each worker's alternate signal stack) that checks whether
//! the faulting address lies in the running fiber's guard page. If it does, it prints which
//! fiber overflowed and aborts.
//!
//! # Chaining
//!
//! Every other SIGSEGV/SIGBUS is passed on to the action the signal had before fibra's handler
//! went in (Rust's own thread-overflow reporter, a JIT's or GC's fault handler, the default,
//! ...). That action is recorded once, before fibra's handler is installed, and fibra's handler
//! is never removed by fibra, so a later fiber overflow is still reported after any number of
//! chained signals. Per signal, with the previous action being:
//!
//! - a handler: it is called as the kernel would have called it: `(sig, info, ctx)` if it was
//!   installed with `SA_SIGINFO`, else `(sig)`; with its `sa_mask` blocked and, unless it has
//!   `SA_NODEFER`, `sig` blocked. `SA_RESETHAND` is honoured by calling it once and treating it
//!   as `SIG_DFL` afterwards (fibra's handler stays). It runs on the stack fibra's handler runs
//!   on (the thread's alternate stack, if it has one) whether or not it asked for `SA_ONSTACK`;
//!   `SA_RESTART` means nothing for these signals. If it returns having set the signal to
//!   `SIG_DFL` ("reset and return so the fault recurs into the default action", which is what
//!   Rust's std reporter does with anything not in a thread's guard page), a sent signal is
//!   raised again so that it takes that default action instead of being lost. (So a handler
//!   that resets to `SIG_DFL` meaning to swallow a sent signal once sees the process die.)
//! - `SIG_DFL`: the signal's default action. The signal is set to `SIG_DFL`; a fault recurs
//!   when the handler returns, a sent signal is raised again; either way the process dies by it.
//! - `SIG_IGN`: a sent signal is dropped. A fault cannot be ignored (it would recur forever), so
//!   it takes the default action, as the kernel does for an ignored fault.
//!
//! A *fault* is a signal the kernel raised for the interrupted instruction (`si_code > 0`), which
//! runs again when the handler returns. A *sent* signal (`kill`, `raise`, `pthread_kill`,
//! `sigqueue`: `si_code <= 0`; also SIGBUS `BUS_MCEERR_AO`, an asynchronous memory-error
//! notice) does not recur, so it is never mistaken for an overflow and is never "left to recur".
//!
//! Everything the handler does is async-signal-safe: atomic loads and swaps, `sigaction`,
//! `pthread_sigmask`, `raise`, `write` and `abort`; no allocation, no locks.
//!
//! A handler installed for these signals after a runtime has started replaces fibra's, which
//! then reports overflows only if that handler chains to it in turn.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Once, OnceLock};

static INSTALL: Once = Once::new();

/// How the handler learns which fiber runs on the faulting thread: implemented by the layer
/// that knows fibers (this one only knows stacks), and picked at compile time by
/// [`install`]'s type parameter, so the handler calls it directly.
pub(crate) trait RunningFiber: 'static {
    /// Calls `f` with the `limit` of the running fiber's stack (see
    /// [`guard_range`](crate::stack::guard_range)), its id and its name, if a fiber runs on
    /// this thread. Called in a signal handler: it must be async-signal-safe (plain
    /// thread-local reads and atomic loads; no allocation, no locks).
    fn with_running(f: impl FnOnce(usize, u64, &str));
}

/// The action each of [`SIGNALS`] had before fibra's handler; set once, before that handler is
/// installed, and never changed. Reading it is one atomic load, so the handler may.
static PREVIOUS: [OnceLock<libc::sigaction>; 2] = [OnceLock::new(), OnceLock::new()];

/// Whether a previous `SA_RESETHAND` handler of each of [`SIGNALS`] has had its one call.
static RESET_DONE: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

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
pub(crate) fn install<F: RunningFiber>() -> AltStack {
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only reads
            // the current one.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
                continue;
            }
            // Recorded before the handler that reads it goes in, so it never runs without it.
            // (A handler another thread installs between these two calls would be replaced
            // without being chained to; whichever of two racing installs wins is arbitrary
            // anyway.) Only this call_once sets it, so the set cannot fail.
            let _ = PREVIOUS[i].set(old);
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; we fill in the
            // handler and flags.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler::<F> as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, std::ptr::null_mut());
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

extern "C" fn handler<F: RunningFiber>(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
) {
    // The kernel always passes a siginfo to an SA_SIGINFO handler; a null one can only come
    // from a later handler calling this one by hand, and is treated as a sent signal.
    let code = if info.is_null() {
        libc::SI_USER
    } else {
        // SAFETY: non-null, so it is the valid siginfo of this delivery.
        unsafe { (*info).si_code }
    };
    let fault = code > 0 && !(sig == libc::SIGBUS && code == libc::BUS_MCEERR_AO);
    if fault {
        // SAFETY: `info` is non-null (code came from it) and valid; for a fault, si_addr is the
        // faulting address.
        let addr = unsafe { (*info).si_addr() } as usize;
        report_overflow::<F>(addr);
    }
    chain(sig, info, ctx, fault);
}

/// If `addr` lies in the running fiber's guard page, reports that fiber and aborts.
fn report_overflow<F: RunningFiber>(addr: usize) {
    // Const-initialised thread-locals without destructors are plain TLS reads, safe here.
    F::with_running(|stack_limit, id, name| {
        let (lo, hi) = crate::stack::guard_range(stack_limit);
        if !(lo <= addr && addr < hi) {
            return;
        }
        write_stderr(b"\nfibra: fiber '");
        write_stderr(name.as_bytes());
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
    });
}

/// Passes a signal that is not a fiber overflow on to the previous action (see the module doc).
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void, fault: bool) {
    let idx = if sig == libc::SIGSEGV { 0 } else { 1 };
    let Some(prev) = PREVIOUS[idx].get() else {
        // Unreachable: the handler is installed for a signal only after its previous action
        // is recorded. Should it happen anyway, behave as if that action was SIG_DFL.
        default_action(sig, fault);
        return;
    };
    match prev.sa_sigaction {
        libc::SIG_DFL => default_action(sig, fault),
        libc::SIG_IGN => {
            if fault {
                default_action(sig, fault);
            }
        }
        _ => {
            // The kernel would have reset a one-shot handler on its first delivery.
            if prev.sa_flags & libc::SA_RESETHAND != 0 && RESET_DONE[idx].swap(true, Relaxed) {
                default_action(sig, fault);
                return;
            }
            // SAFETY: `prev` is the action that was installed for `sig` and is not SIG_DFL or
            // SIG_IGN, so it names a handler of the kind its SA_SIGINFO flag says; `info` and
            // `ctx` are this delivery's own.
            unsafe { call_handler(sig, info, ctx, prev) };
            // A handler that set SIG_DFL and returned expects the signal to recur into the
            // default action; a sent signal does not recur by itself.
            if !fault && disposition(sig) == libc::SIG_DFL {
                raise_again(sig);
            }
        }
    }
}

/// Calls the handler in `prev` for this delivery, with the signal mask the kernel would have set.
///
/// # Safety
///
/// `prev.sa_sigaction` must be a signal handler of the kind `prev.sa_flags & SA_SIGINFO` says,
/// and `info`/`ctx` the arguments this delivery's handler received.
unsafe fn call_handler(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
    prev: &libc::sigaction,
) {
    // SAFETY: sigset operations on valid, initialised sets; pthread_sigmask is
    // async-signal-safe and only changes this thread's mask, restored below.
    let saved = unsafe {
        let mut saved: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &prev.sa_mask, &mut saved);
        if prev.sa_flags & libc::SA_NODEFER != 0 && libc::sigismember(&prev.sa_mask, sig) == 0 {
            unblock(sig);
        }
        saved
    };
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the caller guarantees this is an SA_SIGINFO handler; sighandler_t and fn
        // pointers have the same size.
        unsafe {
            let f = std::mem::transmute::<
                libc::sighandler_t,
                extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void),
            >(prev.sa_sigaction);
            f(sig, info, ctx);
        }
    } else {
        // SAFETY: the caller guarantees this is a plain `void (*)(int)` handler.
        unsafe {
            let f = std::mem::transmute::<libc::sighandler_t, extern "C" fn(libc::c_int)>(
                prev.sa_sigaction,
            );
            f(sig);
        }
    }
    // SAFETY: restoring the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &saved, std::ptr::null_mut()) };
}

/// The signal's default action: the process dies by `sig` (a fault recurs when the handler
/// returns; a sent signal is raised again here).
fn default_action(sig: libc::c_int, fault: bool) {
    // SAFETY: a zeroed sigaction is SIG_DFL with no flags and an empty mask; sigaction is
    // async-signal-safe.
    unsafe {
        let dfl: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
    }
    if !fault {
        raise_again(sig);
    }
}

/// Sends `sig` to this thread again and lets it through, so that its current disposition acts
/// on it now (for SIG_DFL: the process dies here).
fn raise_again(sig: libc::c_int) {
    // SAFETY: raise is async-signal-safe; `sig` is blocked while its handler runs, so it stays
    // pending until `unblock` lets it through.
    unsafe {
        libc::raise(sig);
        unblock(sig);
    }
}

/// Unblocks `sig` for this thread.
///
/// # Safety
///
/// Only async-signal-safe calls; safe to call from a handler (it is unsafe because a pending
/// `sig` is delivered at once).
unsafe fn unblock(sig: libc::c_int) {
    // SAFETY: building a one-signal set in a valid sigset_t and unblocking it for this thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// The handler currently installed for `sig` (SIG_DFL if it cannot be read).
fn disposition(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a zeroed sigaction (SIG_DFL) is a valid out-parameter; a null new action only
    // reads the current one; sigaction is async-signal-safe.
    unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut cur);
        cur.sa_sigaction
    }
}
