//! [`AcmeConfig`]: which ACME server, which account, where to keep it, and when to renew.

use std::io;
use std::path::PathBuf;

use crate::ChallengeKind;

/// Let's Encrypt's production directory.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// Let's Encrypt's staging directory: untrusted certificates, far higher rate limits; the one
/// to try a configuration against first.
pub const LETS_ENCRYPT_STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

/// The settings of an [`Acme`](crate::Acme) client. [`AcmeConfig::new`] fills in the
/// defaults.
#[derive(Debug, Clone)]
pub struct AcmeConfig {
    /// The URL of the server's directory (e.g. [`LETS_ENCRYPT`]); `https://` only.
    pub directory: String,
    /// The account's contact URLs, e.g. `mailto:admin@example.com` (may be empty). The
    /// account registers with `termsOfServiceAgreed`: using this client with a CA agrees to
    /// its terms of service (the directory's `meta.termsOfService`).
    pub contact: Vec<String>,
    /// Where the account key and the certificates are kept (see the crate docs for the
    /// layout): created if missing; folders 0700 (an existing one is made 0700: give it a
    /// folder of its own), key files 0600.
    pub storage: PathBuf,
    /// A PEM bundle of the CA certificates to trust for the directory's HTTPS (a private
    /// ACME server, Pebble in tests); `None`: the system's roots.
    pub ca: Option<PathBuf>,
    /// The challenge kinds to answer, in order of preference; a name's authorization uses
    /// the first the server offers for it. Default: tls-alpn-01, then http-01.
    pub challenges: Vec<ChallengeKind>,
    /// The fraction of a certificate's lifetime after which it is renewed, in (0, 1].
    /// Default 2/3: a 90-day certificate renews 30 days before it expires.
    pub renew_fraction: f64,
    /// The certificate profile to ask for in new orders (draft-ietf-acme-profiles; e.g.
    /// Let's Encrypt's `"shortlived"`); `None`: the server's default.
    pub profile: Option<String>,
}

impl AcmeConfig {
    /// The settings for the server at `directory` keeping its files in `storage`, with the
    /// defaults: no contact, system roots, tls-alpn-01 then http-01, renewal at 2/3 of the
    /// lifetime, the default profile.
    pub fn new(directory: impl Into<String>, storage: impl Into<PathBuf>) -> AcmeConfig {
        AcmeConfig {
            directory: directory.into(),
            contact: Vec::new(),
            storage: storage.into(),
            ca: None,
            challenges: vec![ChallengeKind::TlsAlpn01, ChallengeKind::Http01],
            renew_fraction: 2.0 / 3.0,
            profile: None,
        }
    }

    /// An `InvalidInput` error for settings that cannot work.
    pub(crate) fn check(&self) -> io::Result<()> {
        let bad = |why: String| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        crate::http::Url::parse(&self.directory)?;
        if self.challenges.is_empty() {
            return bad("no challenge kind configured".into());
        }
        if !(self.renew_fraction > 0.0 && self.renew_fraction <= 1.0) {
            return bad(format!(
                "renew_fraction {} is not in (0, 1]",
                self.renew_fraction
            ));
        }
        Ok(())
    }
}

/// `names` checked and lowercased: at least one, each a DNS name (no wildcard, no IP
/// address, no trailing dot), no duplicates. The first stays first (the folder's name).
pub(crate) fn check_names(names: Vec<String>) -> io::Result<Vec<String>> {
    let bad = |why: String| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    if names.is_empty() {
        return bad("no name to manage a certificate for".into());
    }
    let mut checked: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let lower = name.to_ascii_lowercase();
        if lower.contains('*') {
            return bad(format!(
                "{name:?}: wildcard certificates need the dns-01 challenge, which this client does not answer"
            ));
        }
        if lower.parse::<std::net::IpAddr>().is_ok() {
            return bad(format!(
                "{name:?}: IP address certificates are not supported"
            ));
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if lower.len() > 253 || !lower.contains('.') || !lower.split('.').all(label_ok) {
            return bad(format!("{name:?} is not a fully qualified DNS name"));
        }
        if !checked.contains(&lower) {
            checked.push(lower);
        }
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        let ok = check_names(vec![
            "Example.COM".into(),
            "www.example.com".into(),
            "example.com".into(),
        ]);
        assert_eq!(ok.unwrap(), ["example.com", "www.example.com"]);
        for bad in [
            "*.example.com",
            "127.0.0.1",
            "::1",
            "localhost",
            "a..b",
            "-a.b",
            "a.b.",
            "a_b.c",
        ] {
            assert!(check_names(vec![bad.into()]).is_err(), "{bad}");
        }
        assert!(check_names(vec![]).is_err());
    }

    #[test]
    fn settings_are_checked() {
        let good = AcmeConfig::new(LETS_ENCRYPT_STAGING, "acme");
        assert!(good.check().is_ok());
        assert!(AcmeConfig::new("http://ca/dir", "acme").check().is_err());
        let mut none = good.clone();
        none.challenges.clear();
        assert!(none.check().is_err());
        for fraction in [0.0, -1.0, 1.5, f64::NAN] {
            let mut c = good.clone();
            c.renew_fraction = fraction;
            assert!(c.check().is_err(), "{fraction}");
        }
    }
}
