//! What a connection's loop (HTTP/1.1 in `conn`, HTTP/2 in `http2`) needs from whoever runs
//! it: the lifecycle flags graceful shutdown shares with it ([`ConnCtl`]), through its owner
//! ([`Owner`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::going_away::GoingAway;

/// Connection lifecycle flags shared with the server for graceful shutdown.
#[derive(Debug)]
pub(crate) struct ConnCtl<'a> {
    /// Set while the connection waits for the next request with nothing buffered. Written
    /// with relaxed stores (two per request): the server's shutdown looks at it again every few
    /// milliseconds instead of relying on a fence on this side.
    pub idle: &'a AtomicBool,
    /// Set by the server when shutting down: finish the current request with
    /// `Connection: close`, and do not wait for another.
    pub shutting_down: &'a AtomicBool,
    /// Whether a connection that opens with the HTTP/2 preface switches to HTTP/2 (only
    /// where the handler can run in fibers of its own: the server's connections).
    pub h2: bool,
    /// Where an upgrade keeps the signal graceful shutdown sets (`None`: nobody will).
    pub going_away: Option<&'a OnceLock<Arc<GoingAway>>>,
}

impl ConnCtl<'_> {
    /// The signal graceful shutdown will give this connection (made on first use, and set
    /// at once if shutdown has begun already), for what outlives a request: an upgrade, a
    /// long streamed body. `None` where nobody will give it.
    pub(crate) fn going_away(&self) -> Option<Arc<GoingAway>> {
        self.going_away.map(|cell| {
            let g = cell.get_or_init(Default::default).clone();
            if self.shutting_down.load(Ordering::SeqCst) {
                g.set();
            }
            g
        })
    }
}

/// What a connection needs from whoever runs it: the lifecycle flags (see [`ConnCtl`]).
pub(crate) trait Owner {
    fn ctl(&self) -> ConnCtl<'_>;
}

/// The owner of a connection nobody else shuts down (`serve_connection`,
/// `serve_connection_steps`, `http2::serve_connection_h2`): flags no one else looks at.
pub(crate) struct Detached {
    idle: AtomicBool,
    down: AtomicBool,
    /// [`ConnCtl::h2`].
    h2: bool,
}

impl Detached {
    pub(crate) fn new(h2: bool) -> Detached {
        Detached {
            idle: AtomicBool::new(false),
            down: AtomicBool::new(false),
            h2,
        }
    }
}

impl Owner for Detached {
    fn ctl(&self) -> ConnCtl<'_> {
        ConnCtl {
            idle: &self.idle,
            shutting_down: &self.down,
            h2: self.h2,
            going_away: None,
        }
    }
}
