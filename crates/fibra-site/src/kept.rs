//! [`Kept`]: what a reload keeps from the configuration before it while its settings stay
//! the same (the file cache and file servers, proxies with their health and balancing state,
//! rate limiters, the ACME client and certificates, sites' counters), handed from one build
//! to the next.

use std::collections::HashMap;
use std::sync::Arc;

/// Objects kept across reloads while their settings stay the same.
#[derive(Default)]
pub(crate) struct Kept {
    /// The file cache every `files` route shares, with the settings it was made for.
    pub(crate) file_cache: Option<(
        crate::config::CacheConfig,
        Arc<fibra_files::cache::FileCache>,
    )>,
    /// File servers by their settings.
    pub(crate) files: HashMap<String, Arc<fibra_files::FileServer>>,
    /// Proxies by their settings.
    pub(crate) proxies: HashMap<String, Arc<fibra_proxy::Proxy>>,
    /// Rate limiters by site, route and settings.
    pub(crate) limits: HashMap<String, Arc<crate::access::RateLimit>>,
    /// The ACME client of the `[acme]` table.
    pub(crate) acme: Option<Arc<crate::acme_sites::Client>>,
    /// ACME sites' certificates by their names.
    pub(crate) certs: HashMap<String, Arc<crate::acme_sites::SiteCert>>,
    /// Set while building for `--check-config` (nothing is created).
    pub(crate) checking: bool,
    /// Sites' response counters by site name.
    pub(crate) counters: HashMap<String, Arc<crate::sites::SiteCounters>>,
}
