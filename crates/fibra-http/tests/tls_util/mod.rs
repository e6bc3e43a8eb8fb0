//! Shared by the TLS test files: a temporary self-signed certificate for `localhost`, a
//! client configuration trusting it, and a client socket with generous timeouts.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fibra_http::tls::ALPN_HTTP1;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// Generous client-side bound so a broken server fails a test instead of hanging it.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A temporary directory with a fresh self-signed certificate (`cert.pem`, `key.pem`) for
/// `localhost`, removed when dropped.
pub struct Certs {
    pub dir: PathBuf,
    pub cert_der: CertificateDer<'static>,
}

impl Certs {
    /// `name` keeps the directories of concurrent tests apart.
    pub fn new(name: &str) -> Certs {
        let dir = std::env::temp_dir().join(format!("fibra-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(dir.join("cert.pem"), ck.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), ck.signing_key.serialize_pem()).unwrap();
        Certs {
            dir,
            cert_der: ck.cert.der().clone(),
        }
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }

    /// A client configuration over `provider` trusting this certificate, offering
    /// `versions` and ALPN `http/1.1`.
    pub fn client_config_with(
        &self,
        provider: CryptoProvider,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(self.cert_der.clone()).unwrap();
        let mut config = ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        Arc::new(config)
    }

    /// The default client: aws-lc-rs, TLS 1.3 and 1.2.
    pub fn client_config(&self) -> Arc<ClientConfig> {
        self.client_config_with(
            rustls::crypto::aws_lc_rs::default_provider(),
            rustls::DEFAULT_VERSIONS,
        )
    }

    /// A TLS client of `addr` (the default configuration, SNI `localhost`) offering the ALPN
    /// protocols `alpn`; the handshake happens on first use.
    pub fn client_offering(
        &self,
        addr: SocketAddr,
        alpn: &[&[u8]],
    ) -> StreamOwned<ClientConnection, TcpStream> {
        let mut config = (*self.client_config()).clone();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let name = ServerName::try_from("localhost").unwrap();
        let conn = ClientConnection::new(Arc::new(config), name).unwrap();
        StreamOwned::new(conn, tcp(addr))
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A blocking client socket to `addr` with [`CLIENT_TIMEOUT`] on reads and writes.
pub fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}
