//! [`Acme`] and [`Managed`]: the certificates a server asks for, each kept current by its own
//! background thread, and what the server asks while the CA validates.
//!
//! A managed certificate's thread sleeps until the certificate is due (at
//! [`AcmeConfig::renew_fraction`] of its lifetime; at once for a self-signed fallback),
//! obtains a new one, stores and installs it, and sleeps again. A failed attempt is
//! retried after a backoff (1 minute, doubling up to 6 hours, or longer if the server's
//! `Retry-After` says so); the certificate being served stays in place meanwhile.

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rustls::sign::CertifiedKey;

use crate::certinfo::CertInfo;
use crate::challenges::Pending;
use crate::client::Client;
use crate::config::{check_names, AcmeConfig};
use crate::http::Https;
use crate::keys;
use crate::order::Attempt;
use crate::problem::{problem_of, Problem};
use crate::retry::backoff;
use crate::stop::Stop;
use crate::storage::{Storage, StoredPair};

/// The earliest a new attempt follows the previous one, even when a certificate is due at
/// once (a lifetime shorter than the time to issue one, a clock far off).
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// An ACME client: one account at one server, shared (`Arc`) by the certificates it manages
/// and by the server that answers their challenges.
pub struct Acme {
    config: AcmeConfig,
    storage: Arc<Storage>,
    client: Client,
    pending: Arc<Pending>,
}

impl fmt::Debug for Acme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acme")
            .field("config", &self.config)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// Which certificate a [`Managed`] one serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The one found in storage at start (still valid; renewed when due).
    Stored,
    /// One the CA issued since the start, where there was none.
    Issued,
    /// One the CA issued to replace a stored or issued one.
    Renewed,
    /// The self-signed fallback: nothing valid was stored and the CA has not issued one
    /// yet (see [`Status::last_error`] for why, once an attempt has failed).
    SelfSigned,
}

/// The state of a managed certificate ([`Managed::status`]).
#[derive(Debug, Clone)]
pub struct Status {
    /// The names it covers.
    pub names: Vec<String>,
    /// Which certificate is served.
    pub served: Served,
    /// When the served certificate expires; `None` for the self-signed fallback.
    pub not_after: Option<SystemTime>,
    /// When the next attempt to obtain one is due; `None` while one runs.
    pub next_attempt: Option<SystemTime>,
    /// Why the last attempt failed (with the ACME problem document's type and detail when
    /// the server gave one); `None` once one succeeds.
    pub last_error: Option<String>,
    /// The problem document of the last failure, if the server sent one.
    pub problem: Option<Problem>,
    /// Failed attempts since the last success.
    pub failures: u32,
}

/// One managed certificate ([`Acme::manage`]). Dropping it, or [`Managed::stop`], ends its
/// background work: the thread's current wait ends at once; a request in flight finishes
/// first (each read and write is bounded by a timeout).
pub struct Managed {
    site: Arc<Site>,
}

/// What a managed certificate's thread and its [`Managed`] handle share.
struct Site {
    names: Vec<String>,
    status: Mutex<Status>,
    current: Mutex<Arc<CertifiedKey>>,
    stop: Stop,
}

impl fmt::Debug for Managed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Managed")
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Managed {
    /// The certificate's state: which one is served, until when, and the last error.
    pub fn status(&self) -> Status {
        self.site.status.lock().unwrap().clone()
    }

    /// The certificate served now (the one last given to `on_cert`).
    pub fn certified_key(&self) -> Arc<CertifiedKey> {
        self.site.current.lock().unwrap().clone()
    }

    /// Stops the background work (as dropping the handle does); the last certificate given
    /// to `on_cert` stays wherever the server put it.
    pub fn stop(&self) {
        self.site.stop.stop();
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.site.stop.stop();
    }
}

