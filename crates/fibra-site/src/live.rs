//! [`Live`]: the configuration being served, swapped whole on reload (requests in flight finish
//! on the one they started with), and what outlives a reload: the slot of each listening
//! address, file servers (their caches stay warm), proxies (their health and balancing state)
//! and rate limiters of unchanged routes.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::config::{Config, ConfigErrors, Listen};
use crate::kept::Kept;
use crate::sites::Sites;

/// The served configuration. See the module docs.
pub struct Live {
    sites: ArcSwap<Sites>,
    /// The generation of `sites`: unique in the process (from [`GENERATIONS`]), stored after
    /// `sites`, so a worker's snapshot of an older one is seen to be older.
    generation: AtomicU64,
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
            generation: AtomicU64::new(0),
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
        self.generation.store(
            GENERATIONS.fetch_add(1, Ordering::Relaxed) + 1,
            Ordering::Release,
        );
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

    /// The configuration served now, as this worker thread last took it: per request a load
    /// of the generation and a count on the thread's own snapshot (no atomic read-modify-write,
    /// and no slot of `arc-swap`'s held while a request waits for an upstream). A thread takes
    /// the new configuration on its first request after a reload; until then an idle worker
    /// keeps the old one (with its open log files) alive.
    #[inline]
    pub fn snapshot(&self) -> Snapshot {
        let generation = self.generation.load(Ordering::Acquire);
        SNAPSHOT.with(|cell| {
            let mut snap = cell.borrow_mut();
            match &*snap {
                Some((g, held)) if *g == generation => Snapshot(held.clone()),
                _ => {
                    let held = Rc::new(Held(self.sites.load_full()));
                    *snap = Some((generation, held.clone()));
                    Snapshot(held)
                }
            }
        })
    }

    /// The configuration served now, as an `Arc`.
    pub fn current(&self) -> Arc<Sites> {
        self.sites.load_full()
    }
}

/// Generations handed out in the process: a snapshot's generation names one [`Live`]'s one
/// configuration, whichever `Live` a thread served last.
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The configuration this thread served last, and its generation (fibers never leave
    /// their thread, so an `Rc` held across a wait stays on it).
    static SNAPSHOT: RefCell<Option<(u64, Rc<Held>)>> = const { RefCell::new(None) };
}

/// A configuration held by one thread: counted there (`Rc`), not in the `Arc` every worker
/// shares.
struct Held(Arc<Sites>);

/// The configuration a request runs with ([`Live::snapshot`]).
pub struct Snapshot(Rc<Held>);

impl std::ops::Deref for Snapshot {
    type Target = Sites;
    #[inline]
    fn deref(&self) -> &Sites {
        &self.0 .0
    }
}
