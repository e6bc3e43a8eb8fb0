//! Answering tls-alpn-01 (RFC 8737) in the server's TLS handshakes: the CA's validation
//! connection offers ALPN `acme-tls/1` with the name as SNI, and must be shown the
//! challenge certificate ([`Acme::tls_alpn01`]) and agree on `acme-tls/1`.
//!
//! Two ways to plug it in:
//! - [`AcmeResolver`] around the server's own resolver, in a configuration whose ALPN
//!   protocols include [`ACME_TLS_ALPN`];
//! - for a server choosing its configuration per ClientHello (fibra-http's
//!   `Server::tls_choosing`), [`offers_acme_tls`] to recognise the validation and
//!   [`challenge_server_config`] to answer it.
//!
//! Either way the connection must then be closed rather than served as HTTP: that is
//! fibra-http's `AlpnHook` with `ALPN_ACME_TLS` (the same protocol name as here).

use std::fmt;
use std::io;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;

use crate::Acme;

/// The ALPN protocol of tls-alpn-01 validation connections (RFC 8737 §6.2); the same bytes
/// as fibra-http's `tls::ALPN_ACME_TLS`.
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Whether a ClientHello offers `acme-tls/1`: a tls-alpn-01 validation connection (the CA
/// offers nothing else).
pub fn offers_acme_tls(hello: &ClientHello<'_>) -> bool {
    hello
        .alpn()
        .is_some_and(|mut protocols| protocols.any(|p| p == ACME_TLS_ALPN))
}

/// A certificate resolver that answers tls-alpn-01 validation connections with the pending
/// challenge certificate for their SNI name, and every other handshake with `inner`.
///
/// A validation connection for a name without a pending challenge gets no certificate (the
/// handshake fails): showing the site's certificate would not validate anyway.
///
/// ```no_run
/// use std::sync::Arc;
/// use fibra_acme::{Acme, AcmeConfig, AcmeResolver, ACME_TLS_ALPN};
/// use fibra_http::tls::{AlpnHook, CertResolver, ALPN_ACME_TLS, ALPN_HTTP1};
/// use fibra_http::{Request, Response, Server};
///
/// let acme = Acme::new(AcmeConfig::new(fibra_acme::LETS_ENCRYPT, "/var/lib/fibra/acme"))?;
/// let site = Arc::new(std::sync::OnceLock::<Arc<CertResolver>>::new());
/// let installed = site.clone();
/// // The first certificate (stored or self-signed) is given before `manage` returns.
/// let managed = acme.manage(vec!["example.com".into()], move |key| match installed.get() {
///     Some(resolver) => resolver.replace(vec![key]).unwrap(),
///     None => drop(installed.set(CertResolver::new(vec![key]).unwrap())),
/// })?;
/// let inner = site.get().unwrap().clone();
/// let resolver = AcmeResolver::new(inner, acme.clone());
/// let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
///     rustls::crypto::aws_lc_rs::default_provider(),
/// ))
/// .with_safe_default_protocol_versions()
/// .unwrap()
/// .with_no_client_auth()
/// .with_cert_resolver(resolver);
/// config.alpn_protocols = vec![ALPN_HTTP1.to_vec(), ACME_TLS_ALPN.to_vec()];
/// let server = Server::bind("0.0.0.0:443")
///     .tls(Arc::new(config))
///     .alpn_hook(AlpnHook::new(ALPN_ACME_TLS, |_name| {}))
///     .serve(|_req: Request| Response::new("hello".into()))?;
/// # drop((server, managed));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AcmeResolver {
    inner: Arc<dyn ResolvesServerCert>,
    acme: Arc<Acme>,
}

impl AcmeResolver {
    /// Answers validation connections from `acme`'s pending challenges, others with `inner`.
    pub fn new(inner: Arc<dyn ResolvesServerCert>, acme: Arc<Acme>) -> Arc<AcmeResolver> {
        Arc::new(AcmeResolver { inner, acme })
    }
}

impl fmt::Debug for AcmeResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcmeResolver")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for AcmeResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if offers_acme_tls(&client_hello) {
            return client_hello
                .server_name()
                .and_then(|name| self.acme.tls_alpn01(name));
        }
        self.inner.resolve(client_hello)
    }
}

/// Only the challenge certificates: the resolver of [`challenge_server_config`].
#[derive(Debug)]
struct ChallengeResolver(Arc<Acme>);

impl ResolvesServerCert for ChallengeResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        client_hello
            .server_name()
            .and_then(|name| self.0.tls_alpn01(name))
    }
}

/// A server configuration for tls-alpn-01 validation connections only: ALPN `acme-tls/1`,
/// TLS 1.2 and 1.3 (RFC 8737 §4 requires at least 1.2), the challenge certificate of the
/// SNI name. For a server that picks a configuration per ClientHello:
///
/// ```no_run
/// # use std::sync::Arc;
/// # use fibra_acme::{challenge_server_config, offers_acme_tls, Acme, AcmeConfig};
/// # use fibra_http::tls::{choose_config_with_resolver, AlpnHook, CertResolver, ChooseConfig, ALPN_ACME_TLS};
/// # use fibra_http::{Request, Response, Server};
/// # fn wire(acme: Arc<Acme>, resolver: Arc<CertResolver>) -> std::io::Result<()> {
/// let challenge = challenge_server_config(acme.clone())?;
/// let sites = choose_config_with_resolver(resolver)?;
/// let choose: Arc<ChooseConfig> = Arc::new(move |hello| {
///     if offers_acme_tls(hello) { Some(challenge.clone()) } else { sites(hello) }
/// });
/// Server::bind("0.0.0.0:443")
///     .tls_choosing(choose)
///     .alpn_hook(AlpnHook::new(ALPN_ACME_TLS, |_name| {}))
///     .serve(|_req: Request| Response::new("hello".into()))?;
/// # Ok(()) }
/// ```
pub fn challenge_server_config(acme: Arc<Acme>) -> io::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(ChallengeResolver(acme)));
    config.alpn_protocols = vec![ACME_TLS_ALPN.to_vec()];
    Ok(Arc::new(config))
}
