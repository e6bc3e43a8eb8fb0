//! `tls = "acme"` sites: one [`fibra_acme::Acme`] client for the `[acme]` table and one
//! managed certificate per site (its host names), kept across reloads while the table and the
//! names stay the same, so a reload never orders anew. A site's certificate is served from a
//! [`CertResolver`] of its own, which the ACME thread refills on each issue or renewal; until
//! the first issue the site serves its stored certificate or a self-signed fallback (the log
//! says which).

use std::io;
use std::sync::{Arc, Mutex};

use fibra_acme::{Acme, ChallengeKind, Managed};
use fibra_http::tls::CertResolver;
use rustls::sign::CertifiedKey;

use crate::config::AcmeConfig;

/// The ACME client of an `[acme]` table, with the table it was made for.
pub(crate) struct Client {
    pub(crate) config: AcmeConfig,
    pub(crate) acme: Arc<Acme>,
    /// The configuration a ClientHello offering `acme-tls/1` gets.
    pub(crate) challenge: Arc<rustls::ServerConfig>,
}

/// A site's managed certificate.
pub(crate) struct SiteCert {
    pub(crate) resolver: Arc<CertResolver>,
    /// Kept alive: dropping it stops the renewals.
    pub(crate) _managed: Managed,
}

/// The client for `config`: `kept`'s if made for the same table, else a new one.
pub(crate) fn client(config: &AcmeConfig, kept: Option<&Arc<Client>>) -> io::Result<Arc<Client>> {
    if let Some(k) = kept.filter(|k| same_table(&k.config, config)) {
        return Ok(k.clone());
    }
    let challenges = config
        .challenges
        .iter()
        .map(|c| match c.as_str() {
            "http-01" => ChallengeKind::Http01,
            _ => ChallengeKind::TlsAlpn01,
        })
        .collect();
    let acme = Acme::new(fibra_acme::AcmeConfig {
        contact: config.contact.clone(),
        ca: config.ca.clone(),
        challenges,
        profile: config.profile.clone(),
        ..fibra_acme::AcmeConfig::new(config.directory.clone(), config.storage.clone())
    })?;
    let challenge = fibra_acme::challenge_server_config(acme.clone())?;
    Ok(Arc::new(Client {
        config: config.clone(),
        acme,
        challenge,
    }))
}

/// Whether two tables ask for the same account and CA (positions aside).
fn same_table(a: &AcmeConfig, b: &AcmeConfig) -> bool {
    a.directory == b.directory
        && a.contact == b.contact
        && a.storage == b.storage
        && a.ca == b.ca
        && a.challenges == b.challenges
        && a.profile == b.profile
}

/// Until the resolver exists, the certificate to put in it; then the resolver.
type Installing = (Option<Arc<CertifiedKey>>, Option<Arc<CertResolver>>);

/// The managed certificate for `names`.
pub(crate) fn manage(client: &Client, names: Vec<String>) -> io::Result<SiteCert> {
    // The first certificate comes before `manage` returns; later ones from the ACME thread.
    // One lock over both, so none is lost between the two.
    let state: Arc<Mutex<Installing>> = Arc::default();
    let on_cert = {
        let state = state.clone();
        move |key: Arc<CertifiedKey>| {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            match &s.1 {
                Some(r) => {
                    if let Err(e) = r.replace(vec![key]) {
                        log::warn!("ACME: cannot install the new certificate: {e}");
                    }
                }
                None => s.0 = Some(key),
            }
        }
    };
    let managed = client.acme.manage(names, on_cert)?;
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    let first = s.0.take().unwrap_or_else(|| managed.certified_key());
    let resolver = CertResolver::new(vec![first])?;
    s.1 = Some(resolver.clone());
    drop(s);
    Ok(SiteCert {
        resolver,
        _managed: managed,
    })
}
