//! `--error-log FILE`: the servers' `log` records go to FILE, each naming the address or path
//! involved — TLS failures with the client's address, failed accepts (EMFILE) with the
//! listening address — and an error log that cannot be opened is refused at start, naming
//! the file.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::Stdio;

mod serve_util;
mod tls_util;

use serve_util::{connect, start};
use tls_util::Certs;

#[test]
fn tls_failures_reach_the_error_log_with_the_client_address() {
    let certs = Certs::new("error-log");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let log = certs.path("error.log");
    let mut s = start(&[
        "hello",
        "-p",
        "0",
        "--workers",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--error-log",
        &log,
    ]);
    let addr = s.addr.clone();
    // A broken ClientHello, then plain HTTP on the TLS port.
    let mut bad = connect(&addr);
    let bad_peer = bad.local_addr().unwrap();
    bad.write_all(b"\x16\x03\x01\x00\x05hello").unwrap();
    let _ = bad.read_to_end(&mut Vec::new());
    let mut plain = connect(&addr);
    let plain_peer = plain.local_addr().unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    let _ = plain.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    s.signal(libc::SIGTERM);
    assert!(s.wait_exit().success());

    let text = std::fs::read_to_string(&log).expect("the error log exists");
    let line_of = |peer: std::net::SocketAddr| {
        text.lines()
            .find(|l| l.contains(&peer.to_string()))
            .unwrap_or_else(|| panic!("nothing about {peer} in:\n{text}"))
            .to_string()
    };
    let l = line_of(bad_peer);
    assert!(l.contains("TLS failed"), "{l}");
    assert!(l.starts_with("20") && l.contains("Z info "), "{l}");
    assert!(line_of(plain_peer).contains("plain HTTP on the TLS port"));
}

#[test]
fn an_error_log_that_cannot_be_opened_is_named() {
    let certs = Certs::new("error-log-bad");
    let log = certs.path("missing-dir/error.log");
    let out = serve_util::fibra(&["hello", "-p", "0", "--error-log", &log])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&log), "{err}");
}

#[test]
fn accept_failures_name_the_listening_address() {
    let certs = Certs::new("error-log-emfile");
    let log = certs.path("error.log");
    let mut cmd = serve_util::fibra(&["hello", "-p", "0", "--workers", "1", "--error-log", &log]);
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits. Soft
    // and hard at 64, so the server's raise to the hard limit changes nothing.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    // Far more connections than the server has descriptors for; they stay open while the
    // log is read, bounded by a generous deadline.
    let held: Vec<_> = (0..150)
        .filter_map(|_| std::net::TcpStream::connect(&addr).ok())
        .collect();
    let deadline = std::time::Instant::now() + serve_util::PATIENCE;
    let want = format!("accept on {addr} failed");
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains(&want) || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(held);
    let _ = child.kill();
    let _ = child.wait();
    let l = text
        .lines()
        .find(|l| l.contains(&want))
        .unwrap_or_else(|| panic!("no {want:?} in:\n{text}"));
    assert!(
        l.contains("warn") && l.to_lowercase().contains("too many open files"),
        "{l}"
    );
}
