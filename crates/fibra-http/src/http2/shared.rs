//! What an HTTP/2 connection's fibers share: the frames waiting to be written, the streams'
//! flow-control windows and received bodies, behind one lock.
//!
//! The owner fiber reads frames into this state and writes `out` to the socket; each
//! stream's fiber (on the same worker) writes its response's frames into `out` and reads its
//! request body out of its stream, waiting on its own [`Notify`] for window or input. The
//! lock is never held across a wait, so on one worker it is never contended: it costs two
//! atomic operations.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use fibra::sync::Notify;
use http::HeaderMap;

use super::frame;

/// Bytes waiting in `out` above which a stream fiber waits for the owner to write them
/// before it adds DATA: bounds what a slow reader costs in memory, whatever its windows.
pub(super) const OUT_LIMIT: usize = 256 * 1024;

/// Streams reset by this side whose late frames are still ignored (RFC 9113 §5.1:
/// frames in flight after our RST_STREAM are not errors).
const RECENT_RESETS: usize = 128;

/// The connection's shared state and the way to wake its owner fiber.
pub(super) struct ConnShared {
    state: Mutex<Shared>,
    /// Wakes the owner fiber (to write `out`, or because a stream ended).
    pub(super) owner: Arc<Notify>,
}

impl ConnShared {
    /// A connection whose owner fiber waits on `owner`.
    pub(super) fn new(owner: Arc<Notify>, max_frame: usize) -> ConnShared {
        ConnShared {
            state: Mutex::new(Shared {
                out: super::conn::new_out(),
                streams: HashMap::default(),
                send_window: 65_535,
                initial_window: 65_535,
                max_frame,
                recv_window: i64::from(super::CONNECTION_WINDOW),
                recv_unacked: 0,
                ended: false,
                owner_woken: false,
                stalled: false,
                recent_resets: VecDeque::new(),
                fibers: 0,
            }),
            owner,
        }
    }

    /// The state, locked.
    pub(super) fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic never happens while the lock is held (no user code runs under it); a
        // poisoned lock would still hold consistent state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the owner fiber unless it was woken since it last looked (`woke` is what
    /// [`Shared::wake_owner`] returned).
    pub(super) fn wake_owner(&self, woke: bool) {
        if woke {
            self.owner.notify_one();
        }
    }
}

/// The state behind the lock.
pub(super) struct Shared {
    /// Frames to write, in order.
    pub(super) out: Vec<u8>,
    /// The streams that are open on either side, or whose fiber has not finished.
    pub(super) streams: HashMap<u32, Stream, BuildHasherDefault<IdHasher>>,
    /// The connection's send window (what the client allows us to send).
    pub(super) send_window: i64,
    /// The client's `SETTINGS_INITIAL_WINDOW_SIZE`.
    pub(super) initial_window: i64,
    /// The client's `SETTINGS_MAX_FRAME_SIZE`.
    pub(super) max_frame: usize,
    /// What the client may still send on the connection before we give window back.
    pub(super) recv_window: i64,
    /// Request body bytes consumed (read or discarded) and not yet given back to the
    /// connection's window.
    pub(super) recv_unacked: u32,
    /// The connection has ended: every stream operation fails.
    pub(super) ended: bool,
    /// The owner fiber has been woken since it last took `out`.
    pub(super) owner_woken: bool,
    /// A stream fiber waits for the connection's window or for room in `out`: wake the
    /// waiting streams when either grows.
    pub(super) stalled: bool,
    /// Streams this side reset lately (see [`RECENT_RESETS`]).
    pub(super) recent_resets: VecDeque<u32>,
    /// Stream fibers that have not finished.
    pub(super) fibers: usize,
}

/// One stream's state.
pub(super) struct Stream {
    /// What the client allows us to send on it.
    pub(super) send_window: i64,
    /// What the client may still send on it before we give window back.
    pub(super) recv_window: i64,
    /// Body bytes consumed and not yet given back to its window.
    pub(super) recv_unacked: u32,
    /// Received DATA the handler has not read.
    pub(super) body: VecDeque<Bytes>,
    /// The client has ended its side (END_STREAM).
    pub(super) recv_closed: bool,
    /// We have ended our side.
    pub(super) sent_end: bool,
    /// The request's `content-length`, checked against its DATA.
    pub(super) content_length: Option<u64>,
    /// Body bytes received.
    pub(super) received: u64,
    /// The request's trailer fields.
    pub(super) trailers: Option<HeaderMap>,
    /// Wakes the stream's fiber.
    pub(super) notify: Arc<Notify>,
    /// The fiber waits for window, input or room in `out`.
    pub(super) waiting: bool,
}

