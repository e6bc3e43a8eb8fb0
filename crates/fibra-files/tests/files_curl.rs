//! `FileServer` interop with the real `curl` binary: resumed downloads (`curl -C -`),
//! conditional GETs (`curl -z`) and gzip siblings (`curl --compressed`). Skipped (with a note)
//! when `curl` is not installed.

mod files_util;

use std::fs;
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, SystemTime};

use fibra_files::{FileServer, FileServerConfig};
use files_util::TempTree;

fn have(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs curl with `args` + the URL, returns (http_code, stdout minus the code line).
fn curl(addr: SocketAddr, path: &str, args: &[&str]) -> (u16, Vec<u8>) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "60", "-w", "\n%{http_code}"])
        .args(args)
        .arg(format!("http://{addr}{path}"))
        .output()
        .expect("run curl");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut stdout = out.stdout;
    let nl = stdout.iter().rposition(|&b| b == b'\n').expect("code line");
    let code = std::str::from_utf8(&stdout[nl + 1..])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    stdout.truncate(nl);
    (code, stdout)
}

fn server(t: &TempTree) -> files_util::Running {
    let mut c = FileServerConfig::new(&t.root);
    c.cache_ttl = Duration::from_secs(3600);
    files_util::serve(FileServer::new(c).unwrap())
}

#[test]
fn curl_resumes_a_partial_download() {
    if !have("curl") {
        eprintln!("curl not installed: skipping");
        return;
    }
    let t = TempTree::new("curl-resume");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
    t.write("movie.bin", &data);
    let srv = server(&t);
    let out = t.base_path().join("partial.bin");
    fs::write(&out, &data[..123_457]).unwrap();
    let (code, _) = curl(
        srv.addr(),
        "/movie.bin",
        &["-C", "-", "-o", out.to_str().unwrap()],
    );
    assert_eq!(code, 206);
    assert!(fs::read(&out).unwrap() == data, "resumed file differs");
}

#[test]
fn curl_conditional_get() {
    if !have("curl") {
        eprintln!("curl not installed: skipping");
        return;
    }
    let t = TempTree::new("curl-cond");
    t.write("page.html", "<p>page</p>");
    let srv = server(&t);
    let (code, body) = curl(
        srv.addr(),
        "/page.html",
        &["-z", "Sat, 01 Jan 2000 00:00:00 GMT"],
    );
    assert_eq!((code, body.as_slice()), (200, &b"<p>page</p>"[..]));
    // A local copy newer than the server's file: curl sends If-Modified-Since, gets 304.
    let local = t.base_path().join("local.html");
    fs::write(&local, "old copy").unwrap();
    let f = fs::File::options().write(true).open(&local).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(86_400))
        .unwrap();
    drop(f);
    let (code, body) = curl(srv.addr(), "/page.html", &["-z", local.to_str().unwrap()]);
    assert_eq!((code, body.len()), (304, 0));
    // `-z -DATE` is If-Unmodified-Since: the file changed after 2000, so 412.
    let (code, _) = curl(
        srv.addr(),
        "/page.html",
        &["-z", "-Sat, 01 Jan 2000 00:00:00 GMT"],
    );
    assert_eq!(code, 412);
}

#[test]
fn curl_decodes_gzip_sibling() {
    if !have("curl") || !have("gzip") {
        eprintln!("curl or gzip not installed: skipping");
        return;
    }
    let t = TempTree::new("curl-gzip");
    let text = "function f() { return 42; }\n".repeat(200);
    let js = t.write("app.js", &text);
    let st = Command::new("gzip")
        .arg("-k")
        .arg("-9")
        .arg(&js)
        .status()
        .unwrap();
    assert!(st.success());
    let srv = server(&t);
    let (code, body) = curl(
        srv.addr(),
        "/app.js",
        &["--compressed", "-H", "Accept-Encoding: gzip"],
    );
    assert_eq!((code, body.as_slice()), (200, text.as_bytes()));
    let (_, headers) = curl(
        srv.addr(),
        "/app.js",
        &["-o", "/dev/null", "-D", "-", "-H", "Accept-Encoding: gzip"],
    );
    let headers = String::from_utf8(headers).unwrap().to_ascii_lowercase();
    assert!(headers.contains("content-encoding: gzip"), "{headers}");
    assert!(headers.contains("vary: accept-encoding"), "{headers}");
}
