//! The state one endpoint's driver and the application's handles share: quinn-proto's
//! `Endpoint` and `Connection`s, what each connection's waiters wait for, and the `Notify`s
//! that wake them.
//!
//! # Ownership and locking
//! Everything sits in one [`Shared`] behind one `std::sync::Mutex`, taken for short
//! stretches of non-blocking work and **never held across a park**: a blocking call locks,
//! tries its operation, unlocks, and only then parks on a `Notify`. The driver locks once per
//! round (a batch of datagrams, the due timers, the connections touched since the last round)
//! and unlocks before any system call and before waking anybody.
//!
//! A mutex rather than an `Rc<RefCell<…>>`: handles move into other fibers, and
//! `fibra::spawn` places a fiber on any worker (round-robin), so a handle must be `Send`, and
//! the driver and a stream fiber may run on two threads at once. On one worker (spawn stream
//! fibers with `fibra::fiber::Builder::worker(endpoint.worker())`) the lock is never contended
//! and costs two uncontended atomic operations; across workers it stays sound.
//!
//! # Waiter protocol
//! A waiter parks on a `Notify` with a stored permit, so a wake-up that comes between its
//! unlock and its park is kept, not lost:
//! - per stream, one `Notify` for the reader and one for the writer (a `RecvStream` or
//!   `SendStream` is not `Clone`, so each has at most one waiter), both in one
//!   [`StreamWaiters`] allocation with one entry in the connection's map. The driver calls
//!   `notify_one` on `Readable`/`Writable`/`Stopped`/`Finished` events and on connection loss;
//! - per connection, one `Notify` each for the handshake, `accept_bi`, `accept_uni`,
//!   `open_bi` and `open_uni` (a `Connection` is `Clone`, so these may have several
//!   waiters). They pass a baton: the driver wakes one waiter; a waiter that leaves while
//!   what it waited for may still be there for others (streams left in the queue, stream
//!   credit, the connection lost) wakes the next with `notify_one`;
//! - per endpoint, one `Notify` for `accept` (a baton too) and one the driver waits on,
//!   which handles notify after an operation that may have given it something to send.
//!
//! A handle's blocking call is [`ConnRef::wait_for`]: lock, attempt, unlock, park, again.
//! `ConnRef` is what all handles of one connection share; the last one dropped closes it.

use crate::error::Error;
use crate::group::{Mailbox, Membership};
use fibra::sync::Notify;
use quinn_proto::{ConnectionError, ConnectionHandle, Dir, StreamId};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What an endpoint's driver and handles share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Wakes the driver: a handle changed a connection (data queued, a stream finished, a
    /// close); the connection is in [`State::dirty`].
    pub(crate) driver: Arc<Notify>,
    /// `Endpoint::accept`'s waiters (a baton, see the module doc).
    pub(crate) accept: Arc<Notify>,
    /// The worker the driver runs on.
    pub(crate) worker: usize,
    /// The socket's address.
    pub(crate) local_addr: SocketAddr,
    /// The endpoint's place in a group of endpoints on one port, if it is in one.
    pub(crate) membership: Option<Membership>,
    /// Datagrams the group's other members received for this one (see `group`); the driver
    /// takes them each round.
    pub(crate) mailbox: Arc<Mailbox>,
    /// Whether the driver reads the socket (see `Endpoint::set_receiving`).
    pub(crate) receiving: AtomicBool,
    /// A copy of a group member's socket, for an upgrade to hand over.
    pub(crate) socket_copy: Option<OwnedFd>,
    /// Packets (or GSO trains) the socket refused outright, dropped (see
    /// `Endpoint::packets_refused`).
    pub(crate) refused: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        state: State,
        worker: usize,
        local_addr: SocketAddr,
        membership: Option<Membership>,
        socket_copy: Option<OwnedFd>,
    ) -> Shared {
        let driver = Arc::new(Notify::new());
        Shared {
            state: Mutex::new(state),
            mailbox: Arc::new(Mailbox::new(driver.clone())),
            driver,
            accept: Arc::new(Notify::new()),
            worker,
            local_addr,
            membership,
            receiving: AtomicBool::new(true),
            socket_copy,
            refused: AtomicU64::new(0),
        }
    }

    /// Locks the state. A panic while it was held (a bug in quinn-proto or here) leaves
    /// the lock poisoned; the state is used as it is rather than panicking every fiber.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The state behind [`Shared`]'s lock.