impl Acme {
    /// A client for `config`: creates the storage and loads the account key (creating it the
    /// first time), and the trusted roots for the directory. It does not contact the server:
    /// the account registers with the first order.
    pub fn new(config: AcmeConfig) -> io::Result<Arc<Acme>> {
        config.check()?;
        let storage = Arc::new(Storage::open(&config.storage, &config.directory)?);
        let key = storage.account_key()?;
        let transport = Https::new(config.ca.as_deref())?;
        let client = Client::new(
            Box::new(transport),
            &config.directory,
            config.contact.clone(),
            key,
            storage.account_url(),
            Some(storage.clone()),
        );
        Ok(Arc::new(Acme {
            config,
            storage,
            client,
            pending: Arc::new(Pending::default()),
        }))
    }

    /// Manages one certificate covering `names` (DNS names; no wildcards, no IP addresses:
    /// an `InvalidInput` error). Returns at once, having called `on_cert` with the certificate
    /// to serve now: the stored one if storage holds a valid certificate for exactly these
    /// names, else a self-signed fallback (logged as such). A background thread then obtains
    /// a certificate from the CA (at once for the fallback, at `renew_fraction` of the
    /// lifetime for a stored one), stores it, and calls `on_cert` with it; and so on for each
    /// renewal. Failed attempts are retried with exponential backoff, honouring the server's
    /// `Retry-After`.
    ///
    /// `on_cert` runs on the background thread for every certificate after the first; it
    /// should only swap the certificate into the server's resolver.
    pub fn manage(
        self: &Arc<Self>,
        names: Vec<String>,
        on_cert: impl Fn(Arc<CertifiedKey>) + Send + Sync + 'static,
    ) -> io::Result<Managed> {
        let names = check_names(names)?;
        let now = SystemTime::now();
        let (key, served, not_after, next) = match self.stored(&names, now) {
            Some((key, info)) => {
                log::info!(
                    "{}: serving the stored certificate, valid until {}",
                    names[0],
                    httpdate::fmt_http_date(info.not_after)
                );
                let next = info.renew_at(self.config.renew_fraction);
                (key, Served::Stored, Some(info.not_after), next)
            }
            None => {
                log::warn!(
                    "{}: no certificate yet; serving a self-signed one until {} issues one",
                    names[0],
                    self.config.directory
                );
                (keys::self_signed(&names)?, Served::SelfSigned, None, now)
            }
        };
        on_cert(key.clone());
        let site = Arc::new(Site {
            names: names.clone(),
            status: Mutex::new(Status {
                names,
                served,
                not_after,
                next_attempt: Some(next),
                last_error: None,
                problem: None,
                failures: 0,
            }),
            current: Mutex::new(key),
            stop: Stop::default(),
        });
        let (acme, thread_site) = (self.clone(), site.clone());
        std::thread::Builder::new()
            .name(format!("acme {}", site.names[0]))
            .spawn(move || acme.keep_current(&thread_site, &on_cert, next))?;
        Ok(Managed { site })
    }

    /// The key authorization to answer `GET /.well-known/acme-challenge/{token}` with
    /// (http-01, `text/plain` or `application/octet-stream`), while that challenge is
    /// pending; `None` otherwise (answer 404).
    pub fn http01(&self, token: &str) -> Option<String> {
        self.pending.http01(token)
    }

    /// The `acme-tls/1` certificate for `server_name` (the SNI of the CA's validation
    /// connection) while its tls-alpn-01 challenge is pending; `None` otherwise. See
    /// [`crate::AcmeResolver`].
    pub fn tls_alpn01(&self, server_name: &str) -> Option<Arc<CertifiedKey>> {
        self.pending.tls_alpn01(server_name)
    }

