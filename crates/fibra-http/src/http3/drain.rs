//! Graceful shutdown of HTTP/3 connections (RFC 9114 §5.2): [`Drain`], handed to every
//! connection an endpoint serves ([`serve_connection_draining`]).
//!
//! [`Drain::begin`] makes each connection send GOAWAY on its control stream in two steps
//! (RFC 9114 §5.2):
//! 1. a first GOAWAY naming the largest request stream id (2⁶²−4): the client opens no new
//!    requests, and every stream it opened before reading it is still taken;
//! 2. [`GOAWAY_SETTLE`] later (h2o's wait; [`Drain::with_settle`] sets another), time for
//!    those streams to arrive, the final GOAWAY naming the first request stream not taken.
//!    Every request before it is answered; any later one is refused with
//!    H3_REQUEST_REJECTED, which tells the client it was not processed and may be retried
//!    elsewhere.
//!
//! The connection closes with H3_NO_ERROR once the final GOAWAY is out and its last request
//! has been answered. [`Drain::close_all`] ends the connections still open at once (a grace
//! period spent).
//!
//! Per connection a watcher fiber owns the control stream and waits on the connection's
//! `Notify`, which [`Drain`], the end of a request and the end of the connection ring. The
//! stream ids and counts it needs are under one small lock with the accepting loop's, so
//! the GOAWAY id and the streams taken cannot disagree.
//!
//! [`serve_connection_draining`]: super::conn::serve_connection_draining

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use fibra::sync::Notify;
use fibra_quic::{Connection, SendStream};

use super::frame;
use super::H3Error;

/// How long a connection takes streams after its first GOAWAY, before the final one: the
/// streams its client opened before reading the first arrive meanwhile.
pub(super) const GOAWAY_SETTLE: Duration = Duration::from_secs(1);

/// The id of the first GOAWAY: the largest a client's request stream can have, so that it
/// refuses nothing (RFC 9114 §5.2).
const ANY_REQUEST: u64 = (1 << 62) - 4;

/// The word to every connection it was handed to that the server is shutting down. Cheap to
/// clone (the clones are the same signal). See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Drain {
    inner: Arc<Mutex<Registry>>,
}

#[derive(Debug, Default)]
struct Registry {
    draining: bool,
    closing: bool,
    /// Between the two GOAWAYs; `None`: [`GOAWAY_SETTLE`].
    settle: Option<Duration>,
    /// The connections served with this drain; those that ended are pruned as others join.
    conns: Vec<Weak<ConnDrain>>,
}

impl Drain {
    /// A drain not begun.
    pub fn new() -> Drain {
        Drain::default()
    }

