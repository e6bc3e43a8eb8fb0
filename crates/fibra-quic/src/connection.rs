//! [`Connection`]: a cheap, cloneable handle to one QUIC connection, whose calls park the
//! calling fiber until they can go on.
//!
//! The connection lives in the endpoint's shared state; its handles (every `Connection`
//! clone, and every stream) share one `ConnRef` (in `state`). When the last of them is dropped the
//! connection is closed (application code 0, no reason), as quinn does: a connection nobody
//! can use any more should not wait for its idle timeout.

use crate::state::{self, ConnRef, ConnState, StreamEntry, StreamWaiters, READER, WRITER};
use crate::stream::{RecvStream, SendStream};
use quinn_proto::{ConnectionError, Dir, StreamId};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

/// A QUIC connection, made by [`Endpoint::connect`](crate::Endpoint::connect) or
/// [`Endpoint::accept`](crate::Endpoint::accept).
///
/// Cheap to clone (the clones are the same connection) and `Send`, so fibers on any worker
/// can share it; each blocking call parks only its own fiber. Stream fibers are best spawned
/// on the endpoint's worker ([`Endpoint::worker`](crate::Endpoint::worker)), where the
/// driver runs. The connection stays open while any clone or any of its streams lives, and
/// is closed (code 0) when the last goes.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<ConnRef>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.inner.id)
            .field("remote", &self.remote_address())
            .finish()
    }
}

impl Connection {
    pub(crate) fn new(inner: ConnRef) -> Connection {
        Connection {
            inner: Arc::new(inner),
        }
    }

    /// Waits for the handshake of an outgoing connection to finish (`connect`).
    pub(crate) fn wait_connected(&self) -> io::Result<()> {
        let id = self.inner.id;
        self.inner.wait_for(&self.inner.waiters.handshake, |st| {
            let failed = st.failed();
            let c = st.conn(id)?;
            if let Some(e) = c.lost() {
                return Err(e);
            }
            if c.connected {
                return Ok(Some(()));
            }
            failed.map_or(Ok(None), Err)
        })
    }

    /// Waits until at most `streams` of this side's sending streams may still hold data the
    /// peer has not acknowledged (streams left open count, such as HTTP/3's control
    /// stream). Closing a connection discards what it has not sent, so a server that closes
    /// after its last answers waits for them here first. Fails when the connection is lost
    /// (then nothing more can arrive anyway).
    pub fn wait_acknowledged(&self, streams: usize) -> io::Result<()> {
        let id = self.inner.id;
        self.inner.wait_for(&self.inner.waiters.acked, |st| {
            let failed = st.failed();
            let c = st.conn(id)?;
            if let Some(e) = c.lost() {
                return Err(e);
            }
            if c.conn.streams().send_streams() <= streams {
                return Ok(Some(()));
            }
            failed.map_or(Ok(None), Err)
        })
    }

    /// Waits for the peer to open a bidirectional stream; returns its two halves. Fails once
    /// the connection is over (streams the peer opened before are still handed out first).
    pub fn accept_bi(&self) -> io::Result<(SendStream, RecvStream)> {
        let s = self.accept(Dir::Bi)?;
        Ok(self.both(s))
    }

    /// Waits for the peer to open a unidirectional stream; returns it.
    pub fn accept_uni(&self) -> io::Result<RecvStream> {
        let s = self.accept(Dir::Uni)?;
        Ok(self.recv(s))
    }

    /// Opens a bidirectional stream, waiting while the peer's limit on concurrent streams is
    /// reached. Nothing is sent until the first write (or `finish`).
    pub fn open_bi(&self) -> io::Result<(SendStream, RecvStream)> {
        let s = self.open(Dir::Bi)?;
        Ok(self.both(s))
    }

    /// Opens a unidirectional stream, waiting while the peer's limit is reached.
    pub fn open_uni(&self) -> io::Result<SendStream> {
        let s = self.open(Dir::Uni)?;
        Ok(self.send(s))
    }

    fn both(&self, s: Registered) -> (SendStream, RecvStream) {
        let send = SendStream::new(self.inner.clone(), s.id, Arc::clone(&s.waiters));
        (send, self.recv(s))
    }

    fn send(&self, s: Registered) -> SendStream {
        SendStream::new(self.inner.clone(), s.id, s.waiters)
    }

    fn recv(&self, s: Registered) -> RecvStream {
        RecvStream::new(self.inner.clone(), s.id, s.waiters, s.early)
    }

    fn accept(&self, dir: Dir) -> io::Result<Registered> {
        let id = self.inner.id;
        let notify = self.inner.waiters.accept(dir);
        let stream = self.inner.wait_for(notify, |st| {
            let failed = st.failed();
            let c = st.conn(id)?;
            if let Some(stream) = c.incoming(dir).pop_front() {
                let s = register(c, stream, dir);
                if !c.incoming(dir).is_empty() {
                    // More for the next waiter.
                    notify.notify_one();
                }
                return Ok(Some(s));
            }
            let err = c.lost().or(failed);
            if err.is_some() {
                notify.notify_one();
            }
            err.map_or(Ok(None), Err)
        })?;
        Ok(stream)
    }

