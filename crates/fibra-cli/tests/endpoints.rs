//! `--health PATH` and `--metrics PATH`: health answers 200 while serving and 503 once
//! SIGTERM starts the drain (`--drain-delay`: the app is still served meanwhile); metrics
//! count the app's requests by status class, their body bytes and time, and the open
//! connections, in Prometheus's text format; idle connections and the error responses the
//! server made itself (a rejected request, the proxy's 502) are counted too.

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

#[test]
fn metrics_count_idle_connections_and_the_servers_own_errors() {
    let dir = std::env::temp_dir().join(format!("fibra-metrics-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "a").unwrap();
    // An upstream port nothing listens on: the proxy answers 502.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let route = format!("/up/=http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let mut server = start(fibra(&[
        "serve",
        dir.to_str().unwrap(),
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "1",
        "--metrics",
        "/metrics",
        "--proxy",
        &route,
    ]));
    let addr = server.addr();
    // Three keep-alive connections, each answered once and left open: idle.
    let mut kept = Vec::new();
    for _ in 0..3 {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        std::io::Write::write_all(&mut s, b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"\r\n\r\na") {
            let n = std::io::Read::read(&mut s, &mut buf).unwrap();
            assert!(n > 0, "closed early");
            got.extend_from_slice(&buf[..n]);
        }
        kept.push(s);
    }
    // The server's own errors: a malformed request (400), a head too large (431), an
    // upstream that refuses (502).
    let bad = ops_util::exchange(
        &addr,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    );
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    let big = ops_util::exchange(&addr, huge.as_bytes());
    assert!(big.starts_with("HTTP/1.1 431"), "{big}");
    assert!(get(&addr, "/up/x").starts_with("HTTP/1.1 502"));
    // Idle is counted when scraped; a connection turns idle just after its answer went out,
    // so look again (bounded) until the three are seen.
    let mut m = String::new();
    for _ in 0..300 {
        m = body(&get(&addr, "/metrics")).to_owned();
        if metric(&m, "fibra_idle_connections") >= 3.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let idle = metric(&m, "fibra_idle_connections");
    assert!(
        (3.0..=metric(&m, "fibra_open_connections")).contains(&idle),
        "{m}"
    );
    assert_eq!(
        metric(&m, "fibra_server_errors_total{status=\"400\"}"),
        1.0,
        "{m}"
    );
    assert_eq!(
        metric(&m, "fibra_server_errors_total{status=\"431\"}"),
        1.0,
        "{m}"
    );
    assert_eq!(
        metric(&m, "fibra_server_errors_total{status=\"502\"}"),
        1.0,
        "{m}"
    );
    assert_eq!(
        metric(&m, "fibra_server_errors_total{status=\"504\"}"),
        0.0,
        "{m}"
    );
    drop(kept);
    let _ = server.child.kill();
    let _ = std::fs::remove_dir_all(&dir);
}
