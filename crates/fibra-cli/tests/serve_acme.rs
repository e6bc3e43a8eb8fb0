//! Automatic HTTPS through the site file, end to end against Pebble (Let's Encrypt's test
//! ACME server; `.ci/install-pebble` installs it, else these tests print SKIPPED): a
//! `tls = "acme"` site gets a certificate chaining to Pebble's root over tls-alpn-01 and over
//! http-01 (on the site's `redirect_http` address), serves it again after a restart with the
//! CA gone, and a site whose directory cannot be reached serves a self-signed certificate and
//! says so.

#[path = "../../fibra-acme/tests/pebble_util/mod.rs"]
mod pebble_util;
mod serve_util;

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use pebble_util::{spare_port, wait_for, Pebble};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serve_util::{start, Site};

/// The leaf a TLS handshake with `127.0.0.1:port` for `name` shows, verified against `root`
/// (`None`: not verified, any certificate).
fn leaf(
    port: u16,
    name: &str,
    root: Option<&CertificateDer<'static>>,
) -> Option<CertificateDer<'static>> {
    let config = match root {
        Some(root) => {
            let mut store = RootCertStore::empty();
            store.add(root.clone()).ok()?;
            ClientConfig::builder()
                .with_root_certificates(store)
                .with_no_client_auth()
        }
        None => ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(pebble_util::AcceptAny))
            .with_no_client_auth(),
    };
    let tcp = TcpStream::connect(("127.0.0.1", port)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let conn = ClientConnection::new(
        Arc::new(config),
        ServerName::try_from(name.to_owned()).ok()?,
    )
    .ok()?;
    let mut tls = StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).ok()?;
    }
    tls.conn.peer_certificates().map(|c| c[0].clone())
}

fn site_file(
    site: &Site,
    directory: &str,
    ca: &str,
    challenge: &str,
    tls: u16,
    http: u16,
) -> String {
    let text = format!(
        "[acme]\ndirectory = \"{directory}\"\ncontact = \"mailto:admin@example.com\"\nstorage = \"acme\"\n\
         ca = \"{ca}\"\nchallenges = [\"{challenge}\"]\n\n\
         [[site]]\nhosts = [\"a.test\", \"www.a.test\"]\nlisten = [\"127.0.0.1:{tls}\"]\ntls = \"acme\"\n\
         redirect_http = [\"127.0.0.1:{http}\"]\n[[site.route]]\npath = \"/\"\nrespond = {{ body = \"acme site\\n\" }}\n"
    );
    let file = site.path().join("site.toml");
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_owned()
}

fn issue_then_reuse(test: &str, challenge: &str) {
    let mut pebble = match Pebble::new(test) {
        Ok(p) => p,
        Err(why) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let (tls, http) = (spare_port(), spare_port());
    pebble.start(http, tls, &[]);
    let root = pebble.root();
    let site = Site::new(test);
    let file = site_file(
        &site,
        &pebble.directory(),
        pebble.ca.to_str().unwrap(),
        challenge,
        tls,
        http,
    );
    let server = start(&["serve", "--config", &file]);
    // Self-signed first, then Pebble's certificate, for both names.
    let issued = wait_for("the ACME certificate", || leaf(tls, "a.test", Some(&root)));
    assert!(leaf(tls, "www.a.test", Some(&root)).is_some());
    drop(server);
    // Restarted with the CA gone: the stored certificate, at once.
    pebble.kill();
    let _again = start(&["serve", "--config", &file]);
    assert_eq!(leaf(tls, "a.test", Some(&root)), Some(issued));
}

#[test]
fn a_site_gets_and_keeps_its_certificate_over_tls_alpn_01() {
    issue_then_reuse("serve-acme-alpn", "tls-alpn-01");
}

#[test]
fn a_site_gets_its_certificate_over_http_01() {
    issue_then_reuse("serve-acme-http", "http-01");
}

#[test]
fn an_unreachable_directory_leaves_a_self_signed_certificate_and_says_so() {
    let site = Site::new("serve-acme-down");
    let (tls, http, nothing) = (spare_port(), spare_port(), spare_port());
    let ca = site.path().join("ca.pem");
    std::fs::write(
        &ca,
        rcgen::generate_simple_self_signed(vec!["x".into()])
            .unwrap()
            .cert
            .pem(),
    )
    .unwrap();
    let file = site_file(
        &site,
        &format!("https://127.0.0.1:{nothing}/dir"),
        ca.to_str().unwrap(),
        "tls-alpn-01",
        tls,
        http,
    );
    let mut server = start(&["serve", "--config", &file]);
    let line = server.stderr_line_with("self-signed");
    assert!(line.contains("a.test"), "{line}");
    let cert = leaf(tls, "a.test", None).expect("a certificate is served");
    assert!(!cert.is_empty());
    // Its plain-HTTP address redirects meanwhile (an unknown name there is not its).
    let ask = |host: &str| {
        use std::io::{Read, Write};
        let mut s = serve_util::connect(&format!("127.0.0.1:{http}"));
        write!(
            s,
            "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    assert!(ask("a.test").starts_with("HTTP/1.1 301"));
    assert!(ask("other.test").starts_with("HTTP/1.1 404"));
}
