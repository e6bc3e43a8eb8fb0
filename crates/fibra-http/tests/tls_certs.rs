//! Certificates of a TLS server: several chosen by SNI (`CertResolver`), with a default for a
//! client without SNI or asking for an unknown name; replacing them while a connection stays
//! open; session resumption (tickets over TLS 1.3 and 1.2, the session cache over TLS 1.2).
//!
//! The client is rustls's `ClientConnection` over a blocking std `TcpStream`. It accepts any
//! certificate (the test checks which one it got: the DER of the peer's leaf is that of the
//! rcgen certificate made for the expected names).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fibra_http::tls::{server_config_with_resolver, CertResolver, ALPN_HTTP1};
use fibra_http::{Request, Response, Server, ServerHandle};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

/// Generous client-side bound so a broken server fails a test instead of hanging it.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A temporary directory of self-signed certificates, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("fibra-certs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    /// Writes `{file}.pem` and `{file}.key` for a fresh certificate covering `names`; returns
    /// the two paths and the certificate's DER.
    fn cert(&self, file: &str, names: &[&str]) -> (PathBuf, PathBuf, CertificateDer<'static>) {
        let names = names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let ck = rcgen::generate_simple_self_signed(names).unwrap();
        let (cert, key) = (
            self.0.join(format!("{file}.pem")),
            self.0.join(format!("{file}.key")),
        );
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
        (cert, key, ck.cert.der().clone())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Accepts any server certificate; signatures are still checked.
#[derive(Debug)]
struct AnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A client configuration accepting any certificate, without session resumption (a resumed
/// session reports the certificate of the first one); `sni`: whether it sends the name.
fn client_config(sni: bool) -> Arc<ClientConfig> {
    let mut config = Arc::unwrap_or_clone(resuming_client_config());
    config.resumption = rustls::client::Resumption::disabled();
    config.enable_sni = sni;
    Arc::new(config)
}

/// A client configuration accepting any certificate, resuming sessions (rustls's default).
fn resuming_client_config() -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Arc::new(config)
}

fn server(resolver: Arc<CertResolver>) -> ServerHandle {
    let config = server_config_with_resolver(resolver).expect("server config");
    Server::bind("127.0.0.1:0")
        .workers(2)
        .tls(config)
        .serve(|req: Request| Response::new(req.uri().path().to_string().into()))
        .expect("server starts")
}

/// A TLS connection to `addr` for `name`, handshake done.
fn connect(config: &Arc<ClientConfig>, addr: SocketAddr, name: &str) -> Tls {
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    tcp.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    let conn = ClientConnection::new(config.clone(), name).unwrap();
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).expect("handshake");
    }
    s
}

/// The DER of the server's leaf certificate.
fn peer_cert(s: &Tls) -> CertificateDer<'static> {
    s.conn.peer_certificates().expect("a certificate")[0].clone()
}

/// `GET path` on a keep-alive connection: the body.
fn get(s: &mut Tls, path: &str) -> String {
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    s.flush().unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).expect("response head");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .expect("content-length");
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

#[test]
fn the_certificate_follows_sni_with_the_first_as_default() {
    let dir = Dir::new("sni");
    let (a_cert, a_key, a_der) = dir.cert("a", &["a.test"]);
    let (b_cert, b_key, b_der) = dir.cert("b", &["b.test", "*.b.test"]);
    let resolver = CertResolver::from_pem(&[(&a_cert, &a_key), (&b_cert, &b_key)]).unwrap();
    let h = server(resolver);
    let addr = h.local_addr();
    let sni = client_config(true);

    for (name, want) in [
        ("a.test", &a_der),
        ("b.test", &b_der),
        ("www.b.test", &b_der),   // the wildcard
        ("x.www.b.test", &a_der), // a wildcard covers one label only
        ("unknown.test", &a_der), // the default
    ] {
        let mut s = connect(&sni, addr, name);
        assert_eq!(&peer_cert(&s), want, "{name}");
        assert_eq!(get(&mut s, "/ok"), "/ok");
    }
    // No SNI at all: the default.
    let mut s = connect(&client_config(false), addr, "b.test");
    assert_eq!(peer_cert(&s), a_der);
    assert_eq!(get(&mut s, "/ok"), "/ok");

    h.shutdown(Duration::from_secs(5));
}

#[test]
fn reload_swaps_certificates_for_new_connections_and_keeps_open_ones() {
    let dir = Dir::new("reload");
    let (cert, key, old_der) = dir.cert("site", &["site.test"]);
    let resolver = CertResolver::from_pem(&[(&cert, &key)]).unwrap();
    let h = server(resolver.clone());
    let addr = h.local_addr();
    let config = client_config(true);

    let mut open = connect(&config, addr, "site.test");
    assert_eq!(peer_cert(&open), old_der);
    assert_eq!(get(&mut open, "/before"), "/before");

    // A failed reload (a missing key) names the file and keeps the old certificate.
    let missing = dir.0.join("missing.key");
    let err = resolver.reload(&[(&cert, &missing)]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains("missing.key"), "{err}");
    assert_eq!(peer_cert(&connect(&config, addr, "site.test")), old_der);

    // Renewed files, same paths.
    let (_, _, new_der) = dir.cert("site", &["site.test"]);
    assert_ne!(new_der, old_der);
    resolver.reload(&[(&cert, &key)]).unwrap();
    let mut fresh = connect(&config, addr, "site.test");
    assert_eq!(peer_cert(&fresh), new_der);
    assert_eq!(get(&mut fresh, "/new"), "/new");

    // The connection opened before the swap goes on with its session.
    assert_eq!(get(&mut open, "/after"), "/after");
    assert_eq!(peer_cert(&open), old_der);

    assert!(CertResolver::new(Vec::new()).is_err());
    assert!(resolver.replace(Vec::new()).is_err());
    h.shutdown(Duration::from_secs(5));
}

/// Two connections with one client configuration: the second resumes the first's session.
fn second_handshake_resumes(config: Arc<ClientConfig>, version: rustls::ProtocolVersion) {
    let dir = Dir::new(&format!("resume-{version:?}"));
    let (cert, key, _) = dir.cert("site", &["site.test"]);
    let h = server(CertResolver::from_pem(&[(&cert, &key)]).unwrap());
    let addr = h.local_addr();

    let mut first = connect(&config, addr, "site.test");
    // A request and its response: a TLS 1.3 client takes its tickets in with the response.
    assert_eq!(get(&mut first, "/first"), "/first");
    assert_eq!(first.conn.protocol_version(), Some(version));
    assert_eq!(
        first.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Full)
    );

    let mut second = connect(&config, addr, "site.test");
    assert_eq!(get(&mut second, "/second"), "/second");
    assert_eq!(second.conn.protocol_version(), Some(version));
    assert_eq!(
        second.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );
    h.shutdown(Duration::from_secs(5));
}

#[test]
fn sessions_resume_over_tls13() {
    second_handshake_resumes(resuming_client_config(), rustls::ProtocolVersion::TLSv1_3);
}

#[test]
fn sessions_resume_over_tls12() {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    second_handshake_resumes(Arc::new(config), rustls::ProtocolVersion::TLSv1_2);
}

#[test]
fn tls12_sessions_resume_from_the_cache_without_tickets() {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    // Session IDs only: the server's stateful cache.
    config.resumption = rustls::client::Resumption::default()
        .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOnly);
    second_handshake_resumes(Arc::new(config), rustls::ProtocolVersion::TLSv1_2);
}
