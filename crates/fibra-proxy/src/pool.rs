//! The per-worker pool of idle upstream connections.
//!
//! Each worker thread keeps its own idle connections per upstream, shared by the fibers it
//! runs: a fiber never migrates and neither does a socket registered with its worker's
//! poller, so the pool needs no lock and no atomic. The most recently used connection is
//! taken first (its peer is the least likely to have timed it out); at most `max_idle` stay
//! per upstream and worker (more for a second after a burst, see [`put`]), and one idle
//! longer than `idle_timeout` is closed instead of used. A connection the upstream closed while idle is noticed when taken (a readiness
//! flag, no system call) and closed.
//!
//! Nothing here waits: the pool is borrowed only between waits of the fiber.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::upstream::UpConn;

/// Idle connections to one upstream, each with when it became idle; oldest first.
type Idle = Vec<(Box<UpConn>, Instant)>;

thread_local! {
    /// This worker's idle connections, by upstream.
    static POOL: RefCell<HashMap<u64, Idle>> = RefCell::new(HashMap::new());
}

/// An idle connection to upstream `id` that looks usable, if the pool has one.
pub(crate) fn take(id: u64, idle_timeout: Duration) -> Option<Box<UpConn>> {
    let now = fibra::time::now();
    // Closed outside the borrow: closing deregisters from the poller, nothing re-enters.
    let mut stale = Vec::new();
    let found = POOL.with_borrow_mut(|pool| {
        let idle = pool.get_mut(&id)?;
        while let Some((mut conn, since)) = idle.pop() {
            if now.saturating_duration_since(since) < idle_timeout && conn.is_idle_and_open() {
                conn.reused = true;
                return Some(conn);
            }
            stale.push(conn);
        }
        None
    });
    drop(stale);
    found
}

/// How long connections over `max_idle` may stay: a burst of responses returns many
/// connections at once that the next burst of requests takes again; closing them at once
/// would make the next burst connect anew (and leave the closed ones in TIME_WAIT).
const OVERFLOW_GRACE: Duration = Duration::from_secs(1);
/// Hard bound on idle connections, as a multiple of `max_idle`.
const OVERFLOW_FACTOR: usize = 4;

/// Keeps a connection that finished a response cleanly, if there is room.
///
/// `max_idle` bounds the idle connections that stay: more may be idle for up to
/// [`OVERFLOW_GRACE`] after a burst (never more than [`OVERFLOW_FACTOR`] times `max_idle`);
/// then the least recently used beyond `max_idle` are closed.
pub(crate) fn put(conn: Box<UpConn>, max_idle: usize, idle_timeout: Duration) {
    if max_idle == 0 {
        return;
    }
    let now = fibra::time::now();
    let mut dropped = Vec::new();
    POOL.with_borrow_mut(|pool| {
        let idle = pool.entry(conn.upstream).or_default();
        let age = |since: &Instant| now.saturating_duration_since(*since);
        // The oldest are at the front: close those past their time, then those over the
        // bound that have had their grace, and one for room at the hard bound.
        let expired = idle
            .iter()
            .take_while(|(_, since)| age(since) >= idle_timeout)
            .count();
        dropped.extend(idle.drain(..expired).map(|(c, _)| c));
        let over = idle.len().saturating_sub(max_idle.saturating_sub(1));
        let stale = idle
            .iter()
            .take(over)
            .take_while(|(_, since)| age(since) >= OVERFLOW_GRACE)
            .count();
        dropped.extend(idle.drain(..stale).map(|(c, _)| c));
        if idle.len() >= max_idle.saturating_mul(OVERFLOW_FACTOR) {
            dropped.push(idle.remove(0).0);
        }
        idle.push((conn, now));
    });
    drop(dropped);
}
