//! `fibra serve --proxy` with its upstream down: every failure is counted
//! (`fibra_server_errors_total{status="502"}`), but the error log gets at most one line per
//! second for the upstream and kind of failure, each later line with the count left out
//! since the one before, and no line twice (the CLI's hook once printed each failure beside
//! the library's own line: an outage of ten seconds wrote 600,000 lines).

mod serve_util;

use std::net::TcpListener;
use std::time::Instant;

use serve_util::{get, start, Site};

/// The number in `[N more like it since the last such line]`, 0 without one.
fn left_out(line: &str) -> u64 {
    line.split_once('[')
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_down_upstream_is_logged_once_a_second_and_counted_every_time() {
    let site = Site::new("proxy-errors");
    site.write("index.html", b"home\n");
    let log_dir = Site::new("proxy-errors-log");
    let log = log_dir.path().join("error.log");
    let down = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut s = start(&[
        "serve",
        site.path().to_str().unwrap(),
        "-p",
        "0",
        "--workers",
        "1",
        "--proxy",
        &format!("/api/=http://{down}/"),
        "--metrics",
        "/metrics",
        "--error-log",
        log.to_str().unwrap(),
    ]);
    const REQUESTS: u64 = 300;
    let started = Instant::now();
    for _ in 0..REQUESTS {
        let r = get(&s.addr, "/api/x");
        assert!(r.starts_with("HTTP/1.1 502 "), "{r}");
    }
    let elapsed = started.elapsed();
    let metrics = get(&s.addr, "/metrics");
    s.signal(libc::SIGTERM);
    assert!(s.wait_exit().success());

    assert!(
        metrics.contains(&format!(
            "fibra_server_errors_total{{status=\"502\"}} {REQUESTS}\n"
        )),
        "every failure counted:\n{metrics}"
    );
    let text = std::fs::read_to_string(&log).expect("the error log exists");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&down.to_string()))
        .collect();
    assert!(!lines.is_empty(), "the outage is logged:\n{text}");
    for l in &lines {
        assert!(l.starts_with("20") && l.contains("Z warn upstream "), "{l}");
        assert!(l.contains("connecting"), "{l}");
    }
    // One kind of failure (connecting): at most one line for each second the run took,
    // plus the first.
    assert!(
        lines.len() as u64 <= elapsed.as_secs() + 2,
        "{} lines in {elapsed:?}:\n{text}",
        lines.len()
    );
    // The counts left out never claim more than there were.
    let accounted: u64 = lines.len() as u64 + lines.iter().map(|l| left_out(l)).sum::<u64>();
    assert!(accounted <= REQUESTS, "{accounted}:\n{text}");
    let stderr_lines = text.lines().count();
    assert_eq!(stderr_lines, lines.len(), "nothing else logged:\n{text}");
}