pub(crate) struct State {
    pub(crate) endpoint: quinn_proto::Endpoint,
    /// The connections by this crate's id (ids are never reused, unlike quinn-proto's
    /// handles, so a stale handle can never reach another connection).
    pub(crate) conns: FxHashMap<u64, ConnState>,
    /// quinn-proto's handle → our id, for connections quinn-proto still knows (until drained).
    pub(crate) by_handle: FxHashMap<ConnectionHandle, u64>,
    next_id: u64,
    /// Server connections whose handshake is done, oldest first, for `accept`.
    pub(crate) incoming: VecDeque<u64>,
    /// Connections changed since the driver last looked (each at most once: `ConnState::dirty`).
    pub(crate) dirty: Vec<u64>,
    /// Writers whose [`SendStream::wait_sent`](crate::SendStream::wait_sent) is over, oldest
    /// first, to be woken a few per round (`driver::SENT_WAKES_PER_ROUND`).
    pub(crate) sent_ready: VecDeque<Wake>,
    /// No new connections: `Endpoint::close` was called or every `Endpoint` handle dropped.
    pub(crate) closed: bool,
    /// Every `Endpoint` handle is gone: the driver ends once no connection is left. (While
    /// a handle lives, a closed endpoint's driver goes on refusing new connections.)
    pub(crate) released: bool,
    /// Why the driver stopped, once it has; every waiter then fails with it.
    pub(crate) failure: Option<String>,
    /// Server connections whose handshake is in progress: those with
    /// [`ConnState::handshaking`] set.
    pub(crate) handshakes: usize,
    /// At or above this many [`handshakes`](State::handshakes), a new client whose address is
    /// not validated gets a Retry instead of a handshake (`Config::max_handshakes_before_retry`).
    pub(crate) retry_bound: usize,
    /// Retry packets sent, ever.
    pub(crate) retries_sent: u64,
    /// Datagrams received for another member of the group and handed to it, ever.
    pub(crate) forwarded_out: u64,
    /// Datagrams another member handed to this one, ever.
    pub(crate) forwarded_in: u64,
    /// Datagrams handed to the group's peer, ever.
    pub(crate) to_peer: u64,
}

/// One connection, with what its handles wait for.
pub(crate) struct ConnState {
    pub(crate) conn: quinn_proto::Connection,
    pub(crate) handle: ConnectionHandle,
    pub(crate) remote: SocketAddr,
    /// The server name dialled (clients only), for error messages.
    pub(crate) server_name: Option<String>,
    pub(crate) waiters: Arc<ConnWaiters>,
    pub(crate) connected: bool,
    /// A server connection whose handshake is neither done nor abandoned (counted in
    /// [`State::handshakes`]). Cleared, and the count lowered, once quinn-proto says it is
    /// no longer handshaking: connected, or lost.
    pub(crate) handshaking: bool,
    /// Why the connection is over, once it is.
    pub(crate) error: Option<ConnectionError>,
    /// quinn-proto has forgotten it (its `Drained` event was forwarded).
    pub(crate) drained: bool,
    /// The application holds a handle (`Connection` or a stream); while it does the entry
    /// stays, so a handle always finds it.
    pub(crate) held: bool,
    /// In [`State::incoming`].
    pub(crate) queued: bool,
    /// Offered to `accept` (a server connection is offered once).
    pub(crate) announced: bool,
    /// In [`State::dirty`].
    pub(crate) dirty: bool,
    /// The deadline last handed to the driver's timers (`poll_timeout`).
    pub(crate) timeout: Option<Instant>,
    /// Streams the peer opened, not yet accepted by the application.
    pub(crate) incoming_bi: VecDeque<StreamId>,
    pub(crate) incoming_uni: VecDeque<StreamId>,
    /// Streams the peer opened with 0-RTT data (before the handshake was done) not yet
    /// accepted by the application.
    pub(crate) early: rustc_hash::FxHashSet<StreamId>,
    /// The waiters of each stream with a live handle, and which of its halves have one.
    pub(crate) streams: FxHashMap<StreamId, StreamEntry>,
    /// Streams whose writer waits in [`SendStream::wait_sent`](crate::SendStream::wait_sent)
    /// for its unsent bytes to fall to a mark: checked each time the driver has made the
    /// connection's packets.
    pub(crate) sent_watch: Vec<(StreamId, u64)>,
}

