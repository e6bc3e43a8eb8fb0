//! A file the server cannot open for want of descriptors (`EMFILE`) is answered `503` with
//! `Retry-After`, and the failure is not cached: once descriptors are free the file is served.
//! It was a `404`, cached for the lookup cache's lifetime (60 s by default), so an existing
//! file stayed "not found" long after the shortage.
//!
//! One test in its own binary: it lowers this process's descriptor limit.

mod files_util;

use std::fs::File;
use std::time::Duration;

use fibra_files::{FileServer, FileServerConfig};
use files_util::{serve, Client, TempTree};

/// Sets this process's soft `RLIMIT_NOFILE`.
fn set_soft_nofile(soft: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = soft.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

fn soft_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit with a valid rlimit struct we own.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur
}

/// The highest descriptor number open in this process.
fn highest_fd() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .unwrap()
}

#[test]
fn a_file_not_opened_for_want_of_descriptors_is_503_and_not_cached() {
    let tree = TempTree::new("files-emfile");
    tree.write("warm.txt", "warm\n");
    tree.write("cold.txt", "cold\n");
    // A long cache lifetime, as in production: a cached 404 would outlast the test.
    let mut config = FileServerConfig::new(&tree.root);
    config.cache_ttl = Duration::from_secs(3600);
    let srv = serve(FileServer::new(config).unwrap());
    let mut c = Client::connect(srv.addr());
    assert_eq!(c.get("/warm.txt", &[]).status, 200);

    // No descriptor left: the limit just above the highest one open, and every free number
    // below it taken.
    let original = soft_nofile();
    set_soft_nofile(highest_fd() + 1);
    let mut fillers = Vec::new();
    while let Ok(f) = File::open("/dev/null") {
        fillers.push(f);
        assert!(fillers.len() < 100_000, "the limit did not take");
    }
    let starved = c.get("/cold.txt", &[]);
    let cached = c.get("/warm.txt", &[]);
    drop(fillers);
    set_soft_nofile(original);

    assert_eq!(starved.status, 503, "{}", starved.text());
    assert_eq!(starved.h("retry-after"), "1");
    assert_eq!(cached.status, 200, "a cached file needs no new descriptor");
    let after = c.get("/cold.txt", &[]);
    assert_eq!(after.status, 200, "not cached as missing: {}", after.text());
    assert_eq!(after.body, b"cold\n");
}
