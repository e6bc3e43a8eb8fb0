//! Interop with real clients: curl and Python's `http.client` (skipped, loudly, if absent).

mod util;

use std::process::Command;

use fibra_http::{Response, Settings};
use util::*;

fn echo(mut req: fibra_http::Request) -> Response {
    let body = req.body_mut().read_to_vec(1 << 20).unwrap_or_default();
    let mut r = Response::new(body.into());
    r.headers_mut()
        .insert("x-path", req.uri().path().parse().unwrap());
    r
}

fn have(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn curl_get_post_and_chunked_upload() {
    if !have("curl") {
        eprintln!("SKIPPED: curl not installed");
        return;
    }
    let srv = start(Settings::default(), echo);
    let url = format!("http://{}/p", srv.addr);
    // Two URLs in one curl run reuse the connection (keep-alive).
    let out = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-d",
            "hello",
            &url,
            "-H",
            "Transfer-Encoding: chunked",
            "-d",
            "world",
            &url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello&worldhello&world"
    );
    let out = Command::new("curl")
        .args(["-sS", "-I", "--max-time", "20", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("X-Path: /p\r\n"), "{text}");
}

#[test]
fn python_http_client_keep_alive() {
    if !have("python3") {
        eprintln!("SKIPPED: python3 not installed");
        return;
    }
    let srv = start(Settings::default(), echo);
    let script = format!(
        r#"
import http.client
c = http.client.HTTPConnection("127.0.0.1", {port}, timeout=20)
out = []
for i in range(3):
    c.request("POST", "/n%d" % i, body=b"x" * i)
    r = c.getresponse()
    out.append("%d %s %s" % (r.status, r.getheader("x-path"), r.read().decode()))
c.request("GET", "/chunked", body=iter([b"ab", b"cd"]), encode_chunked=True, headers={{"Transfer-Encoding": "chunked"}})
r = c.getresponse()
out.append("%d %s" % (r.status, r.read().decode()))
print(";".join(out))
"#,
        port = srv.addr.port()
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "200 /n0 ;200 /n1 x;200 /n2 xx;200 abcd"
    );
}