/// The `Notify` of each half of one stream: one allocation for both, shared by the
/// stream's handles and its entry in [`ConnState::streams`].
#[derive(Default)]
pub(crate) struct StreamWaiters {
    /// The `RecvStream`'s.
    pub(crate) reader: Notify,
    /// The `SendStream`'s.
    pub(crate) writer: Notify,
}

/// A stream's entry in [`ConnState::streams`].
pub(crate) struct StreamEntry {
    pub(crate) waiters: Arc<StreamWaiters>,
    /// [`READER`] and [`WRITER`]: the halves with a live handle. The entry goes with the
    /// last of them.
    pub(crate) live: u8,
}

/// A stream's receiving half, in [`StreamEntry::live`].
pub(crate) const READER: u8 = 1;
/// A stream's sending half, in [`StreamEntry::live`].
pub(crate) const WRITER: u8 = 2;

/// A waiter to wake once the lock is released.
pub(crate) enum Wake {
    /// A connection's or an endpoint's `Notify`.
    Notify(Arc<Notify>),
    /// A stream's reader.
    Reader(Arc<StreamWaiters>),
    /// A stream's writer.
    Writer(Arc<StreamWaiters>),
}

impl Wake {
    fn notify_one(&self) {
        match self {
            Wake::Notify(n) => n.notify_one(),
            Wake::Reader(w) => w.reader.notify_one(),
            Wake::Writer(w) => w.writer.notify_one(),
        }
    }
}

/// The connection-level waits (batons, see the module doc). Each an `Arc` so that the
/// driver can collect the ones to wake under the lock and wake them after it.
#[derive(Default)]
pub(crate) struct ConnWaiters {
    pub(crate) handshake: Arc<Notify>,
    /// `wait_acknowledged`: rung when a sending stream is done (acknowledged or stopped).
    pub(crate) acked: Arc<Notify>,
    accept_bi: Arc<Notify>,
    accept_uni: Arc<Notify>,
    open_bi: Arc<Notify>,
    open_uni: Arc<Notify>,
}

impl ConnWaiters {
    /// `accept_bi`'s or `accept_uni`'s waiters.
    pub(crate) fn accept(&self, dir: Dir) -> &Arc<Notify> {
        match dir {
            Dir::Bi => &self.accept_bi,
            Dir::Uni => &self.accept_uni,
        }
    }

    /// `open_bi`'s or `open_uni`'s waiters.
    pub(crate) fn open(&self, dir: Dir) -> &Arc<Notify> {
        match dir {
            Dir::Bi => &self.open_bi,
            Dir::Uni => &self.open_uni,
        }
    }

    /// Adds one waiter of each kind to `wake` (each passes it on).
    fn wake_all(&self, wake: &mut Vec<Wake>) {
        wake.extend(
            [
                &self.handshake,
                &self.acked,
                &self.accept_bi,
                &self.accept_uni,
                &self.open_bi,
                &self.open_uni,
            ]
            .into_iter()
            .map(|n| Wake::Notify(Arc::clone(n))),
        );
    }
}

impl State {
    pub(crate) fn new(endpoint: quinn_proto::Endpoint, retry_bound: usize) -> State {
        State {
            endpoint,
            conns: FxHashMap::default(),
            by_handle: FxHashMap::default(),
            next_id: 0,
            incoming: VecDeque::new(),
            dirty: Vec::new(),
            sent_ready: VecDeque::new(),
            closed: false,
            released: false,
            failure: None,
            handshakes: 0,
            retry_bound,
            retries_sent: 0,
            forwarded_out: 0,
            forwarded_in: 0,
            to_peer: 0,
        }
    }

