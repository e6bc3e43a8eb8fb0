//! Active health checks run on threads of their own (named `fibra-health`, one per
//! upstream), which must end when the proxy is dropped (a configuration reload drops the old
//! one), promptly: not after sleeping through a long interval.
//!
//! Alone in its test binary: it counts the process's threads by name (`/proc/self/task`).

mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra_proxy::{ActiveHealth, Balance, Proxy};
use proxy_util::{raw_upstream, read_head};

/// Threads of this process named `fibra-health`.
fn checker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "fibra-health")
        .count()
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn checker_threads_end_when_the_proxy_is_dropped() {
    let checks = Arc::new(AtomicUsize::new(0));
    let seen = checks.clone();
    let up = raw_upstream(move |mut s, _| {
        while read_head(&mut s).is_some() {
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    assert_eq!(checker_threads(), 0);
    let url = format!("http://{}/", up.addr);
    let balance = Balance {
        // Far longer than the test: a thread that slept through it would never end in time.
        active: Some(ActiveHealth {
            path: "/health".into(),
            interval: Duration::from_secs(3600),
            timeout: Duration::from_secs(5),
        }),
        ..Balance::default()
    };
    let proxy = Proxy::new()
        .route_balanced("/", &[&url, &url], balance.clone())
        .unwrap()
        .route_balanced("/one/", &[&url], balance)
        .unwrap();
    wait_until("the first checks, at once", || {
        checks.load(Ordering::SeqCst) == 3
    });
    assert_eq!(checker_threads(), 3, "one per upstream");
    assert!(proxy.upstream_states().iter().all(|s| s.health.is_up()));
    drop(proxy);
    wait_until("the checker threads end", || checker_threads() == 0);
    assert_eq!(checks.load(Ordering::SeqCst), 3, "no check after the drop");
}
