//! `fibra bench` against small std-thread servers on 127.0.0.1: the counts
//! it reports must add up exactly and match what the server did.

mod bench_util;

use bench_util::{bench, Reply, Server};

#[test]
fn keep_alive_counts_add_up() {
    let server = Server::start(|_, _| Reply::Ok);
    let (code, v) = bench(
        &["-n", "1000", "-c", "10", "-k", "--json"],
        &server.url("/"),
    );
    assert_eq!(code, 0);
    let r = &v["requests"];
    assert_eq!(r["total"], 1000, "{v}");
    assert_eq!(r["started"], 1000, "{v}");
    assert_eq!(r["done"], 1000, "{v}");
    assert_eq!(r["succeeded"], 1000, "{v}");
    assert_eq!(r["failed"], 0, "{v}");
    assert_eq!(r["errored"], 0, "{v}");
    assert_eq!(v["status"]["2xx"], 1000);
    assert_eq!(v["latency_us"]["count"], 1000);
    assert_eq!(
        v["traffic"]["connections"], 10,
        "keep-alive reuses the 10 connections"
    );
    assert_eq!(server.requests(), 1000);
    assert_eq!(
        v["traffic"]["received"].as_u64(),
        Some(1000 * Reply::Ok.bytes().len() as u64)
    );
}

#[test]
fn new_connection_per_request_without_k() {
    let server = Server::start(|_, _| Reply::Ok);
    let (code, v) = bench(
        &["-n", "200", "-c", "4", "-t", "2", "--json"],
        &server.url("/x"),
    );
    assert_eq!(code, 0);
    assert_eq!(v["requests"]["succeeded"], 200, "{v}");
    assert_eq!(v["traffic"]["connections"], 200, "{v}");
    assert_eq!(server.requests(), 200);
}

#[test]
fn status_classes_and_chunked_bodies() {
    // Every 4th request per connection gets a 503, every 3rd a chunked 200, the rest 404 or 200.
    let server = Server::start(|_, n| match n % 4 {
        0 => Reply::Status503,
        1 => Reply::Chunked,
        2 => Reply::NotFound,
        _ => Reply::Ok,
    });
    let (code, v) = bench(&["-n", "400", "-c", "4", "-k", "--json"], &server.url("/"));
    assert_eq!(code, 0);
    let s = &v["status"];
    assert_eq!(s["5xx"], server.count(Reply::Status503), "{v}");
    assert_eq!(s["4xx"], server.count(Reply::NotFound), "{v}");
    assert_eq!(
        s["2xx"].as_u64().unwrap(),
        server.count(Reply::Ok) + server.count(Reply::Chunked)
    );
    let r = &v["requests"];
    assert_eq!(r["done"], 400);
    assert_eq!(r["succeeded"], s["2xx"]);
    assert_eq!(
        r["failed"].as_u64().unwrap(),
        400 - s["2xx"].as_u64().unwrap()
    );
    assert_eq!(r["errored"], 0);
}

#[test]
fn server_closing_keep_alive_connections_causes_reconnects() {
    // The 7th response on each connection says `Connection: close`.
    let server = Server::start(|_, n| {
        if n % 7 == 6 {
            Reply::OkClose
        } else {
            Reply::Ok
        }
    });
    let (code, v) = bench(&["-n", "500", "-c", "5", "-k", "--json"], &server.url("/"));
    assert_eq!(code, 0);
    assert_eq!(v["requests"]["succeeded"], 500, "{v}");
    assert_eq!(server.requests(), 500);
    assert!(
        v["traffic"]["connections"].as_u64().unwrap() >= 500 / 7,
        "{v}"
    );
}

#[test]
fn pipelined_requests_are_all_answered() {
    let server = Server::start(|_, _| Reply::Ok);
    let (code, v) = bench(
        &["-n", "1000", "-c", "3", "-k", "--pipeline", "8", "--json"],
        &server.url("/"),
    );
    assert_eq!(code, 0);
    assert_eq!(v["requests"]["done"], 1000, "{v}");
    assert_eq!(v["requests"]["succeeded"], 1000, "{v}");
    assert_eq!(server.requests(), 1000);
}

