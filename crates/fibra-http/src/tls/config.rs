//! A [`ServerConfig`] from PEM files (the usual certificate chain and private key) or from a
//! [`CertResolver`].

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ServerSessionMemoryCache;
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;

use super::CertResolver;

/// The ALPN protocol a server built here announces: HTTP/1.1 (the only one `fibra-http`
/// speaks).
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// A server configuration from a PEM certificate chain (leaf first) and a PEM private key
/// (PKCS#8, PKCS#1 or SEC1): [`server_config_with_resolver`] over a [`CertResolver`] holding
/// this one certificate.
///
/// Every error names the file at fault and what is wrong with it (unreadable, not PEM, no
/// certificate or key in it, a key that does not match the certificate).
pub fn server_config_from_pem(
    cert_chain: impl AsRef<Path>,
    key: impl AsRef<Path>,
) -> io::Result<Arc<ServerConfig>> {
    server_config_with_resolver(CertResolver::from_pem(&[(cert_chain, key)])?)
}

/// Sessions the server remembers for stateful resumption (TLS 1.2 session IDs, for clients
/// that do not take tickets): a few hundred bytes each, so about 1 MiB at most; the oldest
/// go first.
pub const SESSION_CACHE_SIZE: usize = 4096;

/// A server configuration whose certificates come from `resolver` (several, by SNI, and
/// replaceable while the server runs): TLS 1.3 and 1.2 only, ALPN `http/1.1`, the
/// `aws-lc-rs` crypto provider, no client authentication.
///
/// Sessions resume, sparing a returning client the key exchange and certificate: by
/// stateless tickets (TLS 1.3, and TLS 1.2 clients that take them), encrypted with keys that
/// rotate every 6 hours (tickets last 12; [`rustls::crypto::aws_lc_rs::Ticketer`]) and live in this
/// configuration (shared by all workers; a new configuration invalidates older tickets), and
/// by a stateful cache of [`SESSION_CACHE_SIZE`] sessions for the other TLS 1.2 clients. A
/// resumed session keeps the certificate of the handshake it resumes, even across a
/// [`CertResolver::reload`].
pub fn server_config_with_resolver(resolver: Arc<CertResolver>) -> io::Result<Arc<ServerConfig>> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    config.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().map_err(io::Error::other)?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_SIZE);
    Ok(Arc::new(config))
}

/// The crypto provider of the configurations built here.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A certificate chain (leaf first) and its private key from PEM files, checked to match: an
/// entry of a [`CertResolver`]. Every error names the file at fault.
pub fn certified_key_from_pem(
    cert_chain: impl AsRef<Path>,
    key: impl AsRef<Path>,
) -> io::Result<Arc<CertifiedKey>> {
    let (cert_path, key_path) = (cert_chain.as_ref(), key.as_ref());
    let certs = load_certs(cert_path)?;
    let key = load_key(key_path)?;
    let certified = CertifiedKey::from_der(certs, key, &provider()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} with {}: {e}", cert_path.display(), key_path.display()),
        )
    })?;
    Ok(Arc::new(certified))
}

/// An error about `path`.
fn bad(path: &Path, kind: io::ErrorKind, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(kind, format!("{}: {what}", path.display()))
}

/// The pem-types error as an `io::Error` naming `path` (keeping the kind of an I/O error).
fn pem_error(path: &Path, e: rustls::pki_types::pem::Error) -> io::Error {
    match e {
        rustls::pki_types::pem::Error::Io(io) => bad(path, io.kind(), io),
        rustls::pki_types::pem::Error::NoItemsFound => {
            bad(path, io::ErrorKind::InvalidData, "no private key found")
        }
        other => bad(path, io::ErrorKind::InvalidData, other),
    }
}

fn load_certs(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    // Read first: the I/O error then has the usual kind and message.
    let pem = std::fs::read(path).map_err(|e| bad(path, e.kind(), e))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(bad(
            path,
            io::ErrorKind::InvalidData,
            "no certificate found (expected PEM \"BEGIN CERTIFICATE\" blocks)",
        ));
    }
    Ok(certs)
}

fn load_key(path: &Path) -> io::Result<PrivateKeyDer<'static>> {
    let pem = std::fs::read(path).map_err(|e| bad(path, e.kind(), e))?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| pem_error(path, e))
}
