//! Buffered I/O of a connection: the state a connection and its request bodies share
//! ([`Shared`]: the read and write buffers and the transport), writing the buffered responses
//! out (`flush`), reading what has arrived (`make_room`, `try_read_in`), and lending the
//! worker's hot buffers for a burst ([`HotBuffers`]).

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::decode::{BodyError, BodyState};
use crate::settings::Settings;
use crate::transport::Transport;

/// The connection state a `Body` and the loop share.
///
/// `repr(C)` keeps the fields every request touches together at the front, right after the
/// `Rc` counts and the `RefCell` flag: with those 24 bytes, the fields down to `read_timeout`
/// end at byte 192, so a keep-alive request reads three cache lines of the state instead of
/// four (the allocator's blocks of this size, 320 bytes, start on a line: `bench/cachesim.sh`
/// counts one L1 miss fewer per request). The decoder of a chunked body is boxed for this
/// (see [`BodyState`]).
#[repr(C)]
pub(super) struct Shared<T> {
    /// `None` after an upgrade took the transport.
    pub(super) io: Option<T>,
    pub(super) rpos: usize,
    pub(super) rend: usize,
    /// Read buffer; bytes `rpos..rend` are received and not yet consumed.
    pub(super) rbuf: Vec<u8>,
    /// Responses composed and not yet written.
    pub(super) wbuf: Vec<u8>,
    /// Number of the current request; a `Body` of an older one reads nothing.
    pub(super) seq: u64,
    /// When the head being received must be complete (`None` between requests).
    pub(super) head_deadline: Option<Instant>,
    /// No request has been received yet.
    pub(super) first: bool,
    /// The connection opened with the HTTP/2 preface: the loop ends, and the connection is
    /// served as HTTP/2 from the bytes at `rpos`.
    pub(super) h2: bool,
    /// `Expect: 100-continue` not yet answered.
    pub(super) continue_pending: bool,
    pub(super) body: BodyState,
    pub(super) body_error: Option<BodyError>,
    /// The read timeout last set on the transport (skips redundant sets).
    pub(super) read_timeout: Option<Duration>,
    pub(super) body_read_timeout: Duration,
    pub(super) max_body: u64,
    pub(super) max_trailer: usize,
    pub(super) peer: Option<SocketAddr>,
    /// The TLS server name (SNI), taken from the transport with `peer`.
    pub(super) server_name: Option<Arc<str>>,
    /// The server's acceptor the connection came through ([`Settings::listener`]).
    pub(super) listener: usize,
    /// The body bytes of the last response, when not its body's length (a streamed body, a
    /// file shorter than its range): for the access log.
    pub(super) body_sent: Option<u64>,
    /// The trailer fields of a chunked request body and the request's number, until the
    /// handler takes them (boxed: most connections never see any).
    pub(super) trailers: Option<Box<(u64, http::HeaderMap)>>,
}

pub(super) fn not_connected() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "transport taken by an upgrade")
}

// The calls every wake-up makes (read what arrived, flush the answers, re-arm the read timeout,
// lend the hot buffers) are forced inline, down through the transport to the system call.
// LLVM keeps them out of line otherwise, and each call spills and reloads the same registers:
// inlined, a keep-alive request runs about 10% fewer instructions.
impl<T: Transport> Shared<T> {
    pub(super) fn io(&mut self) -> io::Result<&mut T> {
        self.io.as_mut().ok_or_else(not_connected)
    }

    /// The received bytes not yet consumed (the start of the next head, or of a body).
    #[inline(always)]
    pub(super) fn pending(&self) -> &[u8] {
        &self.rbuf[self.rpos..self.rend]
    }

    /// Whether received bytes wait to be consumed.
    #[inline(always)]
    pub(super) fn has_pending(&self) -> bool {
        self.rpos < self.rend
    }

    /// Marks the first `n` pending bytes consumed.
    #[inline(always)]
    pub(super) fn consume(&mut self, n: usize) {
        self.rpos += n;
    }

    /// Free space at the end of the read buffer.
    #[inline(always)]
    pub(super) fn room(&self) -> usize {
        self.rbuf.len() - self.rend
    }

    // Forced inline: runs on every wake-up (see the comment on this impl block).
    #[inline(always)]
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        // One `write` sends it all but for a full socket buffer (or a signal).
        let r = match io.write(&self.wbuf) {
            Ok(n) if n == self.wbuf.len() => Ok(()),
            r => {
                super::cold_path();
                match r {
                    Ok(n) => io.write_all(&self.wbuf[n..]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => io.write_all(&self.wbuf),
                    Err(e) => Err(e),
                }
            }
        };
        self.wbuf.clear();
        r
    }

    // Forced inline: runs on every wake-up (see the comment on this impl block).
    #[inline(always)]
    pub(super) fn set_read_timeout(&mut self, d: Duration) {
        if self.read_timeout != Some(d) {
            super::cold_path();
            if let Some(io) = &self.io {
                let _ = io.set_read_timeout(Some(d.max(Duration::from_millis(1))));
            }
            self.read_timeout = Some(d);
        }
    }

