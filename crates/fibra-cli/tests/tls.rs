//! `fibra hello --tls-cert FILE --tls-key FILE`, the built binary: it announces an https URL
//! and answers over TLS; one of the two flags alone, unpaired flags, or a missing file, is a
//! clear error; SIGHUP reloads the certificate files while connections stay open;
//! `--redirect-http` sends plain HTTP to the TLS port; an expired certificate is warned
//! about on stderr and served anyway.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

mod tls_util;

use tls_util::{connect_trusting, hello, https_addr, Certs, Hello};

#[test]
fn hello_serves_https() {
    let certs = Certs::new("https");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let mut child = hello(&["--tls-cert", &cert, "--tls-key", &key])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fibra hello");
    let stdout = child.stdout.take().expect("piped stdout");
    let child = Hello(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = https_addr(&line);

    let mut tls = connect_trusting(&certs.der, &addr);
    tls.write_all(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    // The end of the stream may come without close_notify: what arrived before counts.
    let _ = tls.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.ends_with("\r\n\r\nHello, World!"), "{reply}");
    drop(child);
}

#[test]
fn tls_flags_go_together_and_name_bad_files() {
    let certs = Certs::new("flags");
    let cert = certs.path("cert.pem");
    let out = hello(&["--tls-cert", &cert]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-key"), "{err}");

    // Pairs: a second --tls-cert without its --tls-key.
    let key = certs.path("key.pem");
    let out = hello(&["--tls-cert", &cert, "--tls-key", &key, "--tls-cert", &cert])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 --tls-cert but 1 --tls-key"), "{err}");

    let missing = certs.path("missing.pem");
    let out = hello(&["--tls-cert", &cert, "--tls-key", &missing])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.pem"), "{err}");
}

/// `GET /plaintext` on a keep-alive connection; the response must be whole.
fn plaintext(tls: &mut StreamOwned<ClientConnection, TcpStream>) {
    tls.write_all(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while !got.ends_with(b"Hello, World!") {
        tls.read_exact(&mut b).expect("response");
        got.push(b[0]);
    }
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
}

#[test]
fn sighup_reloads_the_certificates_and_keeps_connections() {
    let certs = Certs::new("sighup");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let mut child = hello(&["--tls-cert", &cert, "--tls-key", &key])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fibra hello");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let child = Hello(child);
    let pid = child.0.id() as libc::pid_t;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = https_addr(&line);
    let hup = |stderr: &mut BufReader<_>| {
        // SAFETY: sends a signal to our own child, which is still running (not reaped).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        line
    };

    let mut open = connect_trusting(&certs.der, &addr);
    plaintext(&mut open);

    // New files in place, then SIGHUP: new connections get the new certificate.
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let new_der = ck.cert.der().clone();
    let said = hup(&mut stderr);
    assert!(said.contains("reloaded 1 certificate"), "{said}");
    let mut fresh = connect_trusting(&new_der, &addr);
    plaintext(&mut fresh);
    assert_eq!(fresh.conn.peer_certificates().unwrap()[0], new_der);

    // A broken key: a warning naming it, and the certificate loaded last stays.
    std::fs::write(&key, "not a key").unwrap();
    let said = hup(&mut stderr);
    assert!(
        said.contains("warning") && said.contains("key.pem"),
        "{said}"
    );
    plaintext(&mut connect_trusting(&new_der, &addr));

    // The connection opened before both reloads still works.
    plaintext(&mut open);
    drop(child);
}

#[test]
fn redirect_http_sends_plain_requests_to_the_tls_port() {
    let certs = Certs::new("redirect");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let mut child = hello(&[
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--redirect-http",
        "0",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("start fibra hello");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let child = Hello(child);
    // "... https://ADDR/" then "... redirecting http://ADDR/ to https".
    let url = |line: &str, scheme: &str| {
        line.split(' ')
            .find_map(|w| w.strip_prefix(scheme))
            .unwrap_or_else(|| panic!("fibra hello printed {line:?}"))
            .trim_end_matches('/')
            .to_string()
    };
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let tls_addr = url(line.trim(), "https://");
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let plain_addr = url(line.trim(), "http://");
    let tls_port = tls_addr.rsplit(':').next().unwrap();

    let mut tcp = TcpStream::connect(&plain_addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    tcp.write_all(
        b"GET /plaintext?x=1 HTTP/1.1\r\nHost: localhost:80\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = String::new();
    tcp.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 301 "), "{reply}");
    let location = format!("\r\nlocation: https://localhost:{tls_port}/plaintext?x=1\r\n");
    assert!(reply.to_ascii_lowercase().contains(&location), "{reply}");
    drop(child);

    // Without TLS there is nothing to redirect to.
    let out = hello(&["--redirect-http", "0"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-cert"), "{err}");
}

/// A clock stopped at a fixed time, for a client to accept a certificate that has expired now.
#[derive(Debug)]
struct FixedTime(rustls::pki_types::UnixTime);

impl rustls::time_provider::TimeProvider for FixedTime {
    fn current_time(&self) -> Option<rustls::pki_types::UnixTime> {
        Some(self.0)
    }
}

#[test]
fn an_expired_certificate_is_warned_about_and_served() {
    let certs = Certs::new("expired");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 6, 15);
    let signing_key = rcgen::KeyPair::generate().unwrap();
    let expired = params.self_signed(&signing_key).unwrap();
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    std::fs::write(&cert, expired.pem()).unwrap();
    std::fs::write(&key, signing_key.serialize_pem()).unwrap();

    let mut child = hello(&["--tls-cert", &cert, "--tls-key", &key])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fibra hello");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let child = Hello(child);
    let mut warning = String::new();
    BufReader::new(stderr).read_line(&mut warning).unwrap();
    assert!(
        warning.contains("warning")
            && warning.contains(&cert)
            && warning.contains("expired on 2021-06-15"),
        "{warning}"
    );
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = https_addr(&line);

    // A client whose clock says 2021-01-01 verifies the certificate and is served.
    let mut roots = RootCertStore::empty();
    roots.add(expired.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let then = rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(1_609_459_200));
    let config = ClientConfig::builder_with_details(provider, Arc::new(FixedTime(then)))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn = ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
        .unwrap();
    let tcp = TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    plaintext(&mut StreamOwned::new(conn, tcp));
    drop(child);
}
