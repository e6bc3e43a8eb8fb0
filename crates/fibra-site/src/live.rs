//! [`Live`]: the configuration being served, swapped whole on reload (requests in flight finish
//! on the one they started with), and what outlives a reload: the slot of each listening
//! address, file servers (their caches stay warm), proxies (their health and balancing state)
//! and rate limiters of unchanged routes.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::config::{Config, ConfigErrors, Listen};
use crate::kept::Kept;
use crate::sites::Sites;

/// The served configuration. See the module docs.
pub struct Live {
    sites: ArcSwap<Sites>,
    /// Listening addresses in slot order (only grows).
    slots: Mutex<Vec<Listen>>,
    kept: Mutex<Kept>,
    /// Serialises reloads.
    reloading: Mutex<()>,
}

impl Live {
    /// Builds `config` (reading its certificates, password files, error pages; opening its
    /// logs): every error at once, with its position in the file.
    pub fn new(config: Config) -> Result<Arc<Live>, ConfigErrors> {
        let live = Live {
            sites: ArcSwap::from_pointee(Sites {
                groups: Vec::new(),
                config: Config::default(),
                acme: None,
                acme_tls: None,
            }),
            slots: Mutex::new(Vec::new()),
            kept: Mutex::new(Kept::default()),
            reloading: Mutex::new(()),
        };
        live.reload(config)?;
        Ok(Arc::new(live))
    }

    /// Builds `config` and swaps it in (all or nothing: on error the current one stays).
    pub fn reload(&self, config: Config) -> Result<(), ConfigErrors> {
        let _one = self.reloading.lock().unwrap_or_else(|e| e.into_inner());
        for site in &config.sites {
            for l in site.listen.iter().chain(&site.redirect_http) {
                self.slot(l);
            }
        }
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let (sites, now_kept) =
            crate::build::build(config, &slots, &kept, crate::build::Purpose::Serve)?;
        *kept = now_kept;
        self.sites.store(Arc::new(sites));
        Ok(())
    }

    /// The slot of `listen` (assigned on first sight, the same for the process's life).
    pub fn slot(&self, listen: &Listen) -> usize {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        match slots.iter().position(|l| l == listen) {
            Some(i) => i,
            None => {
                slots.push(listen.clone());
                slots.len() - 1
            }
        }
    }

    /// The configuration served now.
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<Sites>> {
        self.sites.load()
    }

    /// The configuration served now, as an `Arc`.
    pub fn current(&self) -> Arc<Sites> {
        self.sites.load_full()
    }
}