    /// Makes room at the end of the read buffer, growing it up to `cap`. False if full.
    // Forced inline: runs on every wake-up (see the comment on this impl block).
    #[inline(always)]
    pub(super) fn make_room(&mut self, cap: usize) -> bool {
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        } else if self.rbuf.len() - self.rend < self.rbuf.len() / 4 && self.rpos > 0 {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
        }
        if self.rend == self.rbuf.len() {
            if self.rbuf.len() >= cap {
                return false;
            }
            let new_len = (self.rbuf.len() * 2).min(cap);
            self.rbuf.resize(new_len, 0);
        }
        true
    }

    /// Reads the bytes that have arrived into the read buffer, without waiting (see
    /// [`Transport::try_read`]).
    // Forced inline: runs on every wake-up (see the comment on this impl block).
    #[inline(always)]
    pub(super) fn try_read_in(&mut self) -> io::Result<usize> {
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let n = io.try_read(&mut self.rbuf[self.rend..])?;
        self.rend += n;
        Ok(n)
    }

    /// Reads more bytes into the read buffer.
    pub(super) fn read_in(&mut self) -> io::Result<usize> {
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let n = io.read(&mut self.rbuf[self.rend..])?;
        self.rend += n;
        Ok(n)
    }
}

/// A new connection's state, with the read timeout of its first head set.
pub(super) fn open<T: Transport>(io: T, settings: &Settings) -> Rc<RefCell<Shared<T>>> {
    let start = Instant::now();
    let _ = io.set_write_timeout(Some(settings.write_timeout));
    let peer = io.peer_addr();
    let shared = Rc::new(RefCell::new(Shared {
        io: Some(io),
        // Both buffers are allocated when first needed: requests are read into, and responses
        // composed in, buffers the worker lends (`HotBuffers`); a connection keeps bytes of its
        // own only between reads (a partial head) or while its handler blocks.
        rbuf: Vec::new(),
        rpos: 0,
        rend: 0,
        wbuf: Vec::new(),
        head_deadline: Some(start + settings.header_timeout),
        first: true,
        h2: false,
        seq: 0,
        body: BodyState::Done,
        continue_pending: false,
        body_error: None,
        body_read_timeout: settings.body_read_timeout,
        max_body: settings.max_body_bytes,
        max_trailer: settings.max_head_bytes,
        read_timeout: None,
        peer,
        server_name: None,
        listener: settings.listener,
        body_sent: None,
        trailers: None,
    }));
    // The first read waits for at most the head deadline (later ones: see `arm_read`).
    shared
        .borrow_mut()
        .set_read_timeout(settings.header_timeout);
    shared
}

/// Size of a connection's read buffer (at least 512 bytes, unless both limits are smaller),
/// and how far it may grow to hold one request head.
pub(super) fn read_sizes(settings: &Settings) -> (usize, usize) {
    let cap = settings.max_head_bytes.max(settings.read_buffer_bytes);
    (settings.read_buffer_bytes.max(512).min(cap), cap)
}

thread_local! {
    /// The worker's read and write buffers, lent to the connection that is serving requests
    /// (see [`HotBuffers`]). While lent, a slot holds the borrowing connection's own buffer.
    static HOT: RefCell<Hot> = const {
        RefCell::new(Hot {
            r: Vec::new(),
            w: Vec::new(),
            r_lent: false,
            w_lent: false,
        })
    };
}

struct Hot {
    r: Vec<u8>,
    w: Vec<u8>,
    r_lent: bool,
    w_lent: bool,
}

/// This thread's [`HOT`] slots, borrowed for a loan or its return; `None` while they are
/// borrowed already (cannot happen: neither runs inside the other) or the thread is ending.
///
/// Through a pointer rather than `with_borrow_mut`'s closure: LLVM kept that closure out of
/// line, and the call packed six pointers into its environment on every wake-up.
#[inline(always)]
fn hot_slots() -> Option<std::cell::RefMut<'static, Hot>> {
    let cell: *const RefCell<Hot> = HOT.try_with(|c| c as *const _).ok()?;
    // SAFETY: `try_with` returned, so this thread's value is alive; it lives until the
    // thread's thread-locals are destroyed, which cannot happen while this thread runs a
    // burst, and the borrow is only held within `lend` or the loan's `drop`.
    let cell = unsafe { &*cell };
    cell.try_borrow_mut().ok()
}

