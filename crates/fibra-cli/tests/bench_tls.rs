//! `fibra bench` against `fibra hello --tls-cert/--tls-key`, both the built binary, over
//! `https://`: with `-k` (connections and their TLS sessions reused) and without (a new
//! connection, a full handshake, per request), `--insecure` and `--cacert`.

mod bench_util;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use bench_util::bench;

/// A running `fibra hello` over TLS with a self-signed certificate for `localhost`; killed,
/// and its certificate files removed, on drop.
struct HelloTls {
    child: Child,
    /// `https://127.0.0.1:PORT`
    url: String,
    dir: PathBuf,
}

impl HelloTls {
    fn start(name: &str) -> HelloTls {
        let dir = std::env::temp_dir().join(format!("fibra-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(dir.join("cert.pem"), ck.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), ck.signing_key.serialize_pem()).unwrap();
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
            .arg("--tls-cert")
            .arg(dir.join("cert.pem"))
            .arg("--tls-key")
            .arg(dir.join("key.pem"))
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
            .filter(|u| u.starts_with("https://"))
            .unwrap_or_else(|| panic!("fibra hello printed {line:?}"))
            .trim_end_matches('/')
            .to_string();
        HelloTls { child, url, dir }
    }

    fn port(&self) -> &str {
        self.url.rsplit(':').next().unwrap()
    }
}

impl Drop for HelloTls {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
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
    let ca = hello.dir.join("cert.pem");
    let ca = ca.to_str().unwrap();
    let (code, v) = bench(
        &["-n", "20", "-c", "2", "-k", "--cacert", ca, "--json"],
        &url,
    );
    assert_all_succeeded(code, &v, 20);

    // Another CA: every handshake fails, so every request errors.
    let other = hello.dir.join("other.pem");
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