    /// Adds a connection quinn-proto has just made; returns its id. It is dirty, so the driver
    /// sends its first packets.
    pub(crate) fn insert(
        &mut self,
        handle: ConnectionHandle,
        conn: quinn_proto::Connection,
        server_name: Option<String>,
        held: bool,
    ) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let remote = conn.remote_address();
        let handshaking = conn.side().is_server();
        self.handshakes += usize::from(handshaking);
        self.conns.insert(
            id,
            ConnState {
                conn,
                handle,
                remote,
                server_name,
                waiters: Arc::new(ConnWaiters::default()),
                connected: false,
                handshaking,
                error: None,
                drained: false,
                held,
                queued: false,
                announced: false,
                dirty: false,
                timeout: None,
                incoming_bi: VecDeque::new(),
                incoming_uni: VecDeque::new(),
                early: rustc_hash::FxHashSet::default(),
                streams: FxHashMap::default(),
                sent_watch: Vec::new(),
            },
        );
        self.by_handle.insert(handle, id);
        self.mark_dirty(id);
        id
    }

    /// Queues connection `id` for the driver's next round.
    pub(crate) fn mark_dirty(&mut self, id: u64) {
        if let Some(c) = self.conns.get_mut(&id) {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push(id);
            }
        }
    }

    /// The error a waiter gets once the driver has stopped, if it has.
    pub(crate) fn failed(&self) -> Option<io::Error> {
        self.failure
            .as_ref()
            .map(|why| Error::EndpointClosed(why.clone()).into())
    }

    /// Connection `id` for a handle that holds it. The entry stays while a handle is held, so
    /// it is missing only if the driver stopped and the state was torn down.
    pub(crate) fn conn(&mut self, id: u64) -> io::Result<&mut ConnState> {
        match self.conns.get_mut(&id) {
            Some(c) => Ok(c),
            None => Err(Error::EndpointClosed("the connection is gone".into()).into()),
        }
    }

    /// Connection `id` for a handle's operation: the driver's failure once it has stopped,
    /// else [`conn`](State::conn).
    pub(crate) fn running_conn(&mut self, id: u64) -> io::Result<&mut ConnState> {
        if let Some(e) = self.failed() {
            return Err(e);
        }
        self.conn(id)
    }

    /// Closes connection `id` from this side (a no-op once it is over) and adds its waiters
    /// to `wake`: they find it closed.
    pub(crate) fn close_conn(&mut self, id: u64, code: u64, reason: &[u8], wake: &mut Vec<Wake>) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if c.error.is_none() {
            c.conn.close(
                Instant::now(),
                crate::config::varint(code),
                bytes::Bytes::copy_from_slice(reason),
            );
            c.error = Some(ConnectionError::LocallyClosed);
            c.wake_everyone(wake);
        }
        self.mark_dirty(id);
    }
}

impl ConnState {
    /// The error for an operation on this connection once it is over.
    pub(crate) fn lost(&self) -> Option<io::Error> {
        let reason = self.error.clone()?;
        Some(if self.connected {
            Error::ConnectionLost {
                remote: self.remote,
                reason,
            }
            .into()
        } else {
            Error::HandshakeFailed {
                remote: self.remote,
                server_name: self.server_name.clone().unwrap_or_default(),
                reason,
            }
            .into()
        })
    }

    /// Adds every waiter of this connection to `wake`: it is over, or the driver stopped.
    pub(crate) fn wake_everyone(&self, wake: &mut Vec<Wake>) {
        self.waiters.wake_all(wake);
        for entry in self.streams.values() {
            if entry.live & READER != 0 {
                wake.push(Wake::Reader(Arc::clone(&entry.waiters)));
            }
            if entry.live & WRITER != 0 {
                wake.push(Wake::Writer(Arc::clone(&entry.waiters)));
            }
        }
    }

    /// Whether stream `id`'s writer still has more than `mark` bytes that no packet has
    /// carried yet: what [`SendStream::wait_sent`](crate::SendStream::wait_sent) waits on.
    /// False once there is nothing to wait for: the peer stopped the stream, or quinn-proto
    /// has forgotten it (finished and acknowledged, or reset).
    pub(crate) fn unsent_above(&mut self, id: StreamId, mark: u64) -> bool {
        let send = self.conn.send_stream(id);
        matches!(
            (send.stopped(), send.unsent()),
            (Ok(None), Ok(unsent)) if unsent > mark
        )
    }

