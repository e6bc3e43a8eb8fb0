//! `fibra bench` against `fibra hello`, both the built binary: fixed `-n`
//! runs whose counts must add up exactly.

mod bench_util;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use bench_util::bench;

/// A running `fibra hello`, killed on drop.
struct Hello {
    child: Child,
    url: String,
}

impl Hello {
    fn start() -> Hello {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fibra"))
            .args([
                "hello",
                "--addr",
                "127.0.0.1",
                "--port",
                "0",
                "--workers",
                "1",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fibra hello");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .trim()
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://"))
            .unwrap_or_else(|| panic!("fibra hello printed {line:?}"))
            .trim_end_matches('/')
            .to_string();
        Hello { child, url }
    }
}

impl Drop for Hello {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn plaintext_counts_add_up() {
    let hello = Hello::start();
    let url = format!("{}/plaintext", hello.url);
    let (code, v) = bench(&["-n", "2000", "-c", "16", "-t", "2", "-k", "--json"], &url);
    assert_eq!(code, 0, "{v}");
    let r = &v["requests"];
    for (field, want) in [
        ("total", 2000),
        ("started", 2000),
        ("done", 2000),
        ("succeeded", 2000),
    ] {
        assert_eq!(r[field], want, "{field}: {v}");
    }
    assert_eq!(r["failed"], 0, "{v}");
    assert_eq!(r["errored"], 0, "{v}");
    assert_eq!(v["status"]["2xx"], 2000, "{v}");
    assert_eq!(v["latency_us"]["count"], 2000, "{v}");
    let t = &v["traffic"];
    assert_eq!(t["body"], 2000 * "Hello, World!".len(), "{v}");
}

#[test]
fn head_pipeline_and_not_found() {
    let hello = Hello::start();
    let url = format!("{}/plaintext", hello.url);
    let (code, v) = bench(
        &["-n", "300", "-c", "3", "-k", "--method", "HEAD", "--json"],
        &url,
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["requests"]["succeeded"], 300, "{v}");
    assert_eq!(v["traffic"]["body"], 0, "HEAD responses carry no body: {v}");

    let (code, v) = bench(
        &["-n", "640", "-c", "4", "-k", "--pipeline", "16", "--json"],
        &url,
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["requests"]["succeeded"], 640, "{v}");

    let missing = format!("{}/missing", hello.url);
    let (code, v) = bench(&["-n", "50", "-c", "5", "--json"], &missing);
    assert_eq!(code, 1, "no request succeeded: {v}");
    assert_eq!(v["status"]["4xx"], 50, "{v}");
    assert_eq!(v["requests"]["failed"], 50, "{v}");
    assert_eq!(
        v["traffic"]["connections"], 50,
        "without -k every request connects: {v}"
    );
}

#[test]
fn ws_echo_counts_add_up() {
    let hello = Hello::start();
    let url = format!("{}/ws", hello.url.replacen("http://", "ws://", 1));
    // Three message sizes: the 7-bit, 16-bit and 64-bit length forms.
    for (size, n) in [(64usize, 3000u64), (300, 500), (70_000, 100)] {
        let size_arg = size.to_string();
        let n_arg = n.to_string();
        let (code, v) = bench(
            &[
                "--ws", "--size", &size_arg, "-n", &n_arg, "-c", "8", "-t", "2", "--json",
            ],
            &url,
        );
        assert_eq!(code, 0, "{v}");
        let r = &v["requests"];
        assert_eq!(r["succeeded"], n, "every message echoed intact: {v}");
        assert_eq!(r["failed"], 0, "{v}");
        assert_eq!(r["errored"], 0, "{v}");
        assert_eq!(v["latency_us"]["count"], n, "{v}");
        assert_eq!(v["ws"]["message_bytes"], size, "{v}");
        assert!(v["ws"]["messages_per_sec"].as_f64().unwrap() > 0.0, "{v}");
        assert_eq!(v["traffic"]["connections"], 8, "{v}");
    }
    // Not a WebSocket endpoint: every upgrade is refused, and the run says so.
    let (code, v) = bench(
        &["--ws", "-n", "20", "-c", "2", "--json"],
        &format!("{}/plaintext", hello.url),
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["requests"]["failed"], 20, "{v}");
    let why = v["errors"]["malformed"]["first"].as_str().unwrap();
    assert!(why.contains("upgrade was refused"), "{why}");
}

#[test]
fn h2_counts_add_up() {
    let hello = Hello::start();
    let url = format!("{}/plaintext", hello.url);
    let (code, v) = bench(
        &[
            "--h2", "-m", "8", "-n", "4000", "-c", "4", "-t", "2", "--json",
        ],
        &url,
    );
    assert_eq!(code, 0, "{v}");
    let r = &v["requests"];
    assert_eq!(r["succeeded"], 4000, "{v}");
    assert_eq!(r["failed"], 0, "{v}");
    assert_eq!(r["errored"], 0, "{v}");
    assert_eq!(v["latency_us"]["count"], 4000, "{v}");
    // One connection each, kept for the whole run; "Hello, World!" is 13 bytes.
    assert_eq!(v["traffic"]["connections"], 4, "{v}");
    assert_eq!(v["traffic"]["body"], 13 * 4000, "{v}");
}

#[test]
fn a_report_into_a_closed_pipe_ends_quietly() {
    let hello = Hello::start();
    let url = format!("{}/plaintext", hello.url);
    for format in [
        &["-n", "50", "-c", "2"][..],
        &["-n", "50", "-c", "2", "--json"],
    ] {
        // `fibra bench ... | head` once `head` has exited.
        let out = Command::new(env!("CARGO_BIN_EXE_fibra"))
            .arg("bench")
            .args(format)
            .arg(&url)
            .stdout(fibra_testkit::broken_pipe())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fibra bench")
            .wait_with_output()
            .expect("fibra bench ends");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{format:?}: {}: {err}", out.status);
        assert!(!err.contains("panicked"), "{format:?}: {err}");
    }
}
