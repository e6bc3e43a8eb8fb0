//! Sites over TLS on one address: SNI picks the site's certificate; a `Host` naming another
//! site than SNI chose gets 421; an unknown name without a default site fails the handshake
//! with `unrecognized_name`; `http2 = false` leaves `h2` out of ALPN; several certificates
//! per site; a certificate that does not match its key is refused with the site's position.

mod site_util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::Server;
use fibra_site::config::Listen;
use fibra_site::{choose_tls, Live, SiteService};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use site_util::{spare_port, Dir};

struct Cert {
    der: CertificateDer<'static>,
}

fn cert(dir: &Dir, name: &str, names: &[&str]) -> Cert {
    let ck =
        rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    dir.write(&format!("{name}.pem"), ck.cert.pem());
    dir.write(&format!("{name}.key"), ck.signing_key.serialize_pem());
    Cert {
        der: ck.cert.der().clone(),
    }
}

fn client(certs: &[&Cert], alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for c in certs {
        roots.add(c.der.clone()).unwrap();
    }
    let mut config = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

fn serve_tls(dir: &Dir, text: &str) -> (Arc<Live>, fibra_http::ServerHandle, SocketAddr) {
    let addr = format!("127.0.0.1:{}", spare_port());
    let file = dir.write("site.toml", text.replace("LISTEN", &addr));
    let live =
        Live::new(fibra_site::config::load(&file).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let slot = live.slot(&Listen::Tcp(addr.clone()));
    let server = Server::bind(addr.as_str())
        .workers(1)
        .tls_choosing(choose_tls(live.clone(), slot))
        .serve(SiteService::new(live.clone(), vec![slot]))
        .unwrap();
    let at = server.local_addr();
    (live, server, at)
}

/// `GET /` over TLS with SNI `sni` and `Host: host`: the response, or the TLS error; and
/// the ALPN agreed.
fn get(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    sni: &str,
    host: &str,
) -> Result<(String, Option<Vec<u8>>), rustls::Error> {
    let conn =
        ClientConnection::new(config, ServerName::try_from(sni.to_owned()).unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    let req = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let mut out = Vec::new();
    let r = tls
        .write_all(req.as_bytes())
        .and_then(|()| tls.read_to_end(&mut out));
    if let Err(e) = r {
        if let Some(t) = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
            return Err(t.clone());
        }
        panic!("{e}");
    }
    Ok((
        String::from_utf8_lossy(&out).into_owned(),
        tls.conn.alpn_protocol().map(<[u8]>::to_vec),
    ))
}

const TWO_SITES: &str = r#"
[[site]]
hosts = ["a.test"]
listen = ["LISTEN"]
tls = { cert = "a.pem", key = "a.key" }
[[site.route]]
path = "/"
respond = { body = "a\n" }

[[site]]
hosts = ["b.test"]
listen = ["LISTEN"]
http2 = false
tls = [{ cert = "b.pem", key = "b.key" }, { cert = "b2.pem", key = "b2.key" }]
[[site.route]]
path = "/"
respond = { body = "b\n" }
"#;

#[test]
fn sni_chooses_the_site_and_its_certificate() {
    let dir = Dir::new("tls-sni");
    let a = cert(&dir, "a", &["a.test"]);
    let b = cert(&dir, "b", &["b.test"]);
    let b2 = cert(&dir, "b2", &["www.b.test"]);
    let (_live, server, addr) = serve_tls(
        &dir,
        &TWO_SITES.replace(
            "hosts = [\"b.test\"]",
            "hosts = [\"b.test\", \"www.b.test\"]",
        ),
    );
    let h2_and_1 = [b"h2".as_slice(), b"http/1.1".as_slice()];
    // Each client trusts one certificate: the handshake succeeds only with the right one.
    let (resp, alpn) = get(addr, client(&[&a], &h2_and_1[1..]), "a.test", "a.test").unwrap();
    assert!(
        resp.starts_with("HTTP/1.1 200") && resp.ends_with("a\n"),
        "{resp}"
    );
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    let (resp, _) = get(addr, client(&[&b], &h2_and_1[1..]), "b.test", "b.test").unwrap();
    assert!(resp.ends_with("b\n"), "{resp}");
    // The site's second certificate, for its second name.
    let (resp, _) = get(
        addr,
        client(&[&b2], &h2_and_1[1..]),
        "www.b.test",
        "www.b.test",
    )
    .unwrap();
    assert!(resp.ends_with("b\n"), "{resp}");
    // A Host naming another site than SNI chose: 421.
    let (resp, _) = get(addr, client(&[&a], &h2_and_1[1..]), "a.test", "b.test").unwrap();
    assert!(resp.starts_with("HTTP/1.1 421"), "{resp}");
    // No site for the name, no default: unrecognized_name.
    let err = get(addr, client(&[&a], &h2_and_1[1..]), "c.test", "c.test").unwrap_err();
    assert_eq!(
        err,
        rustls::Error::AlertReceived(rustls::AlertDescription::UnrecognisedName)
    );
    // b has http2 = false: its ALPN is http/1.1 even when h2 is offered first; a offers h2.
    let config_b = client(&[&b], &h2_and_1);
    let conn = ClientConnection::new(config_b, ServerName::try_from("b.test").unwrap()).unwrap();
    let mut tls = StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    tls.write_all(b"GET / HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    tls.read_to_string(&mut out).unwrap();
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let conn = ClientConnection::new(
        client(&[&a], &h2_and_1),
        ServerName::try_from("a.test").unwrap(),
    )
    .unwrap();
    let mut tls = StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    let _ = tls.read(&mut [0; 64]);
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn the_default_site_answers_unknown_names() {
    let dir = Dir::new("tls-default");
    let a = cert(&dir, "a", &["a.test"]);
    cert(&dir, "b", &["b.test"]);
    cert(&dir, "b2", &["www.b.test"]);
    let text = TWO_SITES.replacen("tls = { cert", "default = true\ntls = { cert", 1);
    let (_live, server, addr) = serve_tls(&dir, &text);
    // A Host no site has goes to the default site; SNI chose that site too (the client
    // checks the certificate's name, so it asks for a.test): no 421.
    let (resp, _) = get(addr, client(&[&a], &[b"http/1.1"]), "a.test", "c.test").unwrap();
    assert!(
        resp.starts_with("HTTP/1.1 200") && resp.ends_with("a\n"),
        "{resp}"
    );
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn a_certificate_that_does_not_match_its_key_is_refused_with_its_position() {
    let dir = Dir::new("tls-mismatch");
    cert(&dir, "a", &["a.test"]);
    cert(&dir, "b", &["b.test"]);
    let file = dir.write(
        "site.toml",
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\ntls = { cert = \"a.pem\", key = \"b.key\" }\n",
    );
    let config = fibra_site::config::load(&file).unwrap();
    let err = fibra_site::check_files(&config).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:4:7: site[0].tls: ", file.display())),
        "{err}"
    );
    assert!(err.contains("a.pem") && err.contains("b.key"), "{err}");
    assert!(
        err.contains("the private key is not the certificate's"),
        "{err}"
    );
    let err2 = Live::new(config).err().unwrap().to_string();
    assert_eq!(err, err2, "starting fails with the same message");
}
