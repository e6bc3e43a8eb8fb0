//! `fibra serve DIR --proxy PREFIX=URL`, the built binaries: requests under the prefix go to a
//! `fibra hello` upstream with the prefix replaced (a 1 MiB POST to its `/echo` comes back
//! intact), other paths are DIR's files, a stopped upstream gives 502, and a malformed
//! `--proxy` is a clear error. An `https://` upstream (`fibra hello` over TLS) is verified
//! against `--proxy-ca`.

mod tls_util;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `fibra ARGS` and returns it with the `HOST:PORT` of the URL its first line announces.
fn start(args: &[&str]) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fibra"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fibra");
    let stdout = child.stdout.take().unwrap();
    let child = Running(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = &line[line.find("http://").expect(&line) + 7..];
    (child, url.trim().trim_end_matches('/').to_owned())
}

/// One request on a new connection (closed after it); the whole response.
fn request(addr: &str, head: &str, body: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out
}

fn split(resp: &[u8]) -> (String, &[u8]) {
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    (
        String::from_utf8_lossy(&resp[..end]).into_owned(),
        &resp[end..],
    )
}

#[test]
fn serve_proxies_a_prefix_and_serves_files_elsewhere() {
    let dir = std::env::temp_dir().join(format!("fibra-serve-proxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("page.html"), "a file").unwrap();
    let (hello, up) = start(&["hello", "--port", "0", "--workers", "1"]);
    let route = format!("/api/=http://{up}/");
    let (_serve, front) = start(&[
        "serve",
        dir.to_str().unwrap(),
        "--port",
        "0",
        "--workers",
        "1",
        "--proxy",
        &route,
    ]);

    let resp = request(
        &front,
        "GET /api/plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    );
    let (head, body) = split(&resp);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(body, b"Hello, World!");

    let data: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let post = format!(
        "POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        data.len()
    );
    let resp = request(&front, &post, &data);
    let (head, body) = split(&resp);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        body == data,
        "the 1 MiB echo differs ({} bytes back)",
        body.len()
    );

    let resp = request(
        &front,
        "GET /page.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    );
    assert_eq!(split(&resp).1, b"a file");

    drop(hello);
    let resp = request(
        &front,
        "GET /api/plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    );
    let (head, _) = split(&resp);
    assert!(head.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{head}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_proxy_flag_is_a_clear_error() {
    for (flag, says) in [
        ("/api/", "PREFIX=URL"),
        ("api/=http://127.0.0.1:9/", "must start with /"),
        ("/api/=ftp://127.0.0.1:9/", "expected http[s]://"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_fibra"))
            .args(["serve", "--port", "0", "--proxy", flag])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{flag}: {err}");
    }
}

#[test]
fn serve_proxies_to_an_https_upstream_verified_with_proxy_ca() {
    let certs = tls_util::Certs::new("serve-proxy-tls");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let mut hello = tls_util::hello(&["--tls-cert", &cert, "--tls-key", &key])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = hello.stdout.take().unwrap();
    let _hello = Running(hello);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let upstream = tls_util::https_addr(&line);
    let port = upstream.rsplit(':').next().unwrap();
    let route = format!("/s/=https://localhost:{port}/");
    let (_serve, front) = start(&[
        "serve",
        &certs.path(""),
        "--port",
        "0",
        "--workers",
        "1",
        "--proxy",
        &route,
        "--proxy-ca",
        &cert,
    ]);
    let resp = request(
        &front,
        "GET /s/plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    );
    let (head, body) = split(&resp);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(body, b"Hello, World!");

    let out = Command::new(env!("CARGO_BIN_EXE_fibra"))
        .args(["serve", "--port", "0", "--proxy", &route, "--proxy-ca"])
        .arg(certs.path("missing.pem"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.pem"), "{err}");
}
