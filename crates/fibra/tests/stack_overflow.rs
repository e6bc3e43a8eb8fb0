//! A fiber that overflows its stack is reported by name, not as a bare SIGSEGV.

mod util;

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64, pad: &mut [u8; 512]) -> u64 {
    pad[0] = depth as u8;
    let mut next = [0u8; 512];
    next[1] = pad[0];
    std::hint::black_box(&mut next);
    recurse(depth + 1, &mut next) + u64::from(next[3])
}

/// Child side: a runtime with 64 KiB stacks runs fiber `name`, whose `body` overflows.
fn overflow_in_child(name: &'static str, body: fn() -> u64) -> ! {
    let rt = fibra::Runtime::builder()
        .workers(1)
        .stack_size(64 * 1024)
        .build()
        .unwrap();
    rt.block_on(move || {
        fibra::fiber::Builder::new()
            .name(name)
            .spawn(body)
            .unwrap()
            .join()
            .ok();
    });
    unreachable!("the overflow must abort the process");
}

/// Parent side: the child (test `test`, role `role`) aborted, naming fiber `name`; returns its
/// stderr.
fn expect_overflow_reported(test: &str, role: &str, name: &str) -> String {
    let out = util::run_child(test, role, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("fiber '{name}'")) && stderr.contains("overflowed its stack"),
        "stderr: {stderr}"
    );
    stderr.into_owned()
}

#[test]
fn stack_overflow_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow") {
        overflow_in_child("deep-recursion", || recurse(0, &mut [0u8; 512]));
    }
    expect_overflow_reported(
        "stack_overflow_names_the_fiber",
        "overflow",
        "deep-recursion",
    );
}

#[test]
fn stack_overflow_on_a_shared_stack_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow-shared") {
        overflow_in_child("deep-on-shared", || {
            fibra::fiber::on_shared_stack(|| recurse(0, &mut [0u8; 512]))
        });
    }
    expect_overflow_reported(
        "stack_overflow_on_a_shared_stack_names_the_fiber",
        "overflow-shared",
        "deep-on-shared",
    );
}

/// A fiber made of steps whose later step overflows: that step runs on the worker loop's own
/// stack, and the report still names the fiber.
#[test]
fn stack_overflow_in_a_later_step_names_the_fiber() {
    if util::child_role().as_deref() == Some("overflow-step") {
        let rt = fibra::Runtime::builder()
            .workers(1)
            .stack_size(64 * 1024)
            .build()
            .unwrap();
        rt.block_on(|| {
            use std::io::Write;
            let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client =
                fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().unwrap();
            let h = fibra::fiber::Builder::new()
                .name("deep-in-a-step")
                .spawn_steps(move || {
                    // Drained, so the wait below parks and the next step runs when woken.
                    let mut b = [0u8; 8];
                    while server.try_read(&mut b).is_ok_and(|n| n > 0) {}
                    server.when_readable().then(move |_| {
                        drop(server);
                        std::hint::black_box(recurse(0, &mut [0u8; 512]));
                        fibra::fiber::Step::done()
                    })
                })
                .unwrap();
            fibra::yield_now();
            client.write_all(b"x").unwrap();
            h.join().ok();
        });
        unreachable!("the overflow must abort the process");
    }
    expect_overflow_reported(
        "stack_overflow_in_a_later_step_names_the_fiber",
        "overflow-step",
        "deep-in-a-step",
    );
}

#[test]
fn a_segfault_elsewhere_is_not_misreported() {
    if util::child_role().as_deref() == Some("segv") {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        rt.block_on(|| {
            fibra::spawn(|| {
                // SAFETY: deliberately faulting on a null pointer to test the handler chain.
                unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
            })
            .join()
            .ok();
        });
        return;
    }
    let (signal, _, stderr) = outcome("a_segfault_elsewhere_is_not_misreported", "segv");
    assert!(
        died_of_sigsegv(signal, &stderr),
        "{signal:?}, stderr: {stderr}"
    );
    assert!(!stderr.contains("overflowed"), "stderr: {stderr}");
}

// Chaining to the SIGSEGV action that was there before the runtime: fibra's handler passes on
// what is not a fiber overflow and stays installed.

