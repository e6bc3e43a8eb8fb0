//! The running form of a site file: per listening address (a slot), its sites by host name;
//! per site, its routes, TLS configuration and access log.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fibra_http::access_log::AccessLog;
use fibra_http::tls::{CertResolver, ChooseConfig};

use crate::config::{Config, Listen};
use crate::hosts::HostTable;
use crate::route::Route;
use crate::routes::RouteTable;

/// Everything one configuration serves. Replaced whole on reload.
pub struct Sites {
    /// Per slot (see [`crate::Live::slot`]): the address's sites, `None` where this
    /// configuration does not listen.
    pub groups: Vec<Option<Group>>,
    /// The configuration it was built from.
    pub config: Config,
    /// The ACME client, with `tls = "acme"` sites: it answers their challenges.
    pub acme: Option<Arc<fibra_acme::Acme>>,
    /// The configuration of a ClientHello offering `acme-tls/1`.
    pub acme_tls: Option<Arc<rustls::ServerConfig>>,
}

/// The sites of one listening address.
pub struct Group {
    /// The address.
    pub listen: Listen,
    /// Sites by name.
    pub hosts: HostTable,
    /// The sites (indices of `hosts`).
    pub sites: Vec<Arc<Site>>,
    /// Whether the address serves HTTPS.
    pub tls: bool,
}

/// How a site answers on an address.
pub enum Mode {
    /// Its routes.
    Serve,
    /// Redirect to HTTPS on `port` (a `redirect_http` address).
    RedirectHttps {
        /// The HTTPS port (omitted from the URL when 443).
        port: u16,
    },
}

/// One site on one address.
pub struct Site {
    /// For messages: `site[0] (a.test)`.
    pub name: String,
    /// How it answers.
    pub mode: Mode,
    /// Routes by path.
    pub table: RouteTable,
    /// The routes.
    pub routes: Vec<Route>,
    /// Its certificates (file-based TLS).
    pub certs: Option<Arc<CertResolver>>,
    /// The TLS configuration a handshake for one of its names gets.
    pub tls: Option<Arc<ChooseConfig>>,
    /// Its access log.
    pub log: Option<AccessLog>,
    /// Its responses by status class (kept across reloads while the site keeps its name).
    pub counters: Arc<SiteCounters>,
    /// `http3 = true`: its HTTPS answers carry `Alt-Svc` where the address has HTTP/3
    /// ([`crate::SiteService::alt_svc`]).
    pub http3: bool,
}

/// A site's responses by status class (1xx … 5xx), counted when metrics are on.
#[derive(Debug, Default)]
pub struct SiteCounters {
    by_class: [AtomicU64; 5],
}

impl SiteCounters {
    /// Counts a response with `status`.
    #[inline]
    pub fn count(&self, status: u16) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts, 1xx first.
    pub fn get(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.by_class[i].load(Ordering::Relaxed))
    }
}

impl Sites {
    /// Every site's name and counters (once per site, whatever its addresses), for
    /// metrics.
    pub fn counters(&self) -> Vec<(String, Arc<SiteCounters>)> {
        let mut out: Vec<(String, Arc<SiteCounters>)> = Vec::new();
        for g in self.groups.iter().flatten() {
            for s in &g.sites {
                if !out.iter().any(|(_, c)| Arc::ptr_eq(c, &s.counters)) {
                    out.push((s.name.clone(), s.counters.clone()));
                }
            }
        }
        out
    }

    /// The group of `slot`.
    #[inline]
    pub fn group(&self, slot: usize) -> Option<&Group> {
        self.groups.get(slot).and_then(Option::as_ref)
    }
}