    fn open(&self, dir: Dir) -> io::Result<Registered> {
        let id = self.inner.id;
        let notify = self.inner.waiters.open(dir);
        self.inner.wait_for(notify, |st| {
            let failed = st.failed();
            let c = st.conn(id)?;
            if let Some(e) = c.lost().or(failed) {
                notify.notify_one();
                return Err(e);
            }
            match c.conn.streams().open(dir) {
                Some(stream) => {
                    let s = register(c, stream, dir);
                    // The limit may allow another: let the next waiter look.
                    notify.notify_one();
                    Ok(Some(s))
                }
                None => Ok(None),
            }
        })
    }

    /// A client's: whether the server took its 0-RTT data (see `Endpoint::connect_early`);
    /// waits for the handshake first. A server's: whether the client sent 0-RTT data that
    /// this side took, once the handshake is done.
    pub fn accepted_0rtt(&self) -> io::Result<bool> {
        self.wait_connected()?;
        self.inner.with(|c| {
            Ok(if c.conn.side().is_client() {
                c.conn.accepted_0rtt()
            } else {
                c.conn.has_0rtt()
            })
        })
    }

    /// Whether the handshake is still going on (a server's connection offered early, with
    /// 0-RTT, or a client's from `Endpoint::connect_early`).
    pub fn is_handshaking(&self) -> bool {
        self.inner
            .with(|c| Ok(!c.connected && c.error.is_none()))
            .unwrap_or(false)
    }

    /// The peer's address (it may change if the peer migrates).
    pub fn remote_address(&self) -> SocketAddr {
        let mut st = self.inner.shared.lock();
        match st.conns.get_mut(&self.inner.id) {
            Some(c) => c.conn.remote_address(),
            None => SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }

    /// The application protocol agreed in the handshake (ALPN), e.g. `b"h3"`.
    pub fn alpn(&self) -> Option<Vec<u8>> {
        let mut st = self.inner.shared.lock();
        let c = st.conns.get_mut(&self.inner.id)?;
        let data = c.conn.crypto_session().handshake_data()?;
        let data = data
            .downcast::<quinn_proto::crypto::rustls::HandshakeData>()
            .ok()?;
        data.protocol
    }

    /// Closes the connection at once with an application error `code` (below 2⁶²; larger
    /// values are capped) and `reason`, which the peer sees. Data not yet acknowledged is
    /// abandoned: finish the streams and wait for the peer's answer first for a clean end.
    /// Every call on the connection then fails. Closing twice does nothing.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let mut wake = Vec::new();
        self.inner
            .shared
            .lock()
            .close_conn(self.inner.id, code, reason, &mut wake);
        state::wake(&mut wake);
        self.inner.kick();
    }

    /// Why the connection is over, or `None` while it is not: closed by the peer
    /// (`ApplicationClosed` carries its code and reason), by this side (`LocallyClosed`),
    /// timed out, reset, or a protocol error.
    pub fn closed_reason(&self) -> Option<ConnectionError> {
        let st = self.inner.shared.lock();
        st.conns.get(&self.inner.id)?.error.clone()
    }

    /// The error calls on this connection fail with once it is over (see [`Error`](crate::Error)).
    pub fn closed_error(&self) -> Option<io::Error> {
        let st = self.inner.shared.lock();
        st.conns.get(&self.inner.id)?.lost()
    }

    /// The round-trip time quinn-proto currently estimates.
    pub fn rtt(&self) -> std::time::Duration {
        let st = self.inner.shared.lock();
        st.conns
            .get(&self.inner.id)
            .map_or(std::time::Duration::ZERO, |c| c.conn.rtt())
    }

    /// The largest UDP payload the connection now sends (what path MTU discovery found, at
    /// most the configured `max_udp_payload_size`).
    pub fn current_mtu(&self) -> u16 {
        let st = self.inner.shared.lock();
        st.conns
            .get(&self.inner.id)
            .map_or(0, |c| c.conn.current_mtu())
    }

    /// quinn-proto's counters for the connection: packets, bytes and frames of each kind
    /// sent and received, congestion events, the path's RTT and window.
    pub fn stats(&self) -> quinn_proto::ConnectionStats {
        let st = self.inner.shared.lock();
        st.conns
            .get(&self.inner.id)
            .map(|c| c.conn.stats())
            .unwrap_or_default()
    }
}

/// A stream just accepted or opened, with its halves' waiters.
struct Registered {
    id: StreamId,
    /// Opened by the peer with 0-RTT data.
    early: bool,
    waiters: Arc<StreamWaiters>,
}

/// Gives stream `id`'s halves their waiters, where the driver finds them to wake.
fn register(c: &mut ConnState, id: StreamId, dir: Dir) -> Registered {
    let local = id.initiator() == c.conn.side();
    let live = match dir {
        Dir::Bi => READER | WRITER,
        Dir::Uni if local => WRITER,
        Dir::Uni => READER,
    };
    let waiters = Arc::new(StreamWaiters::default());
    c.streams.insert(
        id,
        StreamEntry {
            waiters: Arc::clone(&waiters),
            live,
        },
    );
    Registered {
        id,
        early: c.early.remove(&id),
        waiters,
    }
}