#[test]
fn batch_rounds_count_exactly() {
    let server = Server::start(|_, _| Reply::Ok);
    let (code, v) = bench(
        &[
            "-n", "1003", "-c", "8", "-t", "2", "-k", "--batch", "--json",
        ],
        &server.url("/"),
    );
    assert_eq!(code, 0);
    assert_eq!(v["requests"]["succeeded"], 1003, "{v}");
    assert_eq!(server.requests(), 1003);
}

#[test]
fn truncated_and_malformed_responses_fail() {
    // The 5th response on a connection is cut short (then the server closes)
    // or, on every other connection, garbage; neither may count as a success.
    let server = Server::start(|conn, n| match (n, conn % 2) {
        (4, 0) => Reply::Truncated,
        (4, _) => Reply::Garbage,
        _ => Reply::Ok,
    });
    let (code, v) = bench(&["-n", "300", "-c", "3", "-k", "--json"], &server.url("/"));
    assert_eq!(code, 0);
    let r = &v["requests"];
    assert_eq!(r["done"], 300, "{v}");
    let bad = server.count(Reply::Truncated) + server.count(Reply::Garbage);
    assert!(bad > 0);
    assert_eq!(r["failed"].as_u64(), Some(bad), "{v}");
    assert_eq!(r["succeeded"].as_u64(), Some(300 - bad), "{v}");
    assert_eq!(
        v["errors"]["truncated"]["count"].as_u64(),
        Some(server.count(Reply::Truncated))
    );
    assert_eq!(
        v["errors"]["malformed"]["count"].as_u64(),
        Some(server.count(Reply::Garbage))
    );
}

#[test]
fn text_report_has_weighttp_lines() {
    let server = Server::start(|_, _| Reply::Ok);
    let out = bench_util::run(&["-n", "50", "-c", "5", "-k", &server.url("/")]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("requests: 50 total, 50 started, 50 done, 50 succeeded, 0 failed, 0 errored"),
        "{text}"
    );
    assert!(
        text.contains("status codes: 50 2xx, 0 3xx, 0 4xx, 0 5xx"),
        "{text}"
    );
    assert!(text.contains(" req/s, "), "{text}");
    assert!(text.contains("latency: min "), "{text}");
    assert!(
        out.stderr.is_empty(),
        "no progress bar when stderr is not a terminal"
    );
}

#[test]
fn interrupt_stops_the_run_and_reports() {
    let server = Server::start(|_, _| Reply::Ok);
    let url = server.url("/");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fibra"))
        .args(["bench", "-n", "1000000000", "-c", "2", "-k", "--json", &url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) until the run is under way, then interrupt it.
    for _ in 0..6000 {
        if server.requests() >= 100 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(server.requests() >= 100, "the run never got going");
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    let rc = unsafe { libc::kill(pid, libc::SIGINT) };
    assert_eq!(rc, 0);
    let out = bench_util::wait(&mut child);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    let r = &v["requests"];
    assert_eq!(r["done"], r["started"], "in-flight requests finish: {v}");
    assert_eq!(r["succeeded"], r["done"], "{v}");
    assert_eq!(r["succeeded"].as_u64(), Some(server.requests()), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("SIGINT"));
}

#[test]
fn rate_holds_a_timed_run_to_its_schedule() {
    // 200 requests a second over two workers for one second: each worker's turns are 10 ms
    // apart, so at most 100 (+1 for the turn at the start) leave on each, however fast the
    // server answers; and the run still completes its requests.
    let server = Server::start(|_, _| Reply::Ok);
    let (code, v) = bench(
        &[
            "-d", "1s", "-c", "8", "-t", "2", "-k", "--rate", "200", "--json",
        ],
        &server.url("/"),
    );
    assert_eq!(code, 0, "{v}");
    let done = v["requests"]["done"].as_u64().unwrap();
    assert!(done > 0 && done <= 202, "{done} requests: {v}");
    assert_eq!(v["requests"]["succeeded"].as_u64(), Some(done), "{v}");
    assert_eq!(server.requests(), done, "{v}");
    assert_eq!(v["rate"], 200.0, "{v}");
    // The same server unpaced answers far more in the same time.
    let (_, fast) = bench(
        &["-d", "1s", "-c", "8", "-t", "2", "-k", "--json"],
        &server.url("/"),
    );
    assert!(fast["requests"]["done"].as_u64().unwrap() > 202, "{fast}");
}
