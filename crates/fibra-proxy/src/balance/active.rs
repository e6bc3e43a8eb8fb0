//! Active health: one thread per upstream (named `fibra-health`) sends `GET path` every
//! interval and marks the upstream up on a `2xx`, down otherwise.
//!
//! A check is a plain blocking exchange on a thread of its own, not a fiber: it must run
//! whether or not the server has workers, and a slow upstream only holds its own checker.
//! It goes through the same connection code as requests ([`UpConn::open`], without the
//! connect backoff: it has its own schedule), so `https://` upstreams are checked over TLS
//! with the proxy's client configuration, and a loopback dial that connects to itself is
//! refused as a request's would be.
//!
//! The threads end with the proxy: its group holds a [`Checkers`], whose drop raises a stop
//! flag and wakes them through a condition variable (a thread in the middle of a check ends
//! when the check does, within its timeout); and each thread holds its upstream's state only
//! weakly, so none keeps a dropped proxy's state alive.

use std::io;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rustls::ClientConfig;

use super::group::MemberState;
use super::ActiveHealth;
use crate::route::Upstream;
use crate::upstream::{Timeouts, UpConn};

/// The stop flag of a group's checkers, and the condition variable they wait on.
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    /// Waits `interval`, or less if stopped meanwhile; returns whether stopped.
    fn wait(&self, interval: Duration) -> bool {
        let deadline = Instant::now() + interval;
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *stopped {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            stopped = match self.wake.wait_timeout(stopped, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The checker threads of one group; dropping this stops them.
pub(crate) struct Checkers {
    stop: Arc<Stop>,
}

impl Drop for Checkers {
    fn drop(&mut self) {
        *self.stop.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.wake.notify_all();
    }
}

/// What one checker sends where.
struct Probe {
    /// A copy of the upstream (its own connect backoff, unused).
    upstream: Upstream,
    /// The upstream's URL, for messages.
    url: String,
    /// `GET path` and its header fields.
    request: Vec<u8>,
    path: String,
    timeouts: Timeouts,
    tls: Option<Arc<ClientConfig>>,
}

impl Probe {
    /// One check: `Ok` on a `2xx`, otherwise why not.
    fn check(&self) -> Result<(), String> {
        let mut conn = UpConn::open(&self.upstream, &self.timeouts, self.tls.as_ref())
            .map_err(|f| f.to_string())?;
        conn.start(false);
        conn.wbuf.extend_from_slice(&self.request);
        conn.send_buffered().map_err(|f| f.to_string())?;
        conn.request_sent = true;
        let (_, response, _) = conn.read_head().map_err(|f| f.to_string())?;
        if (200..300).contains(&response.status) {
            Ok(())
        } else {
            Err(format!("GET {} answered {}", self.path, response.status))
        }
    }
}

/// Starts a checker for each upstream (`members`, with the URLs as given), with `health`'s
/// path, interval and timeout, and `tls` for `https://` upstreams.
pub(crate) fn start(
    members: &[(&Upstream, &str, &Arc<MemberState>)],
    health: &ActiveHealth,
    tls: Option<&Arc<ClientConfig>>,
) -> io::Result<Checkers> {
    let checkers = Checkers {
        stop: Arc::new(Stop::default()),
    };
    let timeouts = Timeouts {
        connect: health.timeout,
        read: health.timeout,
        write: health.timeout,
    };
    for &(upstream, url, state) in members {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: fibra-health\r\nConnection: close\r\n\r\n",
            health.path, upstream.authority
        );
        let probe = Probe {
            upstream: upstream.same(),
            url: url.to_owned(),
            request: request.into_bytes(),
            path: health.path.clone(),
            timeouts,
            tls: tls.cloned(),
        };
        let (state, stop, interval) = (
            Arc::downgrade(state),
            checkers.stop.clone(),
            health.interval,
        );
        std::thread::Builder::new()
            .name("fibra-health".into())
            .spawn(move || run(probe, state, &stop, interval))?;
    }
    Ok(checkers)
}

/// A checker's loop: check, report, wait; until the proxy is gone.
fn run(probe: Probe, state: Weak<MemberState>, stop: &Stop, interval: Duration) {
    let mut first = true;
    loop {
        let started = Instant::now();
        let result = probe.check();
        if stop.is_stopped() {
            return;
        }
        let Some(state) = state.upgrade() else { return };
        let was_up = state.active_up();
        match &result {
            Err(why) if first => log::warn!("upstream {}: down at start: {why}", probe.url),
            Err(why) if was_up => log::warn!("upstream {}: down: {why}", probe.url),
            Ok(()) if !was_up => log::info!("upstream {}: up again", probe.url),
            _ => {}
        }
        state.set_active(result);
        drop(state);
        first = false;
        if stop.wait(interval.saturating_sub(started.elapsed())) {
            return;
        }
    }
}
