//! `fibra` runs without transparent huge pages: its allocator would otherwise have the kernel
//! back each 2 MiB range of the heap it touches with a whole huge page, mostly zeros (see
//! `alloc::small_pages_only` in `main.rs`). `MIMALLOC_ALLOW_THP` set by the operator keeps
//! the process as it was started.

mod serve_util;

use serve_util::{fibra, start_command, Running};

/// The `THP_enabled` line of the process status file `status` (`/proc/PID/status`).
fn thp_enabled(status: &str) -> String {
    std::fs::read_to_string(status)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .expect("a kernel that reports THP_enabled (Linux 5.0 and later)")
        .trim()
        .to_string()
}

/// The `THP_enabled` line of the server's status.
fn server_thp_enabled(s: &Running) -> String {
    thp_enabled(&format!("/proc/{}/status", s.child.id()))
}

#[test]
fn the_server_turns_transparent_huge_pages_off() {
    let mut cmd = fibra(&["hello", "-p", "0", "--workers", "1"]);
    cmd.env_remove("MIMALLOC_ALLOW_THP");
    let s = start_command(cmd);
    assert_eq!(server_thp_enabled(&s), "0");
}

#[test]
fn mimalloc_allow_thp_keeps_them_as_they_were() {
    let mut cmd = fibra(&["hello", "-p", "0", "--workers", "1"]);
    cmd.env("MIMALLOC_ALLOW_THP", "1");
    let s = start_command(cmd);
    // What a process started here gets by default: this test's own value.
    assert_eq!(server_thp_enabled(&s), thp_enabled("/proc/self/status"));
}
