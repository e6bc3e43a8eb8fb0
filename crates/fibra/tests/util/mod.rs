//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A generous bound for anything a test waits on (the machine may be loaded).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Raises the soft `RLIMIT_NOFILE` to `want` (capped at the hard limit); returns the new soft limit.
pub fn raise_nofile(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid, initialised rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        lim.rlim_cur = want.min(lim.rlim_max);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    }
    lim.rlim_cur
}

/// The role this test process was started in by [`child`], if any.
pub fn child_role() -> Option<String> {
    std::env::var("FIBRA_TEST_CHILD").ok()
}

/// Re-runs this test binary's test `test_name` in a child process with `FIBRA_TEST_CHILD=role`
/// and `args` in `FIBRA_TEST_ARGS`.
pub fn child(test_name: &str, role: &str, args: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary path"));
    cmd.args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env("FIBRA_TEST_CHILD", role)
        .env("FIBRA_TEST_ARGS", args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs a child to completion and returns its output.
pub fn run_child(test_name: &str, role: &str, args: &str) -> Output {
    child(test_name, role, args)
        .stdin(Stdio::null())
        .output()
        .expect("spawn child test process")
}

/// Runs `f` on its own thread and returns its value, failing the test (instead of hanging it)
/// if `f` has not returned within [`PATIENCE`]: for scenarios whose bug is a lost wake-up.
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(Ok(v)) => v,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("{what}: no progress within {PATIENCE:?} (a lost wake-up?)"),
    }
}

/// A connected loopback pair from `listener`: (client, server side).
pub fn tcp_pair(
    listener: &fibra::net::TcpListener,
) -> (fibra::net::TcpStream, fibra::net::TcpStream) {
    let client = fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
}

/// Reads what has arrived on `s` until `WouldBlock` (so the reactor knows the socket is
/// drained: a new socket counts as readable until a read comes back empty) or the end of the
/// stream: the bytes, and whether the end was reached. Panics on a read error.
pub fn read_available(s: &fibra::net::TcpStream) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut b = [0u8; 64];
    loop {
        match s.try_read(&mut b) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return (got, false),
            Err(e) => panic!("read failed: {e}"),
        }
    }
}

/// Counts its drops in the shared counter: a value a fiber holds, to see that the fiber's
/// destructors ran (the fiber finished or was cancelled).
pub struct DropCounter(pub std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}