    /// Stream `id`'s waiters for `half` ([`READER`] or [`WRITER`]) if that half has a live
    /// handle, to wake.
    pub(crate) fn stream_waiter(&self, id: StreamId, half: u8) -> Option<Wake> {
        let entry = self.streams.get(&id).filter(|e| e.live & half != 0)?;
        let waiters = Arc::clone(&entry.waiters);
        Some(if half == READER {
            Wake::Reader(waiters)
        } else {
            Wake::Writer(waiters)
        })
    }

    /// The handle of stream `id`'s `half` is gone: the entry goes with the last half.
    pub(crate) fn release_stream(&mut self, id: StreamId, half: u8) {
        if let std::collections::hash_map::Entry::Occupied(mut e) = self.streams.entry(id) {
            e.get_mut().live &= !half;
            if e.get().live == 0 {
                e.remove();
            }
        }
    }

    /// The queue of accepted-by-quinn, not-yet-accepted-by-the-application streams.
    pub(crate) fn incoming(&mut self, dir: Dir) -> &mut VecDeque<StreamId> {
        match dir {
            Dir::Bi => &mut self.incoming_bi,
            Dir::Uni => &mut self.incoming_uni,
        }
    }
}

/// What every handle of one connection shares; dropping the last one closes it.
pub(crate) struct ConnRef {
    pub(crate) shared: Arc<Shared>,
    /// The connection's id in `State::conns`.
    pub(crate) id: u64,
    pub(crate) waiters: Arc<ConnWaiters>,
}

impl ConnRef {
    /// Runs `attempt` under the lock until it gives a value or an error, parking on `notify`
    /// in between (never holding the lock while parked). `attempt` returns `Ok(None)` for
    /// "not yet"; whatever wakes `notify` after it said so is kept as a permit, so the next
    /// park returns at once.
    pub(crate) fn wait_for<T>(
        &self,
        notify: &Notify,
        mut attempt: impl FnMut(&mut State) -> io::Result<Option<T>>,
    ) -> io::Result<T> {
        loop {
            let tried = attempt(&mut self.shared.lock());
            if let Some(v) = tried? {
                return Ok(v);
            }
            park(notify)?;
        }
    }

    /// Runs `f` on the connection under the lock, failing once the driver has stopped.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut ConnState) -> io::Result<T>) -> io::Result<T> {
        f(self.shared.lock().running_conn(self.id)?)
    }

    /// [`with`](ConnRef::with), then marks the connection for the driver's next round under
    /// the same lock (also when `f` failed): for an operation that may have given it
    /// something to send. The caller then [`kick`](ConnRef::kick)s the driver.
    pub(crate) fn with_dirty<T>(
        &self,
        f: impl FnOnce(&mut ConnState) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut st = self.shared.lock();
        let r = f(st.running_conn(self.id)?);
        st.mark_dirty(self.id);
        r
    }

    /// Tells the driver the connection changed (it may have packets to send).
    pub(crate) fn kick(&self) {
        self.shared.driver.notify_one();
    }
}

impl Drop for ConnRef {
    fn drop(&mut self) {
        let mut woken = Vec::new();
        {
            let mut st = self.shared.lock();
            if let Some(c) = st.conns.get_mut(&self.id) {
                c.held = false;
            }
            st.close_conn(self.id, 0, b"", &mut woken);
        }
        wake(&mut woken);
        self.kick();
    }
}

/// Wakes what a locked stretch collected, once the lock is released.
pub(crate) fn wake(list: &mut Vec<Wake>) {
    for n in list.drain(..) {
        n.notify_one();
    }
}

/// Parks the calling fiber (or thread) on `notify` until it is notified or has a stored
/// permit. Fails if the fiber is being cancelled (its runtime is shutting down): `Notify`
/// then returns at once, and a retry loop would spin.
pub(crate) fn park(notify: &Notify) -> io::Result<()> {
    // `Duration::MAX` is "no deadline": `false` can only mean cancelled.
    if notify.wait_timeout(Duration::MAX) {
        Ok(())
    } else {
        Err(Error::EndpointClosed("the fibra runtime is shutting down".into()).into())
    }
}
