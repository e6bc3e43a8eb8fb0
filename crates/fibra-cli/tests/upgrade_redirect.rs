//! Binary upgrade on SIGUSR2 with `--redirect-http`: the redirect listener is handed over
//! with the TLS one (named apart in `LISTEN_FDNAMES`), so the new process serves both ports
//! (before, it could not bind the redirect port the old one held, and the upgrade failed).
//! Twice in a row; the same ports answer throughout, and each old process exits.

mod ops_util;
mod tls_util;

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use ops_util::{alive, fibra, read_pid, start, wait_for};
use rustls::pki_types::{CertificateDer, ServerName};

const LONG: Duration = Duration::from_secs(30);

/// `GET /plaintext` on the redirect port: the 301's `Location`.
fn redirected(plain: &str) -> String {
    let mut s = TcpStream::connect(plain).unwrap();
    s.set_read_timeout(Some(LONG)).unwrap();
    s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 301 "), "{reply}");
    reply
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("location: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no location in {reply}"))
}

/// `GET /plaintext` over TLS: the body.
fn https_get(tls: &str, cert: &CertificateDer<'static>) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
            .unwrap();
    let tcp = TcpStream::connect(tls).unwrap();
    tcp.set_read_timeout(Some(LONG)).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    reply.split_once("\r\n\r\n").unwrap().1.to_owned()
}

#[test]
fn sigusr2_hands_the_redirect_listener_over_too() {
    let certs = tls_util::Certs::new("upgrade-redirect");
    let (cert, key, der) = (
        certs.path("cert.pem"),
        certs.path("key.pem"),
        certs.der.clone(),
    );
    let pid_file = certs.dir.join("fibra.pid");
    let mut first = start(fibra(&[
        "hello",
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--redirect-http",
        "0",
        "--pid-file",
        pid_file.to_str().unwrap(),
    ]));
    // "... https://ADDR/" then "... redirecting http://ADDR/ to https".
    let word = |line: String, scheme: &str| {
        line.split(' ')
            .find_map(|w| w.strip_prefix(scheme))
            .unwrap_or_else(|| panic!("fibra hello printed {line:?}"))
            .trim()
            .trim_end_matches('/')
            .to_string()
    };
    let tls = word(first.line(), "https://");
    let plain = word(first.line(), "http://");
    let tls_port = tls.rsplit(':').next().unwrap().to_owned();
    let location = format!("https://localhost:{tls_port}/plaintext");
    assert_eq!(redirected(&plain), location);
    assert_eq!(https_get(&tls, &der), "Hello, World!");

    let mut old = wait_for(|| read_pid(&pid_file)).expect("pid file");
    for round in 0..2 {
        // SAFETY: sends a signal to a process this test started (or the one it started).
        assert_eq!(unsafe { libc::kill(old as libc::pid_t, libc::SIGUSR2) }, 0);
        let new = wait_for(|| read_pid(&pid_file).filter(|&p| p != old))
            .unwrap_or_else(|| panic!("round {round}: no new process wrote its pid"));
        assert!(
            wait_for(|| (!alive(old)).then_some(())).is_some(),
            "round {round}: old process {old} still alive"
        );
        if round == 0 {
            let status = first.child.wait().unwrap();
            assert!(status.success(), "old process: {status}");
        }
        // The new process serves both ports.
        for _ in 0..5 {
            assert_eq!(redirected(&plain), location, "round {round}");
            assert_eq!(https_get(&tls, &der), "Hello, World!", "round {round}");
        }
        old = new;
    }
    // SAFETY: stops the process the last upgrade started.
    unsafe { libc::kill(old as libc::pid_t, libc::SIGTERM) };
    assert!(wait_for(|| (!alive(old)).then_some(())).is_some());
    let _ = first.stdout.read_line(&mut String::new());
}
