//! `--health PATH` and `--metrics PATH`: health answers 200 while serving and 503 once
//! SIGTERM starts the drain (`--drain-delay`: the app is still served meanwhile); metrics
//! count the app's requests by status class, their body bytes and time, and the open
//! connections, in Prometheus's text format.

mod ops_util;

use std::time::{Duration, Instant};

use ops_util::{fibra, get, start};

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

fn body(reply: &str) -> &str {
    reply.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[test]
fn health_turns_503_on_sigterm_and_metrics_count_requests() {
    let mut server = start(fibra(&[
        "hello",
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "2",
        "--health",
        "/healthz",
        "--metrics",
        "/metrics",
        "--drain-delay",
        "60",
    ]));
    let addr = server.addr();
    let health = get(&addr, "/healthz");
    assert!(health.starts_with("HTTP/1.1 200 OK\r\n"), "{health}");
    assert_eq!(body(&health), "ok\n");
    for _ in 0..5 {
        assert!(get(&addr, "/plaintext").ends_with("Hello, World!"));
    }
    assert!(get(&addr, "/missing").starts_with("HTTP/1.1 404"));
    let m = get(&addr, "/metrics");
    assert!(m.starts_with("HTTP/1.1 200 OK\r\n"), "{m}");
    let m = body(&m);
    assert_eq!(metric(m, "fibra_requests_total{class=\"2xx\"}"), 5.0);
    assert_eq!(metric(m, "fibra_requests_total{class=\"4xx\"}"), 1.0);
    assert_eq!(metric(m, "fibra_requests_total{class=\"5xx\"}"), 0.0);
    assert_eq!(metric(m, "fibra_response_body_bytes_total"), 5.0 * 13.0);
    assert_eq!(metric(m, "fibra_request_duration_seconds_count"), 6.0);
    assert_eq!(
        metric(m, "fibra_request_duration_seconds_bucket{le=\"+Inf\"}"),
        6.0
    );
    assert!(
        metric(m, "fibra_open_connections") >= 1.0,
        "the scrape's own"
    );
    assert_eq!(metric(m, "fibra_draining"), 0.0);

    // SAFETY: signals the process this test started.
    unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut draining = get(&addr, "/healthz");
    while !draining.starts_with("HTTP/1.1 503") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        draining = get(&addr, "/healthz");
    }
    assert!(
        draining.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{draining}"
    );
    assert_eq!(body(&draining), "draining\n");
    // Still serving the app during the drain delay.
    assert!(get(&addr, "/plaintext").ends_with("Hello, World!"));
    assert_eq!(metric(body(&get(&addr, "/metrics")), "fibra_draining"), 1.0);
}