    /// The stored certificate for exactly `names`, if it loads, matches its key and has not
    /// expired at `now`.
    fn stored(&self, names: &[String], now: SystemTime) -> Option<(Arc<CertifiedKey>, CertInfo)> {
        let found = self.storage.load_certificate(names);
        let pair = match found {
            Ok(Some(pair)) => pair,
            Ok(None) => return None,
            Err(e) => {
                log::warn!("{}: reading the stored certificate: {e}", names[0]);
                return None;
            }
        };
        let loaded = keys::certified_key(&pair.chain_pem, &pair.key_pem).and_then(|key| {
            let leaf = key.end_entity_cert().map_err(io::Error::other)?;
            let info = CertInfo::parse(leaf)
                .ok_or_else(|| io::Error::other("cannot read the certificate's dates"))?;
            Ok((key, info))
        });
        let (key, info) = match loaded {
            Ok(found) => found,
            Err(e) => {
                log::warn!("{}: the stored certificate is unusable: {e}", names[0]);
                return None;
            }
        };
        let mut want = names.to_vec();
        let mut have = info.dns_names.clone();
        want.sort();
        have.sort();
        if want != have {
            log::info!("{}: the stored certificate is for {have:?}", names[0]);
            return None;
        }
        if info.not_after <= now {
            log::info!(
                "{}: the stored certificate expired on {}",
                names[0],
                httpdate::fmt_http_date(info.not_after)
            );
            return None;
        }
        Some((key, info))
    }

    /// The background thread of `site`: an attempt at `next`, then at each renewal or retry,
    /// until the site stops.
    fn keep_current(&self, site: &Site, on_cert: &dyn Fn(Arc<CertifiedKey>), mut next: SystemTime) {
        let name = &site.names[0];
        loop {
            site.status.lock().unwrap().next_attempt = Some(next);
            if site.stop.sleep_until(next).is_err() {
                return;
            }
            site.status.lock().unwrap().next_attempt = None;
            let result = self.attempt(site);
            if site.stop.is_stopped() {
                return;
            }
            let now = SystemTime::now();
            match result {
                Ok((key, info)) => {
                    *site.current.lock().unwrap() = key.clone();
                    on_cert(key);
                    let mut status = site.status.lock().unwrap();
                    status.served = match status.served {
                        Served::SelfSigned => Served::Issued,
                        _ => Served::Renewed,
                    };
                    status.not_after = Some(info.not_after);
                    status.last_error = None;
                    status.problem = None;
                    status.failures = 0;
                    next = info
                        .renew_at(self.config.renew_fraction)
                        .max(now + MIN_INTERVAL);
                    log::info!(
                        "{name}: installed a certificate valid until {}; renewal due {}",
                        httpdate::fmt_http_date(info.not_after),
                        httpdate::fmt_http_date(next)
                    );
                }
                Err(e) => {
                    let mut status = site.status.lock().unwrap();
                    status.failures += 1;
                    let found = problem_of(&e);
                    let wait = backoff(status.failures, found.and_then(|p| p.retry_after));
                    status.problem = found.map(|p| p.problem.clone());
                    status.last_error = Some(e.to_string());
                    next = now + wait;
                    log::warn!(
                        "{name}: no certificate from {} ({e}); serving the {} one, next attempt in {} s",
                        self.config.directory,
                        match status.served {
                            Served::SelfSigned => "self-signed",
                            Served::Stored => "stored",
                            Served::Issued | Served::Renewed => "last issued",
                        },
                        wait.as_secs()
                    );
                }
            }
        }
    }

    /// One attempt for `site`: order, store and load a certificate.
    fn attempt(&self, site: &Site) -> io::Result<(Arc<CertifiedKey>, CertInfo)> {
        let attempt = Attempt {
            client: &self.client,
            pending: &self.pending,
            kinds: &self.config.challenges,
            profile: self.config.profile.as_deref(),
            stop: &site.stop,
        };
        let pair: StoredPair = attempt.obtain(&site.names)?;
        let key = keys::certified_key(&pair.chain_pem, &pair.key_pem)
            .map_err(|e| crate::problem::context(e, "the issued certificate"))?;
        let leaf = key.end_entity_cert().map_err(io::Error::other)?;
        let info = CertInfo::parse(leaf).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "the issued certificate's dates cannot be read",
            )
        })?;
        // Served even if it cannot be stored: the next start orders again.
        if let Err(e) = self.storage.save_certificate(&site.names, &pair) {
            log::error!("{}: storing the new certificate: {e}", site.names[0]);
        }
        Ok((key, info))
    }
}