    /// A drain not begun whose connections wait `settle` between their first GOAWAY and
    /// the final one (1 s otherwise): about a round trip and the client's delay in reading
    /// the first is enough, and a request is refused only if it arrives later.
    pub fn with_settle(settle: Duration) -> Drain {
        let drain = Drain::default();
        drain.lock().settle = Some(settle);
        drain
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every connection sends GOAWAY (in two steps, see the module docs), answers the
    /// requests it took, then closes; one served from now on does so at once.
    pub fn begin(&self) {
        self.signal(false);
    }

    /// Closes every connection still open (H3_NO_ERROR), requests or not: the end of a
    /// grace period. Implies [`Drain::begin`].
    pub fn close_all(&self) {
        self.signal(true);
    }

    /// Sets draining (and `closing`, if asked) here and on every live connection.
    fn signal(&self, closing: bool) {
        let conns = {
            let mut r = self.lock();
            r.draining = true;
            r.closing |= closing;
            live(&mut r.conns)
        };
        for c in conns {
            {
                let mut st = c.lock();
                st.draining = true;
                st.closing |= closing;
            }
            if closing {
                // Directly: the watcher may be waiting for acknowledgements that never come.
                c.conn.close(H3Error::NoError.code(), b"");
            }
            c.notify.notify_one();
        }
    }

    /// Whether [`Drain::begin`] has been called.
    pub fn is_draining(&self) -> bool {
        self.lock().draining
    }

    /// Registers a connection, set at once if the drain has begun.
    pub(super) fn register(&self, conn: Connection) -> Arc<ConnDrain> {
        let mut r = self.lock();
        let c = Arc::new(ConnDrain {
            conn,
            settle: r.settle.unwrap_or(GOAWAY_SETTLE),
            state: Mutex::default(),
            notify: Notify::new(),
        });
        {
            let mut st = c.lock();
            st.draining = r.draining;
            st.closing = r.closing;
        }
        r.conns.retain(|w| w.strong_count() > 0);
        r.conns.push(Arc::downgrade(&c));
        c
    }
}

/// The connections of `conns` still alive.
fn live(conns: &mut Vec<Weak<ConnDrain>>) -> Vec<Arc<ConnDrain>> {
    conns.retain(|w| w.strong_count() > 0);
    conns.iter().filter_map(Weak::upgrade).collect()
}

/// One connection's side of the drain.
#[derive(Debug)]
pub(super) struct ConnDrain {
    conn: Connection,
    /// Between the first GOAWAY and the final one.
    settle: Duration,
    state: Mutex<Requests>,
    /// Rung by the drain, by a request's end once GOAWAY is out, and by the connection's end.
    notify: Notify,
}

#[derive(Debug, Default)]
struct Requests {
    draining: bool,
    closing: bool,
    /// The id after the last request stream taken (0: none yet).
    next_id: u64,
    /// When the first GOAWAY went out, once it has: the final one is due the connection's
    /// `settle` later.
    announced: Option<Instant>,
    /// The id sent in the final GOAWAY, once sent: streams from it on are refused.
    goaway: Option<u64>,
    /// Requests taken and not yet answered.
    active: usize,
    /// The connection is over: the watcher ends.
    ended: bool,
}

impl ConnDrain {
    fn lock(&self) -> MutexGuard<'_, Requests> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether request stream `id` may be served (the watcher has not named an earlier id
    /// in GOAWAY); if so it counts as taken until [`ConnDrain::answered`].
    pub(super) fn take(&self, id: u64) -> bool {
        let mut st = self.lock();
        if st.goaway.is_some_and(|g| id >= g) {
            return false;
        }
        st.next_id = st.next_id.max(id + 4);
        st.active += 1;
        true
    }

    /// A request taken has been answered (or failed).
    pub(super) fn answered(&self) {
        let mut st = self.lock();
        st.active -= 1;
        let last = st.active == 0 && st.goaway.is_some();
        drop(st);
        if last {
            self.notify.notify_one();
        }
    }

    /// The connection is over (its accepting loop ended).
    pub(super) fn ended(&self) {
        self.lock().ended = true;
        self.notify.notify_one();
    }

    /// The watcher fiber: holds the control stream open as long as the connection, sends
    /// the two GOAWAYs when the drain begins and closes the connection once the requests
    /// it took are answered (or at once when the drain closes everything).
    pub(super) fn watch(&self, mut control: SendStream) {
        loop {
            let mut st = self.lock();
            if st.ended {
                return;
            }
            if st.closing {
                drop(st);
                self.conn.close(H3Error::NoError.code(), b"");
                return;
            }
            if st.goaway.is_some() && st.active == 0 {
                drop(st);
                // The last answers must arrive first: a close discards what is unsent. Only
                // the control stream may stay unacknowledged (it never ends). A client that
                // never acknowledges is cut off by `Drain::close_all` or its idle timeout.
                let _ = self.conn.wait_acknowledged(1);
                self.conn.close(H3Error::NoError.code(), b"");
                return;
            }
            if !st.draining || st.goaway.is_some() {
                drop(st);
                self.notify.wait();
                continue;
            }
            let id = match st.announced {
                None => {
                    st.announced = Some(Instant::now());
                    ANY_REQUEST
                }
                Some(at) => {
                    let left = self.settle.saturating_sub(at.elapsed());
                    if !left.is_zero() {
                        drop(st);
                        self.notify.wait_timeout(left);
                        continue;
                    }
                    st.goaway = Some(st.next_id);
                    st.next_id
                }
            };
            drop(st);
            let mut out = Vec::with_capacity(16);
            frame::put_goaway(&mut out, id);
            // A failed write means the connection is gone: its loop's end rings.
            let _ = control.write_all(&out);
        }
    }
}
