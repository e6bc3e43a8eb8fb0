//! `fibra bench` against `fibra hello --tls-cert/--tls-key`, both the built binary, over
//! `https://`: with `-k` (connections and their TLS sessions reused) and without (a new
//! connection, a full handshake, per request), `--insecure` and `--cacert`; and `--h3`
//! against `fibra hello --http3`.

mod bench_util;
mod tls_util;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use bench_util::bench;
use tls_util::{hello, https_addr, Certs, Hello};

/// A running `fibra hello` over TLS with a self-signed certificate for `localhost`; killed,
/// and its certificate files removed, on drop.
struct HelloTls {
    _child: Hello,
    /// `https://127.0.0.1:PORT`
    url: String,
    certs: Certs,
}

impl HelloTls {
    fn start(name: &str) -> HelloTls {
        HelloTls::start_with(name, &[])
    }

    /// As `start`, with `extra` flags for `fibra hello`.
    fn start_with(name: &str, extra: &[&str]) -> HelloTls {
        let certs = Certs::new(&format!("bench-{name}"));
        let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
        let mut flags = vec!["--tls-cert", &cert, "--tls-key", &key];
        flags.extend_from_slice(extra);
        let mut child = hello(&flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fibra hello");
        let stdout = child.stdout.take().expect("piped stdout");
        let child = Hello(child);
        // With --http3 the HTTP/3 line comes first; the https URL ends the last one.
        let mut lines = BufReader::new(stdout).lines();
        let line = loop {
            let line = lines.next().expect("fibra hello's banner").unwrap();
            if line.contains("listening on https://") {
                break line;
            }
        };
        let url = format!("https://{}", https_addr(&line));
        HelloTls {
            _child: child,
            url,
            certs,
        }
    }

    fn port(&self) -> &str {
        self.url.rsplit(':').next().unwrap()
    }
}

fn assert_all_succeeded(code: i32, v: &serde_json::Value, n: u64) {
    assert_eq!(code, 0, "{v}");
    let r = &v["requests"];
    assert_eq!(r["succeeded"], n, "{v}");
    assert_eq!(r["failed"], 0, "{v}");
    assert_eq!(r["errored"], 0, "{v}");
    assert_eq!(v["status"]["2xx"], n, "{v}");
    assert_eq!(
        v["traffic"]["body"],
        n * "Hello, World!".len() as u64,
        "{v}"
    );
}

#[test]
fn https_keep_alive_reuses_connections() {
    let hello = HelloTls::start("keepalive");
    let url = format!("{}/plaintext", hello.url);
    let (code, v) = bench(
        &[
            "-n",
            "200",
            "-c",
            "4",
            "-t",
            "2",
            "-k",
            "--insecure",
            "--json",
        ],
        &url,
    );
    assert_all_succeeded(code, &v, 200);
    assert_eq!(v["url"], url, "{v}");
    assert_eq!(
        v["traffic"]["connections"], 4,
        "one TLS connection each: {v}"
    );
}

#[test]
fn https_without_keep_alive_handshakes_per_request() {
    let hello = HelloTls::start("handshakes");
    let url = format!("{}/plaintext", hello.url);
    let (code, v) = bench(&["-n", "40", "-c", "2", "--insecure", "--json"], &url);
    assert_all_succeeded(code, &v, 40);
    assert_eq!(
        v["traffic"]["connections"], 40,
        "a connection per request: {v}"
    );
}

#[test]
fn cacert_verifies_the_server() {
    let hello = HelloTls::start("cacert");
    let url = format!("https://localhost:{}/plaintext", hello.port());
    let ca = hello.certs.dir.join("cert.pem");
    let ca = ca.to_str().unwrap();
    let (code, v) = bench(
        &["-n", "20", "-c", "2", "-k", "--cacert", ca, "--json"],
        &url,
    );
    assert_all_succeeded(code, &v, 20);

    // Another CA: every handshake fails, so every request errors.
    let other = hello.certs.dir.join("other.pem");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&other, ck.cert.pem()).unwrap();
    let (code, v) = bench(
        &[
            "-n",
            "4",
            "-c",
            "2",
            "--cacert",
            other.to_str().unwrap(),
            "--json",
        ],
        &url,
    );
    assert_eq!(code, 1, "no request succeeded: {v}");
    assert_eq!(v["requests"]["succeeded"], 0, "{v}");
    assert_eq!(v["requests"]["errored"], 4, "{v}");
}

#[test]
fn h3_streams_add_up() {
    let hello = HelloTls::start_with("h3", &["--http3"]);
    // The UDP twin of the HTTPS port; the certificate is checked against `localhost`.
    let url = format!("https://localhost:{}/plaintext", hello.port());
    let ca = hello.certs.dir.join("cert.pem");
    let (code, v) = bench(
        &[
            "--h3",
            "-m",
            "8",
            "-n",
            "2000",
            "-c",
            "4",
            "-t",
            "2",
            "--cacert",
            ca.to_str().unwrap(),
            "--json",
        ],
        &url,
    );
    assert_all_succeeded(code, &v, 2000);
    assert_eq!(v["latency_us"]["count"], 2000, "{v}");
    assert_eq!(
        v["traffic"]["connections"], 4,
        "one QUIC connection each: {v}"
    );
    // Each request's HEADERS frame names `localhost:PORT` and `/plaintext`: 20 bytes at least.
    let sent = v["traffic"]["sent"].as_u64().unwrap();
    assert!(sent >= 2000 * 20, "{v}");
    // Every body counted, though not copied: 13 bytes each ("Hello, World!").
    assert_eq!(v["traffic"]["body"], 2000 * 13, "{v}");

    // A path the server does not have: every answer is a 404, none lost.
    let missing = format!("https://localhost:{}/missing", hello.port());
    let (code, v) = bench(
        &[
            "--h3",
            "-m",
            "4",
            "-n",
            "100",
            "-c",
            "2",
            "--insecure",
            "--json",
        ],
        &missing,
    );
    assert_eq!(code, 1, "no request succeeded: {v}");
    assert_eq!(v["status"]["4xx"], 100, "{v}");
    assert_eq!(v["requests"]["errored"], 0, "{v}");
}
