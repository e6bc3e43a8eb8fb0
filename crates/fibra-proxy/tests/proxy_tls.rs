//! `https://` upstreams: a fibra TLS server whose certificate a test CA signed, behind the
//! proxy. Requests and a 1 MiB body go through, connections are pooled over TLS, and the
//! certificate is verified: another CA, or a name the certificate does not have, is a 502
//! whose error says why. Without a CA file, the system's roots are trusted. A CA file that cannot be used is refused up front, naming it.

mod proxy_tls_util;
mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use fibra_http::tls::server_config_from_pem;
use fibra_http::{Request, Response, Server, ServerHandle, Settings};
use fibra_proxy::Proxy;
use proxy_tls_util::TestPki;
use proxy_util::{front, pattern};
use util::{connect, read_response, status_of};

/// A one-worker TLS upstream: `/echo` answers the body; anything else the path and the
/// client's port (the same port: the same connection).
fn tls_upstream(pki: &TestPki) -> ServerHandle {
    let config = server_config_from_pem(pki.path("cert.pem"), pki.path("key.pem")).unwrap();
    Server::bind("127.0.0.1:0")
        .settings(Settings {
            max_body_bytes: 64 << 20,
            ..Settings::default()
        })
        .workers(1)
        .tls(config)
        .serve(|mut req: Request| match req.uri().path() {
            "/echo" => Response::new(req.body_mut().read_to_vec(64 << 20).unwrap().into()),
            p => Response::new(format!("{p} via {}", req.peer_addr().unwrap().port()).into()),
        })
        .unwrap()
}

fn get(front: std::net::SocketAddr, path: &str) -> (u16, String) {
    let (head, body) = util::get(&mut connect(front), path);
    (status_of(&head), String::from_utf8(body).unwrap())
}

#[test]
fn https_upstream_with_a_ca_file() {
    let pki = TestPki::new("ok");
    let up = tls_upstream(&pki);
    let port = up.local_addr().port();
    let proxy = Proxy::new()
        .upstream_ca(pki.path("ca.pem"))
        .unwrap()
        .route("/s/", &format!("https://localhost:{port}/"))
        .unwrap();
    let front = front(proxy);
    // Keep-alive to the upstream over TLS: one connection (one client port) serves all.
    let mut ports = Vec::new();
    for i in 0..5 {
        let (status, body) = get(front.addr, &format!("/s/item{i}"));
        assert_eq!(status, 200, "{body}");
        let (path, port) = body.split_once(" via ").unwrap();
        assert_eq!(path, format!("/item{i}"));
        ports.push(port.to_owned());
    }
    assert!(ports.iter().all(|p| *p == ports[0]), "pooled: {ports:?}");
    // A 1 MiB body up and back through TLS.
    let data = pattern(1 << 20);
    let mut s = connect(front.addr);
    write!(
        s,
        "POST /s/echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        data.len()
    )
    .unwrap();
    s.write_all(&data).unwrap();
    let (head, body) = read_response(&mut s, false);
    assert_eq!(status_of(&head), 200, "{head}");
    assert!(body == data, "the 1 MiB body came back intact");
    up.shutdown(std::time::Duration::from_secs(1));
}

/// A front whose errors are collected.
fn front_with_errors(proxy: Proxy) -> (util::TestServer, Arc<Mutex<Vec<String>>>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let proxy = proxy.on_error(move |e| seen.lock().unwrap().push(e.to_string()));
    (front(proxy), errors)
}

#[test]
fn the_certificate_is_verified() {
    let pki = TestPki::new("verify");
    let other = TestPki::new("other");
    let up = tls_upstream(&pki);
    let port = up.local_addr().port();
    // Signed by a CA the proxy does not trust.
    let (f, errors) = front_with_errors(
        Proxy::new()
            .upstream_ca(other.path("ca.pem"))
            .unwrap()
            .route("/s/", &format!("https://localhost:{port}/"))
            .unwrap(),
    );
    assert_eq!(get(f.addr, "/s/x").0, 502);
    let e = errors.lock().unwrap().join("\n");
    assert!(
        e.contains("TLS handshake") && e.contains("UnknownIssuer"),
        "{e}"
    );
    // The right CA, but a name the certificate does not have.
    let (f, errors) = front_with_errors(
        Proxy::new()
            .upstream_ca(pki.path("ca.pem"))
            .unwrap()
            .route("/s/", &format!("https://127.0.0.1:{port}/"))
            .unwrap(),
    );
    assert_eq!(get(f.addr, "/s/x").0, 502);
    let e = errors.lock().unwrap().join("\n");
    assert!(
        e.contains("TLS handshake") && e.contains("not valid for name"),
        "{e}"
    );
    up.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn the_system_roots_are_the_default() {
    // rustls-native-certs reads `SSL_CERT_FILE` first, as OpenSSL does: the test CA stands
    // in for the system's bundle (no other test in this file uses the system's roots).
    let pki = TestPki::new("system");
    let up = tls_upstream(&pki);
    let port = up.local_addr().port();
    std::env::set_var("SSL_CERT_FILE", pki.path("ca.pem"));
    let proxy = Proxy::new().route("/s/", &format!("https://localhost:{port}/"));
    std::env::remove_var("SSL_CERT_FILE");
    let f = front(proxy.unwrap());
    let (status, body) = get(f.addr, "/s/sys");
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("/sys via "), "{body}");
    up.shutdown(std::time::Duration::from_secs(1));
}

#[test]
fn unusable_ca_files_are_refused_naming_them() {
    let pki = TestPki::new("files");
    let missing = pki.path("missing.pem");
    let e = Proxy::new().upstream_ca(&missing).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(e.to_string().contains(missing.to_str().unwrap()), "{e}");
    // A key is no certificate.
    let e = Proxy::new().upstream_ca(pki.path("key.pem")).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("key.pem") && e.to_string().contains("no certificate"),
        "{e}"
    );
    let garbage: &Path = &pki.path("garbage.pem");
    std::fs::write(
        garbage,
        "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = Proxy::new().upstream_ca(garbage).unwrap_err();
    assert!(e.to_string().contains("garbage.pem"), "{e}");
}