/// Child side: sets the SIGSEGV action to `handler` with `flags` (add SA_SIGINFO for a
/// three-argument handler).
fn set_sigsegv(handler: libc::sighandler_t, flags: libc::c_int) {
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; `handler` is SIG_DFL,
    // SIG_IGN or a handler of the kind `flags` says.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// Child side: a one-worker runtime with 64 KiB stacks whose worker has run a fiber, so fibra's
/// handler is installed.
fn started_runtime() -> fibra::Runtime {
    let rt = fibra::Runtime::builder()
        .workers(1)
        .stack_size(64 * 1024)
        .build()
        .unwrap();
    rt.block_on(|| {});
    rt
}

/// Child side: `raise(SIGSEGV)` from a fiber.
fn raise_in_fiber(rt: &fibra::Runtime) {
    rt.block_on(|| {
        fibra::spawn(|| {
            // SAFETY: raise has no preconditions; what SIGSEGV does is what is under test.
            unsafe { libc::raise(libc::SIGSEGV) };
        })
        .join()
        .unwrap();
    });
}

/// Parent side: runs the child and returns (the signal that killed it, its exit code, stderr).
fn outcome(test: &str, role: &str) -> (Option<i32>, Option<i32>, String) {
    use std::os::unix::process::ExitStatusExt;
    let out = util::run_child(test, role, "");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.signal(), out.status.code(), stderr)
}

/// Parent side: whether a child whose SIGSEGV action before the runtime was the one the process
/// started with died of SIGSEGV the default way. Under AddressSanitizer that action is ASan's
/// own SEGV handler (so Rust's std installed none), which reports and exits instead.
fn died_of_sigsegv(signal: Option<i32>, stderr: &str) -> bool {
    signal == Some(libc::SIGSEGV) || stderr.contains("ERROR: AddressSanitizer: SEGV")
}

#[test]
fn a_sent_sigsegv_is_not_lost() {
    if util::child_role().as_deref() == Some("raise") {
        // The previous action is Rust's std overflow reporter, which resets to SIG_DFL and
        // returns for anything not in a thread's guard page (under ASan: ASan's handler).
        let rt = started_runtime();
        raise_in_fiber(&rt);
        eprintln!("survived the raise");
        return;
    }
    let (signal, _, stderr) = outcome("a_sent_sigsegv_is_not_lost", "raise");
    assert!(
        died_of_sigsegv(signal, &stderr),
        "{signal:?}, stderr: {stderr}"
    );
    assert!(!stderr.contains("survived"), "stderr: {stderr}");
    assert!(!stderr.contains("overflowed"), "stderr: {stderr}");
}

#[test]
fn a_sigsegv_sent_outside_fibers_with_the_default_action_kills_the_process() {
    if util::child_role().as_deref() == Some("kill-dfl") {
        set_sigsegv(libc::SIG_DFL, 0);
        let _rt = started_runtime();
        // To this thread (not a fiber), so that it is handled before pthread_kill returns; a
        // process-directed kill could be handled by another thread while this one goes on.
        // SAFETY: signalling the calling thread; what SIGSEGV does is what is under test.
        unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGSEGV) };
        eprintln!("survived the signal");
        return;
    }
    let (signal, _, stderr) = outcome(
        "a_sigsegv_sent_outside_fibers_with_the_default_action_kills_the_process",
        "kill-dfl",
    );
    assert_eq!(signal, Some(libc::SIGSEGV), "stderr: {stderr}");
    assert!(!stderr.contains("survived"), "stderr: {stderr}");
}

static USER_PAGE: AtomicUsize = AtomicUsize::new(0);
static USER_PAGE_LEN: AtomicUsize = AtomicUsize::new(0);
static USER_HITS: AtomicUsize = AtomicUsize::new(0);

