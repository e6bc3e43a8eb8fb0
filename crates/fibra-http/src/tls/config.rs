//! A [`ServerConfig`] from PEM files (the usual certificate chain and private key) or from a
//! [`CertResolver`].

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use rustls::{CipherSuite, ServerConfig};

use super::stream::ChooseConfig;
use super::CertResolver;

/// The ALPN name of HTTP/1.1.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// The ALPN name of HTTP/2 over TLS. The configurations built here announce it first, then
/// [`ALPN_HTTP1`]; a server with [`crate::Settings::http2`] off should announce only
/// HTTP/1.1 (set `alpn_protocols` on the configuration).
pub const ALPN_H2: &[u8] = b"h2";

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
/// replaceable while the server runs): TLS 1.3 and 1.2 only, ALPN `h2` and `http/1.1`, the
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
    let mut config = base_config(provider(), resolver)?;
    config.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().map_err(io::Error::other)?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_SIZE);
    Ok(Arc::new(config))
}

/// A configuration over `provider` with the certificates of `resolver`: TLS 1.3 and 1.2,
/// ALPN `h2` and `http/1.1`, no client authentication (resumption is the caller's).
fn base_config(
    provider: Arc<CryptoProvider>,
    resolver: Arc<CertResolver>,
) -> io::Result<ServerConfig> {
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()];
    Ok(config)
}

/// The crypto provider of the configurations built here.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The provider with AES-128-GCM suites first, then AES-256-GCM, then ChaCha20-Poly1305.
fn provider_aes128_first() -> Arc<CryptoProvider> {
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    p.cipher_suites.sort_by_key(|s| suite_rank(s.suite()));
    Arc::new(p)
}

/// Server-side preference: AES-128-GCM (0), AES-256-GCM (1), ChaCha20 (2), others after.
fn suite_rank(suite: CipherSuite) -> u8 {
    use CipherSuite as S;
    match suite {
        S::TLS13_AES_128_GCM_SHA256
        | S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
        S::TLS13_AES_256_GCM_SHA384
        | S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        | S::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
        s if is_chacha(s) => 2,
        _ => 3,
    }
}

fn is_chacha(suite: CipherSuite) -> bool {
    use CipherSuite as S;
    matches!(
        suite,
        S::TLS13_CHACHA20_POLY1305_SHA256
            | S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
            | S::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
    )
}

/// Whether a ClientHello's first cipher suite is ChaCha20-Poly1305: a client without AES
/// instructions (phones, older ARM) says so by listing it first.
fn prefers_chacha(hello: &ClientHello<'_>) -> bool {
    hello.cipher_suites().first().is_some_and(|&s| is_chacha(s))
}

/// [`server_config_with_resolver`] with Go's cipher suite policy, as a [`ChooseConfig`] for
/// [`crate::Server::tls_choosing`] (what `fibra serve`/`hello` run): the server picks
/// AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305, whatever the client's order,
/// unless the client lists ChaCha20 first (it has no AES instructions), which then gets its
/// own order. AES-128 is the security level of the P-256 and X25519 key exchange anyway, and
/// its SHA-256 key schedule costs a quarter less per handshake than AES-256's SHA-384 here.
/// Both configurations share the resolver, the ticket keys and the session cache, so a
/// session resumes whichever one made it.
pub fn choose_config_with_resolver(resolver: Arc<CertResolver>) -> io::Result<Arc<ChooseConfig>> {
    let client_order = server_config_with_resolver(resolver.clone())?;
    let mut server_order = base_config(provider_aes128_first(), resolver)?;
    server_order.ticketer = client_order.ticketer.clone();
    server_order.session_storage = client_order.session_storage.clone();
    server_order.ignore_client_order = true;
    let server_order = Arc::new(server_order);
    Ok(Arc::new(move |hello: &ClientHello<'_>| {
        Some(if prefers_chacha(hello) {
            client_order.clone()
        } else {
            server_order.clone()
        })
    }))
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
        let why = match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                "the private key is not the certificate's (they do not match)".to_string()
            }
            e => e.to_string(),
        };
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} with {}: {why}", cert_path.display(), key_path.display()),
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
