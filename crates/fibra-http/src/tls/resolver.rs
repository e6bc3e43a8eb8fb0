//! [`CertResolver`]: several certificates chosen by SNI, replaceable while connections run.

use std::io;
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::pki_types::{DnsName, ServerName};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::config::certified_key_from_pem;

/// Chooses the certificate of a TLS handshake by the name the client asks for (SNI), among
/// several, the first being the default; [`CertResolver::replace`] and
/// [`CertResolver::reload`] swap the whole set while connections run.
///
/// A certificate serves a name its subject alternative names (SAN) cover: an exact DNS name,
/// or a `*.example.com` wildcard (one label, as browsers match it). The check is webpki's,
/// the one rustls clients apply. A client without SNI, or asking for a name no certificate
/// covers, gets the first certificate (as nginx's default server does). When several cover a
/// name, the first in the list wins.
///
/// The set sits behind an [`ArcSwap`]: a handshake reads it without a lock, and a
/// replacement affects only the handshakes that start after it; established connections keep
/// their session.
///
/// ```no_run
/// use fibra_http::tls::{server_config_with_resolver, CertResolver};
/// use fibra_http::{Request, Response, Server};
///
/// let resolver = CertResolver::from_pem(&[
///     ("example.com.pem", "example.com.key"), // the default
///     ("example.org.pem", "example.org.key"),
/// ])?;
/// let config = server_config_with_resolver(resolver.clone())?;
/// let server = Server::bind("0.0.0.0:8443")
///     .tls(config)
///     .serve(|_req: Request| Response::new("hello".into()))?;
/// // Later (e.g. on SIGHUP), with renewed files:
/// resolver.reload(&[("example.com.pem", "example.com.key"), ("example.org.pem", "example.org.key")])?;
/// # server.shutdown(std::time::Duration::from_secs(1));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct CertResolver {
    keys: ArcSwap<Vec<Arc<CertifiedKey>>>,
}

/// The error for an empty set of certificates.
fn no_certificate() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "no certificate given")
}

impl CertResolver {
    /// A resolver over `keys` (the first one is the default); an `InvalidInput` error if
    /// there are none.
    pub fn new(keys: Vec<Arc<CertifiedKey>>) -> io::Result<Arc<CertResolver>> {
        if keys.is_empty() {
            return Err(no_certificate());
        }
        Ok(Arc::new(CertResolver {
            keys: ArcSwap::from_pointee(keys),
        }))
    }

    /// A resolver over PEM `(certificate chain, private key)` file pairs, the first pair being
    /// the default. Errors name the file at fault (see
    /// [`server_config_from_pem`](super::server_config_from_pem)).
    pub fn from_pem<C: AsRef<Path>, K: AsRef<Path>>(
        pairs: &[(C, K)],
    ) -> io::Result<Arc<CertResolver>> {
        CertResolver::new(load_pairs(pairs)?)
    }

    /// Replaces the whole set with `keys` (the first one the new default): handshakes that
    /// start afterwards use them, open connections are not affected. With no keys, an
    /// `InvalidInput` error and the old set stays.
    pub fn replace(&self, keys: Vec<Arc<CertifiedKey>>) -> io::Result<()> {
        if keys.is_empty() {
            return Err(no_certificate());
        }
        self.keys.store(Arc::new(keys));
        Ok(())
    }

    /// Reads every PEM pair again and [`replace`](Self::replace)s the set with them, all or
    /// nothing: if any file fails to load, the error names it and the old set stays.
    pub fn reload<C: AsRef<Path>, K: AsRef<Path>>(&self, pairs: &[(C, K)]) -> io::Result<()> {
        self.replace(load_pairs(pairs)?)
    }

    /// The current set of certified keys, the default first.
    pub fn keys(&self) -> Arc<Vec<Arc<CertifiedKey>>> {
        self.keys.load_full()
    }

    /// The key for the SNI name `name` (the default if none covers it), in the current set.
    fn choose(&self, name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let keys = self.keys.load();
        let wanted = name.and_then(|n| DnsName::try_from(n).ok());
        if let Some(dns) = wanted {
            let name = ServerName::DnsName(dns);
            let covers = |key: &&Arc<CertifiedKey>| {
                key.end_entity_cert()
                    .ok()
                    .and_then(|der| webpki::EndEntityCert::try_from(der).ok())
                    .is_some_and(|ee| ee.verify_is_valid_for_subject_name(&name).is_ok())
            };
            if let Some(key) = keys.iter().find(covers) {
                return Some(key.clone());
            }
        }
        keys.first().cloned()
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.choose(client_hello.server_name())
    }
}

fn load_pairs<C: AsRef<Path>, K: AsRef<Path>>(
    pairs: &[(C, K)],
) -> io::Result<Vec<Arc<CertifiedKey>>> {
    pairs
        .iter()
        .map(|(cert, key)| certified_key_from_pem(cert, key))
        .collect()
}