/// A JIT/GC-style SA_SIGINFO handler: a fault on `USER_PAGE` makes the page writable and
/// returns (the access then succeeds); anything else gets the default action.
extern "C" fn user_fault_handler(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _ctx: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler (and fibra passes on
    // the one it got).
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = USER_PAGE.load(SeqCst);
    let len = USER_PAGE_LEN.load(SeqCst);
    if page != 0 && (page..page + len).contains(&addr) {
        USER_HITS.fetch_add(1, SeqCst);
        // SAFETY: `page` is the start of a `len`-byte mapping this test made.
        unsafe {
            libc::mprotect(
                page as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        return;
    }
    // SAFETY: signal is async-signal-safe; the fault recurs into the default action.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
}

#[test]
fn a_user_fault_handler_is_chained_and_overflows_are_still_reported() {
    if util::child_role().as_deref() == Some("user-handler") {
        // SAFETY: sysconf has no preconditions.
        let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: an anonymous private mapping with no address hint has no preconditions.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(page, libc::MAP_FAILED);
        USER_PAGE_LEN.store(len, SeqCst);
        USER_PAGE.store(page as usize, SeqCst);
        set_sigsegv(
            user_fault_handler as *const () as usize,
            libc::SA_SIGINFO | libc::SA_ONSTACK,
        );
        let rt = started_runtime();
        let seen = rt.block_on(|| {
            fibra::spawn(|| {
                let p = USER_PAGE.load(SeqCst) as *mut u64;
                // SAFETY: the page is PROT_NONE until the user handler, reached through
                // fibra's, makes it writable; the write then lands in the mapping.
                unsafe {
                    p.write_volatile(42);
                    p.read_volatile()
                }
            })
            .join()
            .unwrap()
        });
        eprintln!(
            "read {seen}; user handler ran {} time(s)",
            USER_HITS.load(SeqCst)
        );
        drop(rt);
        overflow_in_child("after-chaining", || recurse(0, &mut [0u8; 512]));
    }
    let test = "a_user_fault_handler_is_chained_and_overflows_are_still_reported";
    let stderr = expect_overflow_reported(test, "user-handler", "after-chaining");
    assert!(
        stderr.contains("read 42; user handler ran 1 time(s)"),
        "stderr: {stderr}"
    );
}

static PLAIN_HITS: AtomicUsize = AtomicUsize::new(0);

/// A plain (no SA_SIGINFO) handler that counts and returns.
extern "C" fn plain_handler(_sig: libc::c_int) {
    PLAIN_HITS.fetch_add(1, SeqCst);
}

#[test]
fn a_plain_handler_is_called_for_every_sent_signal() {
    if util::child_role().as_deref() == Some("plain") {
        set_sigsegv(plain_handler as *const () as usize, 0);
        let rt = started_runtime();
        raise_in_fiber(&rt);
        raise_in_fiber(&rt);
        eprintln!("plain handler ran {} time(s)", PLAIN_HITS.load(SeqCst));
        return;
    }
    let (signal, code, stderr) =
        outcome("a_plain_handler_is_called_for_every_sent_signal", "plain");
    assert_eq!((signal, code), (None, Some(0)), "stderr: {stderr}");
    assert!(
        stderr.contains("plain handler ran 2 time(s)"),
        "stderr: {stderr}"
    );
}

#[test]
fn a_one_shot_handler_runs_once_then_the_default_action_applies() {
    if util::child_role().as_deref() == Some("resethand") {
        set_sigsegv(plain_handler as *const () as usize, libc::SA_RESETHAND);
        let rt = started_runtime();
        raise_in_fiber(&rt);
        eprintln!("one-shot handler ran {} time(s)", PLAIN_HITS.load(SeqCst));
        raise_in_fiber(&rt);
        eprintln!("survived the second raise");
        return;
    }
    let (signal, _, stderr) = outcome(
        "a_one_shot_handler_runs_once_then_the_default_action_applies",
        "resethand",
    );
    assert_eq!(signal, Some(libc::SIGSEGV), "stderr: {stderr}");
    assert!(
        stderr.contains("one-shot handler ran 1 time(s)"),
        "stderr: {stderr}"
    );
    assert!(!stderr.contains("survived"), "stderr: {stderr}");
}

#[test]
fn an_ignored_sigsegv_is_ignored_when_sent_but_a_fault_still_kills() {
    if util::child_role().as_deref() == Some("ignored") {
        set_sigsegv(libc::SIG_IGN, 0);
        let rt = started_runtime();
        raise_in_fiber(&rt);
        eprintln!("the sent signal was ignored");
        rt.block_on(|| {
            fibra::spawn(|| {
                // SAFETY: deliberately faulting on a null pointer to test the handler chain.
                unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
            })
            .join()
            .ok();
        });
        eprintln!("survived the fault");
        return;
    }
    let (signal, _, stderr) = outcome(
        "an_ignored_sigsegv_is_ignored_when_sent_but_a_fault_still_kills",
        "ignored",
    );
    assert_eq!(signal, Some(libc::SIGSEGV), "stderr: {stderr}");
    assert!(
        stderr.contains("the sent signal was ignored"),
        "stderr: {stderr}"
    );
    assert!(!stderr.contains("survived"), "stderr: {stderr}");
}