/// Lends the worker's buffers to a connection for one burst of reading and answering, so
/// requests are read into, and responses composed in, memory that is already cached instead
/// of the connection's own (cold, or not even allocated) buffers. Lending swaps the buffers:
/// the connection's own wait in the worker's slot until the burst ends.
///
/// The read buffer is lent only when the connection has no unconsumed input; whatever is
/// left unconsumed at the end (a partial head, an early exit) is moved to the connection's own
/// buffer. The burst ends with a flush, so the write buffer comes back empty; anything left in
/// it is moved to the connection's own buffer first. If a handler blocks while holding them,
/// other connections meanwhile use buffers of their own.
pub(super) struct HotBuffers<'a, T: Transport> {
    shared: &'a RefCell<Shared<T>>,
    /// Which buffers were lent.
    r: bool,
    w: bool,
    rsize: usize,
}

impl<'a, T: Transport> HotBuffers<'a, T> {
    // Forced inline: runs once per burst, like the wake-up calls of `Shared` above.
    #[inline(always)]
    pub(super) fn lend(shared: &'a RefCell<Shared<T>>, settings: &Settings) -> Self {
        let (rsize, _) = read_sizes(settings);
        let mut sh = shared.borrow_mut();
        let sh = &mut *sh;
        let (mut r, mut w) = (false, false);
        if let Some(mut hot) = hot_slots() {
            if sh.wbuf.is_empty() && !hot.w_lent {
                std::mem::swap(&mut sh.wbuf, &mut hot.w);
                hot.w_lent = true;
                w = true;
            }
            if sh.rpos == sh.rend && !hot.r_lent {
                sh.rpos = 0;
                sh.rend = 0;
                std::mem::swap(&mut sh.rbuf, &mut hot.r);
                hot.r_lent = true;
                r = true;
            }
        }
        if sh.rbuf.len() < rsize {
            grow(&mut sh.rbuf, rsize);
        }
        HotBuffers {
            shared,
            r,
            w,
            rsize,
        }
    }
}

impl<T: Transport> Drop for HotBuffers<'_, T> {
    fn drop(&mut self) {
        if !self.r && !self.w {
            return;
        }
        // Unwinding with the state borrowed: the lent buffers stay with the connection (and
        // the worker's slots keep its own ones, lent for good).
        let Ok(mut sh) = self.shared.try_borrow_mut() else {
            return;
        };
        let sh = &mut *sh;
        let rsize = self.rsize;
        if let Some(mut hot) = hot_slots() {
            if self.w {
                std::mem::swap(&mut sh.wbuf, &mut hot.w);
                hot.w_lent = false;
                if !hot.w.is_empty() {
                    keep_unsent(&mut sh.wbuf, &mut hot.w);
                }
            }
            if self.r {
                std::mem::swap(&mut sh.rbuf, &mut hot.r);
                hot.r_lent = false;
                let left = sh.rend - sh.rpos;
                if left > 0 {
                    keep_unread(&mut sh.rbuf, &hot.r[sh.rpos..sh.rend], rsize);
                }
                sh.rpos = 0;
                sh.rend = left;
            }
        }
    }
}

// The rare ends of a loan, out of line: the loan and its return run on every wake-up, and
// their hot paths take fewer code lines without these inlined among them.

/// Grows a read buffer to `size` bytes (a connection's first loan of the worker's buffer).
#[cold]
#[inline(never)]
fn grow(buf: &mut Vec<u8>, size: usize) {
    buf.resize(size, 0);
}

/// Moves what a burst left unsent in the worker's write buffer (`hot`) to the connection's
/// own (`own`), emptying `hot`.
#[cold]
#[inline(never)]
fn keep_unsent(own: &mut Vec<u8>, hot: &mut Vec<u8>) {
    own.extend_from_slice(hot);
    hot.clear();
}

/// Copies what a burst left unread (a partial head) to the start of the connection's own
/// read buffer, grown to hold it (and at least `rsize`).
#[cold]
#[inline(never)]
fn keep_unread(own: &mut Vec<u8>, left: &[u8], rsize: usize) {
    let need = left.len().max(rsize);
    if own.len() < need {
        own.resize(need, 0);
    }
    own[..left.len()].copy_from_slice(left);
}

#[cfg(test)]
mod layout_tests {
    use super::Shared;
    use crate::transport::Tcp;
    use std::cell::RefCell;
    use std::mem::{offset_of, size_of};

    /// What a keep-alive request touches ends within the first three cache lines of the
    /// connection's allocation (see [`Shared`]).
    #[test]
    fn a_requests_fields_fill_three_cache_lines() {
        // Before the state: the `Rc`'s two counts and the `RefCell`'s flag.
        let header = 16 + size_of::<RefCell<Shared<Tcp>>>() - size_of::<Shared<Tcp>>();
        assert_eq!(header, 24);
        let end = header + offset_of!(Shared<Tcp>, read_timeout) + 16;
        assert!(end <= 3 * 64, "a request's fields end at byte {end}");
        // Five lines in all: the allocator's class of 320-byte blocks.
        let whole = 16 + size_of::<RefCell<Shared<Tcp>>>();
        assert!(whole <= 5 * 64, "the state takes {whole} bytes");
    }
}