impl Stream {
    /// A stream just opened by HEADERS.
    pub(super) fn new(
        initial_send: i64,
        recv_window: i64,
        recv_closed: bool,
        content_length: Option<u64>,
    ) -> Stream {
        Stream {
            send_window: initial_send,
            recv_window,
            recv_unacked: 0,
            body: VecDeque::new(),
            recv_closed,
            sent_end: false,
            content_length,
            received: 0,
            trailers: None,
            notify: Arc::new(Notify::new()),
            waiting: false,
        }
    }

    /// Wakes the fiber if it waits.
    pub(super) fn wake(&mut self) {
        if std::mem::take(&mut self.waiting) {
            self.notify.notify_one();
        }
    }
}

impl Shared {
    /// Marks the owner woken; true if it was not already (the caller then notifies it,
    /// after unlocking).
    pub(super) fn wake_owner(&mut self) -> bool {
        !std::mem::replace(&mut self.owner_woken, true)
    }

    /// Resets stream `id` from this side with `code` and forgets it; its fiber's next
    /// operation fails. Frames the client sent before it saw the reset are ignored.
    pub(super) fn reset(&mut self, id: u32, code: u32) {
        frame::put_rst(&mut self.out, id, code);
        self.forget(id);
        self.remember_reset(id);
    }

    /// Removes stream `id` (reset by either side): its unread DATA is given back to the
    /// connection's window and its fiber, if it waits, is woken to find it gone.
    pub(super) fn forget(&mut self, id: u32) -> Option<Stream> {
        let mut s = self.streams.remove(&id)?;
        let unread = s.body.iter().map(|b| b.len() as u32).sum::<u32>();
        self.conn_consumed(unread);
        s.wake();
        Some(s)
    }

    /// Notes that this side reset stream `id`.
    pub(super) fn remember_reset(&mut self, id: u32) {
        if self.recent_resets.len() == RECENT_RESETS {
            self.recent_resets.pop_front();
        }
        self.recent_resets.push_back(id);
    }

    /// Whether this side reset stream `id` lately.
    pub(super) fn was_reset(&self, id: u32) -> bool {
        self.recent_resets.contains(&id)
    }

    /// Wakes every stream fiber that waits (the connection's window opened, `out` was
    /// written, or the connection ended).
    pub(super) fn wake_all(&mut self) {
        self.stalled = false;
        for s in self.streams.values_mut() {
            s.wake();
        }
    }

    /// Ends the connection for every stream.
    pub(super) fn end(&mut self) {
        self.ended = true;
        for s in self.streams.values_mut() {
            s.wake();
        }
    }

    /// Gives `n` consumed body bytes of stream `id` back to the windows, with WINDOW_UPDATE
    /// frames once half a window has been consumed.
    pub(super) fn consumed(&mut self, id: u32, n: u32) {
        if let Some(s) = self.streams.get_mut(&id) {
            if !s.recv_closed {
                s.recv_unacked += n;
                if s.recv_unacked >= super::STREAM_WINDOW / 2 {
                    let give = std::mem::take(&mut s.recv_unacked);
                    s.recv_window += i64::from(give);
                    frame::put_window_update(&mut self.out, id, give);
                }
            }
        }
        self.conn_consumed(n);
    }

    /// Gives `n` consumed bytes back to the connection's window (once half of it is used).
    pub(super) fn conn_consumed(&mut self, n: u32) {
        self.recv_unacked += n;
        if self.recv_unacked >= super::CONNECTION_WINDOW / 2 {
            let give = std::mem::take(&mut self.recv_unacked);
            self.recv_window += i64::from(give);
            frame::put_window_update(&mut self.out, 0, give);
        }
    }
}

/// Hashes stream ids (odd, mostly increasing): a multiplication spreads them.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Stream error codes a stream's own operations report, as I/O errors.
pub(super) fn reset_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionReset, "HTTP/2 stream reset")
}

/// The error of an operation on a connection that has ended.
pub(super) fn ended_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "HTTP/2 connection ended")
}
