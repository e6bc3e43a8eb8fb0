//! The connection loop: read heads, run the handler, write responses — one fiber per
//! connection, readable top to bottom (Go's `conn.serve`).
//!
//! One read buffer and one write buffer per connection, allocated once. All requests already
//! in the read buffer are answered before the socket is read again, and their responses leave
//! in one `write` (pipelining). The write buffer is flushed only before the connection would
//! block on a read, before a large body, or at close.
//!
//! The server runs each connection as a fiber made of steps (`serve_steps`): between
//! requests it waits for input without a stack. [`serve_connection`] is the same loop for any
//! transport, waiting on the fiber's own stack.

use std::cell::RefCell;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr};
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fibra::fiber::{Resume, Step, Wait};
use std::time::{Duration, Instant};

use http::{Method, StatusCode, Version};

use crate::body::{Body, BodySource};
use crate::chunked::ChunkedDecoder;
use crate::compose::{compose, put_head, ConnHeader, Framing, HeadOut};
use crate::lazy::NO_HEADERS;
use crate::parse::{parse_head_cached, BodyKind, Head, HeadCache, ProtocolError};
use crate::request::Request;
use crate::response::{
    BodyWriter, Kind, Response, ResponseBody, StreamSink, UpgradeFn, Upgraded, FLUSH_BYTES,
};
use crate::settings::Settings;
use crate::transport::{is_timeout, Transport};

mod idle;

use idle::Idle;

/// In-memory bodies up to this size are copied into the write buffer (one write with the
/// head); bigger ones are written from where they are.
const INLINE_BODY_BYTES: usize = 64 * 1024;
/// Files up to this size are read into the write buffer instead of `sendfile`: one `pread`
/// and one `write` beat `write` + `sendfile` + two cork toggles.
pub(crate) const INLINE_FILE_BYTES: u64 = 16 * 1024;
/// Lingering close: how long and how much to read after `shutdown(Write)` so the client
/// sees our last response instead of a reset.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;

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
}

/// Serves HTTP/1.1 on one connection until it closes, running `handler` for each request.
///
/// This is the loop `Server` runs in each connection's fiber; call it yourself to serve over
/// another transport (e.g. TLS), from a fiber or a plain thread.
pub fn serve_connection<T, H>(io: T, settings: &Settings, handler: &H)
where
    T: Transport,
    H: Fn(Request) -> Response + ?Sized,
{
    let owner = Detached {
        idle: AtomicBool::new(false),
        down: AtomicBool::new(false),
    };
    // Waits on the caller's stack: there is no fiber made of steps to return a wait to.
    let parked = Connection::new(io, settings, handler, owner).serve(false);
    debug_assert!(parked.is_none());
}

enum BodyState {
    Done,
    Length(u64),
    Chunked(ChunkedDecoder),
}

#[derive(Debug)]
enum BodyError {
    Protocol(ProtocolError),
    Timeout,
    Io,
}

thread_local! {
    /// The previous request's parse on this thread (one per worker), reused for identical
    /// targets and fields. Per worker rather than per connection: keep-alive clients of one
    /// site repeat their Host, paths and fields across connections too, and a cache that
    /// every connection shares stays in the CPU caches, where one per connection would be
    /// cold memory by the time its next request comes.
    static HEAD_CACHE: RefCell<HeadCache> = RefCell::new(HeadCache::default());
}

/// The connection state a `Body` and the loop share.
///
/// `repr(C)` keeps the fields every request touches together at the front (right after the
/// `Rc` counts and the `RefCell` flag), so a request reads two or three of its cache lines
/// rather than all of them.
#[repr(C)]
struct Shared<T> {
    /// `None` after an upgrade took the transport.
    io: Option<T>,
    rpos: usize,
    rend: usize,
    /// Read buffer; bytes `rpos..rend` are received and not yet consumed.
    rbuf: Vec<u8>,
    /// Responses composed and not yet written.
    wbuf: Vec<u8>,
    /// Number of the current request; a `Body` of an older one reads nothing.
    seq: u64,
    /// The read timeout last set on the transport (skips redundant sets).
    read_timeout: Option<Duration>,
    /// No request has been received yet.
    first: bool,
    /// `Expect: 100-continue` not yet answered.
    continue_pending: bool,
    body_error: Option<BodyError>,
    body: BodyState,
    /// When the head being received must be complete (`None` between requests).
    head_deadline: Option<Instant>,
    body_read_timeout: Duration,
    max_body: u64,
    max_trailer: usize,
    peer: Option<SocketAddr>,
}

fn not_connected() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "transport taken by an upgrade")
}

// The calls every wake-up makes (read what arrived, flush the answers, re-arm the read timeout,
// lend the hot buffers) are forced inline, down through the transport to the system call.
// LLVM keeps them out of line otherwise, and each call spills and reloads the same registers:
// inlined, a keep-alive request runs about 10% fewer instructions.
impl<T: Transport> Shared<T> {
    fn io(&mut self) -> io::Result<&mut T> {
        self.io.as_mut().ok_or_else(not_connected)
    }

    #[inline(always)]
    fn flush(&mut self) -> io::Result<()> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        // One `write` sends it all but for a full socket buffer (or a signal).
        let r = match io.write(&self.wbuf) {
            Ok(n) if n == self.wbuf.len() => Ok(()),
            Ok(n) => io.write_all(&self.wbuf[n..]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => io.write_all(&self.wbuf),
            Err(e) => Err(e),
        };
        self.wbuf.clear();
        r
    }

    #[inline(always)]
    fn set_read_timeout(&mut self, d: Duration) {
        if self.read_timeout != Some(d) {
            if let Some(io) = &self.io {
                let _ = io.set_read_timeout(Some(d.max(Duration::from_millis(1))));
            }
            self.read_timeout = Some(d);
        }
    }

    /// Makes room at the end of the read buffer, growing it up to `cap`. False if full.
    #[inline(always)]
    fn make_room(&mut self, cap: usize) -> bool {
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
    #[inline(always)]
    fn try_read_in(&mut self) -> io::Result<usize> {
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let n = io.try_read(&mut self.rbuf[self.rend..])?;
        self.rend += n;
        Ok(n)
    }

    /// Reads more bytes into the read buffer.
    fn read_in(&mut self) -> io::Result<usize> {
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let n = io.read(&mut self.rbuf[self.rend..])?;
        self.rend += n;
        Ok(n)
    }

    /// Before blocking on a body read: push pending responses, answer 100-continue.
    fn prepare_body_read(&mut self) -> io::Result<()> {
        self.flush()?;
        if self.continue_pending {
            self.continue_pending = false;
            self.io()?.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        self.set_read_timeout(self.body_read_timeout);
        Ok(())
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.body_error = Some(if is_timeout(&e) {
            BodyError::Timeout
        } else {
            BodyError::Io
        });
        if is_timeout(&e) {
            io::Error::new(io::ErrorKind::TimedOut, "request body read timed out")
        } else {
            e
        }
    }

    fn body_read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            match &mut self.body {
                BodyState::Done => return Ok(0),
                BodyState::Length(rem) => {
                    let rem_now = *rem;
                    if self.rpos < self.rend {
                        let n = out.len().min(self.rend - self.rpos).min(rem_now as usize);
                        out[..n].copy_from_slice(&self.rbuf[self.rpos..self.rpos + n]);
                        self.rpos += n;
                        self.finish_length(rem_now - n as u64);
                        return Ok(n);
                    }
                    self.prepare_body_read().map_err(|e| self.fail(e))?;
                    let io = self.io.as_mut().ok_or_else(not_connected)?;
                    let r = if out.len() >= 4096 {
                        // big reads go straight to the caller's buffer
                        let want = out.len().min(rem_now.min(usize::MAX as u64) as usize);
                        io.read(&mut out[..want]).map(|n| (n, true))
                    } else {
                        self.rpos = 0;
                        self.rend = 0;
                        io.read(&mut self.rbuf).map(|n| (n, false))
                    };
                    match r {
                        Ok((0, _)) => return Err(self.fail(io::ErrorKind::UnexpectedEof.into())),
                        Ok((n, true)) => {
                            self.finish_length(rem_now - n as u64);
                            return Ok(n);
                        }
                        Ok((n, false)) => self.rend = n,
                        Err(e) => return Err(self.fail(e)),
                    }
                }
                BodyState::Chunked(dec) => {
                    if self.rpos < self.rend {
                        let src = &self.rbuf[self.rpos..self.rend];
                        match dec.decode(src, out.len()) {
                            Ok(d) => {
                                let n = d.data.len();
                                out[..n].copy_from_slice(&src[d.data]);
                                self.rpos += d.consumed;
                                if dec.is_done() {
                                    self.body = BodyState::Done;
                                }
                                if n > 0 {
                                    return Ok(n);
                                }
                                continue;
                            }
                            Err(e) => {
                                self.body_error = Some(BodyError::Protocol(e));
                                self.body = BodyState::Done;
                                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                            }
                        }
                    }
                    self.prepare_body_read().map_err(|e| self.fail(e))?;
                    self.rpos = 0;
                    self.rend = 0;
                    match self.read_in() {
                        Ok(0) => return Err(self.fail(io::ErrorKind::UnexpectedEof.into())),
                        Ok(_) => {}
                        Err(e) => return Err(self.fail(e)),
                    }
                }
            }
        }
    }

    fn finish_length(&mut self, rem: u64) {
        self.body = if rem == 0 {
            BodyState::Done
        } else {
            BodyState::Length(rem)
        };
    }

    /// Reads and discards the rest of the body, up to `limit` bytes. True if it all went.
    // Out of line: its 4 KiB scratch buffer would otherwise sit in every request's frame.
    #[cold]
    #[inline(never)]
    fn drain(&mut self, limit: u64) -> bool {
        if self.continue_pending || self.body_error.is_some() {
            return false;
        }
        let mut scratch = [0u8; 4096];
        let mut total = 0u64;
        loop {
            if let BodyState::Length(rem) = self.body {
                if rem.saturating_sub((self.rend - self.rpos) as u64) > limit - total.min(limit) {
                    return false;
                }
            }
            match self.body_read(&mut scratch) {
                Ok(0) => return matches!(self.body, BodyState::Done),
                Ok(n) => {
                    total += n as u64;
                    if total > limit {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// Appends an in-memory body to the output.
    fn put_bytes(&mut self, b: &[u8]) -> io::Result<()> {
        if b.len() <= INLINE_BODY_BYTES {
            self.wbuf.extend_from_slice(b);
            Ok(())
        } else {
            self.put_large(b)
        }
    }

    /// A body too large to copy: the buffered output goes first, then the body is written.
    #[inline(never)]
    fn put_large(&mut self, b: &[u8]) -> io::Result<()> {
        self.flush()?;
        self.io()?.write_all(b)
    }

    /// Sends a file range; returns false if the file was shorter than promised.
    #[inline(never)]
    fn put_file(&mut self, r: &crate::FileRange) -> io::Result<bool> {
        use std::os::unix::fs::FileExt;
        if r.len() <= INLINE_FILE_BYTES {
            let start = self.wbuf.len();
            let len = r.len() as usize;
            self.wbuf.resize(start + len, 0);
            let mut got = 0;
            while got < len {
                match r
                    .file()
                    .read_at(&mut self.wbuf[start + got..], r.offset() + got as u64)
                {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.wbuf.truncate(start);
                        return Err(e);
                    }
                }
            }
            self.wbuf.truncate(start + got);
            return Ok(got == len);
        }
        let io = self.io.as_mut().ok_or_else(not_connected)?;
        let _ = io.set_cork(true);
        let res = io.write_all(&self.wbuf);
        self.wbuf.clear();
        let res = res.and_then(|()| io.send_file(r.file(), r.offset(), r.len()));
        let _ = io.set_cork(false);
        Ok(res? == r.len())
    }

    /// Closes gracefully: push what is pending, stop sending, and read (bounded) what the
    /// client still sends so closing does not reset the connection under our last response.
    #[cold]
    #[inline(never)]
    fn linger(&mut self) {
        let _ = self.flush();
        let Some(io) = self.io.as_mut() else { return };
        if io.shutdown(Shutdown::Write).is_err() {
            return;
        }
        if self.rbuf.is_empty() {
            self.rbuf.resize(512, 0);
        }
        let deadline = Instant::now() + LINGER_TIME;
        let mut total = 0;
        for _ in 0..256 {
            let now = Instant::now();
            if now >= deadline || total > LINGER_BYTES {
                break;
            }
            let _ = io.set_read_timeout(Some(deadline - now));
            match io.read(&mut self.rbuf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    }
}

impl<T: Transport> BodySource for Shared<T> {
    fn read_body(&mut self, seq: u64, out: &mut [u8]) -> io::Result<usize> {
        if seq != self.seq {
            return Ok(0);
        }
        if let Some(e) = &self.body_error {
            return Err(match e {
                BodyError::Protocol(p) => io::Error::new(io::ErrorKind::InvalidData, *p),
                BodyError::Timeout => io::ErrorKind::TimedOut.into(),
                BodyError::Io => io::ErrorKind::UnexpectedEof.into(),
            });
        }
        self.body_read(out)
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }
    fn remaining_hint(&self, seq: u64) -> Option<u64> {
        match self.body {
            _ if seq != self.seq => Some(0),
            BodyState::Done => Some(0),
            BodyState::Length(n) => Some(n),
            BodyState::Chunked(_) => None,
        }
    }
}

impl<T: Transport> StreamSink for Shared<T> {
    fn sink_write(&mut self, data: &[u8], chunked: bool) -> io::Result<()> {
        if self.wbuf.len() + data.len() + 32 > FLUSH_BYTES {
            self.flush()?;
        }
        if chunked {
            let _ = write!(self.wbuf, "{:x}\r\n", data.len());
        }
        if data.len() > FLUSH_BYTES {
            self.flush()?;
            self.io()?.write_all(data)?;
        } else {
            self.wbuf.extend_from_slice(data);
        }
        if chunked {
            self.wbuf.extend_from_slice(b"\r\n");
        }
        Ok(())
    }
    fn sink_flush(&mut self) -> io::Result<()> {
        self.flush()?;
        self.io()?.flush()
    }
}

/// Appends a complete error response (always `Connection: close`).
#[cold]
#[inline(never)]
/// Appends the error response for `e` (closing the connection). A `HEAD` request's answer keeps
/// the headers, `Content-Length` included, and leaves out the text.
fn put_error(out: &mut Vec<u8>, e: &ProtocolError, server: Option<&str>, is_head: bool) {
    let reason = e.reason().as_bytes();
    compose(
        out,
        &HeadOut {
            status: e.status(),
            headers: &http::HeaderMap::new(),
            content_type: Some(&http::HeaderValue::from_static("text/plain")),
            server,
            framing: Framing::Length(reason.len() as u64 + 1),
            conn: ConnHeader::Close,
        },
    );
    if !is_head {
        out.extend_from_slice(reason);
        out.push(b'\n');
    }
}

/// Reports a panic caught from a handler, an upgrade or a streaming body (`on_error`).
///
/// A fiber being cancelled (its runtime dropped) unwinds with `fibra::Cancelled`: that must
/// not be mistaken for a handler panic, so it is re-raised instead.
fn report_caught(settings: &Settings, peer: Option<SocketAddr>, p: Box<dyn std::any::Any + Send>) {
    if p.is::<fibra::Cancelled>() {
        std::panic::resume_unwind(p);
    }
    let message = p
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(|s| s.as_str()))
        .unwrap_or("(non-string panic)");
    settings.report_panic(peer, message);
}

/// A new connection's state, with the read timeout of its first head set.
fn open<T: Transport>(io: T, settings: &Settings) -> Rc<RefCell<Shared<T>>> {
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
        seq: 0,
        body: BodyState::Done,
        continue_pending: false,
        body_error: None,
        body_read_timeout: settings.body_read_timeout,
        max_body: settings.max_body_bytes,
        max_trailer: settings.max_head_bytes,
        read_timeout: None,
        peer,
    }));
    // The first read waits for at most the head deadline (later ones: see `arm_read`).
    shared
        .borrow_mut()
        .set_read_timeout(settings.header_timeout);
    shared
}

/// What a connection needs from whoever runs it: the lifecycle flags (see [`ConnCtl`]).
pub(crate) trait Owner {
    fn ctl(&self) -> ConnCtl<'_>;
}

/// The owner of a connection served by [`serve_connection`]: flags nobody else looks at.
struct Detached {
    idle: AtomicBool,
    down: AtomicBool,
}

impl Owner for Detached {
    fn ctl(&self) -> ConnCtl<'_> {
        ConnCtl {
            idle: &self.idle,
            shutting_down: &self.down,
        }
    }
}

/// One connection: its state, and what it needs to answer requests. `S` and `G` hold the
/// settings and the handler (borrowed for [`serve_connection`], shared `Arc`s for the
/// server's fibers made of steps).
struct Connection<T, S, G, O> {
    shared: Rc<RefCell<Shared<T>>>,
    src: Rc<RefCell<dyn BodySource>>,
    settings: S,
    handler: G,
    owner: O,
}

impl<T, S, G, O> Connection<T, S, G, O>
where
    T: Transport,
    S: Deref<Target = Settings>,
    G: Deref,
    G::Target: Fn(Request) -> Response,
    O: Owner,
{
    fn new(io: T, settings: S, handler: G, owner: O) -> Self {
        let shared = open(io, &settings);
        let src: Rc<RefCell<dyn BodySource>> = shared.clone();
        Connection {
            shared,
            src,
            settings,
            handler,
            owner,
        }
    }

    /// Runs `f` with the connection as the request loop sees it.
    fn with_conn<R>(&self, f: impl FnOnce(&Conn<'_, T, G::Target>) -> R) -> R {
        let ctl = self.owner.ctl();
        f(&Conn {
            shared: &self.shared,
            src: &self.src,
            settings: &self.settings,
            handler: &*self.handler,
            ctl: &ctl,
        })
    }

    /// The keep-alive loop, the one every connection runs: answer what has arrived (a burst,
    /// [`Conn::serve_ready`]), then wait for more input (the idle stage, [`idle::wait`]), and
    /// again.
    ///
    /// With `stackless`, the connection runs as a fiber made of steps: each burst runs on the
    /// stack the worker used last (still cached; with thousands of connections taking turns, a
    /// stack per connection would be a cold one), and when the transport has a stackless wait
    /// ([`Transport::when_readable`]) the loop returns it, for the caller to make the fiber's
    /// next step: the idle connection then holds no stack. Without (or when the transport has
    /// no such wait) the connection waits on the stack it runs on, and each burst runs on the
    /// worker's shared stack ([`fibra::fiber::on_shared_stack`]): reading, parsing and
    /// responding write a few kilobytes of stack per request, which on the fiber's own (cold)
    /// stack would all be cache misses; only this loop's frame and the wait's touch the own
    /// stack per request.
    ///
    /// Returns `None` once the connection has ended.
    fn serve(&self, stackless: bool) -> Option<Wait> {
        loop {
            let alive = if stackless {
                self.with_conn(|conn| conn.serve_ready())
            } else {
                fibra::fiber::on_shared_stack(|| self.with_conn(|conn| conn.serve_ready()))
            };
            if !alive {
                return None;
            }
            let mut sh = self.shared.borrow_mut();
            let Some(io) = &sh.io else { return None };
            match idle::wait(io, stackless) {
                Idle::Ready => {}
                Idle::Park(wait) => return Some(wait),
                Idle::TimedOut => {
                    self.with_conn(|conn| conn.read_timed_out(&mut sh));
                    return None;
                }
                Idle::Closed => return None,
            }
        }
    }
}

/// Serves a connection as the first step of a fiber made of steps (the server's way): the
/// loop of [`Connection::serve`], idle connections holding no stack when the transport can
/// wait without one.
pub(crate) fn serve_steps<T, H, O>(
    io: T,
    settings: Arc<Settings>,
    handler: Arc<H>,
    owner: O,
) -> Step
where
    T: Transport,
    H: Fn(Request) -> Response + 'static,
    O: Owner + 'static,
{
    step(Box::new(Connection::new(io, settings, handler, owner)))
}

/// Runs the loop until the connection ends or parks without a stack.
fn step<T, S, G, O>(c: Box<Connection<T, S, G, O>>) -> Step
where
    T: Transport,
    S: Deref<Target = Settings> + 'static,
    G: Deref + 'static,
    G::Target: Fn(Request) -> Response,
    O: Owner + 'static,
{
    match c.serve(true) {
        // The connection's box is the rest of the fiber: waiting allocates nothing.
        Some(wait) => wait.resume_with(c),
        None => Step::done(),
    }
}

impl<T, S, G, O> Resume for Connection<T, S, G, O>
where
    T: Transport,
    S: Deref<Target = Settings> + 'static,
    G: Deref + 'static,
    G::Target: Fn(Request) -> Response,
    O: Owner + 'static,
{
    /// The end of a stackless wait: back into the loop, or the idle stage's timeout.
    fn resume(self: Box<Self>, ready: io::Result<()>) -> Step {
        match idle::woken(ready) {
            Idle::Ready => step(self),
            Idle::TimedOut => {
                self.with_conn(|conn| conn.read_timed_out(&mut self.shared.borrow_mut()));
                Step::done()
            }
            Idle::Park(_) | Idle::Closed => Step::done(),
        }
    }
}

/// Size of a connection's read buffer (at least 512 bytes, unless both limits are smaller),
/// and how far it may grow to hold one request head.
fn read_sizes(settings: &Settings) -> (usize, usize) {
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
struct HotBuffers<'a, T: Transport> {
    shared: &'a RefCell<Shared<T>>,
    /// Which buffers were lent.
    r: bool,
    w: bool,
    rsize: usize,
}

impl<'a, T: Transport> HotBuffers<'a, T> {
    #[inline(always)]
    fn lend(shared: &'a RefCell<Shared<T>>, settings: &Settings) -> Self {
        let (rsize, _) = read_sizes(settings);
        let mut sh = shared.borrow_mut();
        let sh = &mut *sh;
        let (mut r, mut w) = (false, false);
        HOT.with_borrow_mut(|hot| {
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
        });
        if sh.rbuf.len() < rsize {
            sh.rbuf.resize(rsize, 0);
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
        HOT.with_borrow_mut(|hot| {
            if self.w {
                std::mem::swap(&mut sh.wbuf, &mut hot.w);
                hot.w_lent = false;
                if !hot.w.is_empty() {
                    sh.wbuf.extend_from_slice(&hot.w);
                    hot.w.clear();
                }
            }
            if self.r {
                std::mem::swap(&mut sh.rbuf, &mut hot.r);
                hot.r_lent = false;
                let left = sh.rend - sh.rpos;
                if left > 0 {
                    let need = left.max(rsize);
                    if sh.rbuf.len() < need {
                        sh.rbuf.resize(need, 0);
                    }
                    sh.rbuf[..left].copy_from_slice(&hot.r[sh.rpos..sh.rend]);
                }
                sh.rpos = 0;
                sh.rend = left;
            }
        });
    }
}

/// What answering a connection's requests needs besides the requests themselves. Kept to one
/// cache line: the shared stack reads it from the connection's own stack.
#[repr(align(64))]
struct Conn<'a, T, H: ?Sized> {
    shared: &'a Rc<RefCell<Shared<T>>>,
    /// The same state, as the source a request's `Body` reads from.
    src: &'a Rc<RefCell<dyn BodySource>>,
    settings: &'a Settings,
    handler: &'a H,
    ctl: &'a ConnCtl<'a>,
}

impl<T, H> Conn<'_, T, H>
where
    T: Transport,
    H: Fn(Request) -> Response + ?Sized,
{
    fn peer(&self) -> Option<SocketAddr> {
        self.shared.borrow().peer
    }

    fn server(&self) -> Option<&str> {
        self.settings.server_header.as_deref()
    }

    /// Reads what has arrived (without waiting), answers every complete request and sends the
    /// responses; repeats while reads bring more. Returns false when the connection must end,
    /// true when it has to wait for input (with the read timeout set for that wait).
    fn serve_ready(&self) -> bool {
        let shared = self.shared;
        let _hot = HotBuffers::lend(shared, self.settings);
        loop {
            let drained = {
                let mut sh = shared.borrow_mut();
                if !sh.make_room(read_sizes(self.settings).1) {
                    let e = ProtocolError::new(
                        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                        "request head too large",
                    );
                    self.settings.report_rejected(sh.peer, e);
                    put_error(&mut sh.wbuf, &e, self.server(), false);
                    sh.linger();
                    return false;
                }
                let room = sh.rbuf.len() - sh.rend;
                match sh.try_read_in() {
                    Ok(0) => return false,
                    Ok(n) => {
                        self.ctl.idle.store(false, Ordering::Relaxed);
                        n < room
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                    // A transport whose `try_read` waits (see `Transport::try_read`).
                    Err(e) if is_timeout(&e) => {
                        self.read_timed_out(&mut sh);
                        return false;
                    }
                    Err(_) => return false,
                }
            };
            if !self.serve_buffered() || !self.arm_read() {
                return false;
            }
            // A short read took everything there was: wait rather than try again.
            if drained {
                return true;
            }
        }
    }

    /// Waiting for input timed out: answers 408 if part of a head has arrived; an idle (or
    /// silent new) connection just ends.
    #[cold]
    fn read_timed_out(&self, sh: &mut Shared<T>) {
        if sh.rpos < sh.rend {
            let e = ProtocolError::new(StatusCode::REQUEST_TIMEOUT, "request head timeout");
            self.settings.report_rejected(sh.peer, e);
            put_error(&mut sh.wbuf, &e, self.server(), false);
            sh.linger();
        }
    }

    /// After answering what was complete: sends the responses and sets the read timeout for
    /// what comes next (idle between requests, else what is left of the head deadline).
    /// False when the connection must end instead (shutdown while idle, head deadline
    /// passed: 408).
    fn arm_read(&self) -> bool {
        let Conn { settings, ctl, .. } = *self;
        let mut sh = self.shared.borrow_mut();
        if sh.flush().is_err() {
            return false;
        }
        let partial = sh.rpos < sh.rend;
        if !partial && !sh.first {
            ctl.idle.store(true, Ordering::Relaxed);
            if ctl.shutting_down.load(Ordering::Relaxed) {
                return false;
            }
            sh.set_read_timeout(settings.idle_timeout);
        } else {
            let now = Instant::now();
            let deadline = *sh
                .head_deadline
                .get_or_insert(now + settings.header_timeout);
            if now >= deadline {
                self.read_timed_out(&mut sh);
                return false;
            }
            sh.set_read_timeout(deadline - now);
        }
        true
    }

    /// Answers the complete requests at the front of the read buffer. Returns false when the
    /// connection must end, true when it needs more input.
    fn serve_buffered(&self) -> bool {
        let Conn {
            shared, settings, ..
        } = *self;
        loop {
            let head = {
                let mut sh = shared.borrow_mut();
                if sh.rpos >= sh.rend {
                    return true;
                }
                let cache: *const RefCell<HeadCache> = HEAD_CACHE.with(|c| c as *const _);
                // SAFETY: `with` returned, so this thread's value is alive; it lives until the
                // thread's thread-locals are destroyed, which cannot happen during this call on
                // this thread, and the reference is only used for the parse below. (Parsed
                // outside `with`, the head is not copied out of the closure's result.)
                let cache = unsafe { &*cache };
                let parsed = parse_head_cached(
                    &sh.rbuf[sh.rpos..sh.rend],
                    settings,
                    &mut cache.borrow_mut(),
                );
                match parsed {
                    Ok(Some((head, n))) => {
                        sh.rpos += n;
                        sh.head_deadline = None;
                        sh.first = false;
                        head
                    }
                    Ok(None) => return true,
                    Err(e) => {
                        settings.report_rejected(sh.peer, e);
                        put_error(&mut sh.wbuf, &e, self.server(), false);
                        sh.linger();
                        return false;
                    }
                }
            };
            if !self.respond(head) {
                return false;
            }
        }
    }

    /// The handler panicked: reports it and answers 500 (rare paths of [`Conn::respond`] are out
    /// of line so the code a request runs stays together).
    #[cold]
    #[inline(never)]
    fn handler_panicked(&self, p: Box<dyn std::any::Any + Send>) -> Response {
        report_caught(self.settings, self.peer(), p);
        error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
    }

    /// Reading the request body failed while the handler ran: answers the error (the handler's
    /// response is dropped) and ends the connection.
    #[cold]
    #[inline(never)]
    fn body_failed(&self, sh: &mut Shared<T>, e: BodyError, is_head: bool) {
        let e = match e {
            BodyError::Protocol(e) => e,
            BodyError::Timeout => {
                ProtocolError::new(StatusCode::REQUEST_TIMEOUT, "request body timeout")
            }
            BodyError::Io => {
                let _ = sh.flush();
                return;
            }
        };
        self.settings.report_rejected(sh.peer, e);
        put_error(&mut sh.wbuf, &e, self.server(), is_head);
        sh.linger();
    }

    /// Writes the access-log line of a request (`Settings::access_log`).
    #[cold]
    #[inline(never)]
    fn log_access(&self, line: &str, status: StatusCode) {
        log::info!(target: "fibra_http::access", "{} \"{line}\" {}", self.peer().map(|p| p.to_string()).unwrap_or_default(), status.as_u16());
    }

    /// After a 101: hands the raw connection (and what was read past the request) to `f`.
    #[cold]
    #[inline(never)]
    fn run_upgrade(&self, f: UpgradeFn) {
        let mut sh = self.shared.borrow_mut();
        if sh.flush().is_err() {
            return;
        }
        let Some(io) = sh.io.take() else { return };
        let buffered = sh.rbuf[sh.rpos..sh.rend].to_vec();
        let _ = io.set_read_timeout(None);
        drop(sh);
        let up = Upgraded {
            io: Box::new(io),
            buffered,
            pos: 0,
        };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(up))) {
            report_caught(self.settings, self.peer(), p);
        }
    }

    /// Runs the handler for one parsed request and writes (or buffers) its response. Returns
    /// whether the connection goes on to the next request.
    ///
    /// Inlined into the read loop, so the parsed head reaches it without being copied into a
    /// call's argument. A value built field by field and then copied whole is read back with
    /// wider loads than the stores that wrote it, and such a load waits until those stores
    /// have reached the cache (store-to-load forwarding fails): these copies of the head and
    /// of the response were the most expensive instructions of a pipelined request.
    #[inline(always)]
    fn respond(&self, head: Head) -> bool {
        let Conn {
            shared,
            src,
            settings,
            handler,
            ..
        } = *self;
        // 2. Run the handler.
        let is_head = head.method == Method::HEAD;
        let http11 = head.version == Version::HTTP_11;
        let log_line = settings
            .access_log
            .then(|| format!("{} {} {:?}", head.method, head.uri, head.version));
        // (Shutdown is looked at after the handler ran.)
        let mut close = !head.keep_alive || !settings.keep_alive;
        let seq = {
            let mut sh = shared.borrow_mut();
            sh.seq += 1;
            match head.body {
                // The previous request's body is done (read or drained) unless it ended the
                // connection: most requests have none, and the state stays as it is.
                BodyKind::Empty => {
                    if !matches!(sh.body, BodyState::Done) {
                        sh.body = BodyState::Done;
                    }
                }
                BodyKind::Length(n) => sh.body = BodyState::Length(n),
                BodyKind::Chunked => {
                    sh.body = BodyState::Chunked(ChunkedDecoder::new(sh.max_body, sh.max_trailer))
                }
            }
            sh.continue_pending = head.expect_continue;
            sh.body_error = None;
            sh.seq
        };
        let req = Request::from_head(head.request, Body::from_conn(src.clone(), seq));
        // The response is written inside the same `catch_unwind` as the handler runs in: a
        // response that crossed it would be copied out of its return slot, then again into
        // `write_response`, and those copies of a just-built value stall on store forwarding.
        let mut returned = false;
        let sent = catch_unwind(AssertUnwindSafe(|| {
            let resp = handler(req);
            returned = true;
            self.send(resp, is_head, http11, &mut close)
        }));
        let sent = match sent {
            Ok(sent) => sent,
            Err(p) if !returned => {
                close = true;
                let resp = self.handler_panicked(p);
                self.send_cold(resp, is_head, http11, &mut close)
            }
            // Writing a response panicked (a bug): what was composed may be partial.
            Err(p) => {
                report_caught(settings, self.peer(), p);
                return false;
            }
        };
        let Some((status, upgrade)) = sent else {
            return false;
        };
        if let Some(line) = log_line {
            self.log_access(&line, status);
        }
        if let Some(f) = upgrade {
            self.run_upgrade(f);
            return false;
        }
        let mut sh = shared.borrow_mut();
        if !close && !matches!(sh.body, BodyState::Done) && !sh.drain(settings.max_drain_bytes) {
            close = true;
        }
        if close {
            sh.linger();
            return false;
        }
        true
    }

    /// Decides the connection's fate once the handler returned, then writes its response.
    /// Returns the status and the upgrade callback of a 101, or `None` if the connection ends
    /// (the request body failed, or writing did).
    #[inline(always)]
    fn send(
        &self,
        mut resp: Response,
        is_head: bool,
        http11: bool,
        close: &mut bool,
    ) -> Option<(StatusCode, Option<UpgradeFn>)> {
        let Conn {
            shared,
            settings,
            ctl,
            ..
        } = *self;
        {
            let mut sh = shared.borrow_mut();
            if let Some(e) = sh.body_error.take() {
                self.body_failed(&mut sh, e, is_head);
                return None;
            }
            if !*close && !matches!(sh.body, BodyState::Done) {
                let buffered = (sh.rend - sh.rpos) as u64;
                *close = sh.continue_pending
                    || matches!(sh.body, BodyState::Length(n) if n.saturating_sub(buffered) > settings.max_drain_bytes);
            }
        }
        // Shutdown may have begun while the handler ran. (A `Connection: close` of the
        // handler's is found while composing the head: `write_response`.)
        if ctl.shutting_down.load(Ordering::SeqCst) {
            *close = true;
        }
        let status = resp.status();
        if status == StatusCode::SWITCHING_PROTOCOLS
            && !matches!(resp.body().kind, Kind::Upgrade(_))
        {
            *close = true;
            bad_101(&mut resp);
        }
        match write_response(shared, &mut resp, is_head, http11, settings, close) {
            Ok(upgrade) => Some((status, upgrade)),
            Err(_) => None,
        }
    }

    /// [`Conn::send`] for the rare responses made by the server itself (out of line).
    #[cold]
    #[inline(never)]
    fn send_cold(
        &self,
        resp: Response,
        is_head: bool,
        http11: bool,
        close: &mut bool,
    ) -> Option<(StatusCode, Option<UpgradeFn>)> {
        self.send(resp, is_head, http11, close)
    }
}

/// Runs a streaming body's writer (out of line: most responses are in memory).
#[cold]
#[inline(never)]
fn write_stream<T: Transport>(
    cell: &RefCell<Shared<T>>,
    len: Option<u64>,
    f: crate::response::StreamFn,
    chunked: bool,
    settings: &Settings,
    close: &mut bool,
) {
    let mut w = BodyWriter {
        sink: cell as &RefCell<dyn StreamSink>,
        chunked,
        remaining: len,
    };
    match catch_unwind(AssertUnwindSafe(|| f(&mut w))) {
        Ok(Ok(())) if w.remaining.unwrap_or(0) == 0 => {
            if chunked {
                cell.borrow_mut().wbuf.extend_from_slice(b"0\r\n\r\n");
            }
        }
        Ok(Ok(())) => *close = true,
        Ok(Err(e)) => {
            log::debug!("streaming body failed: {e}");
            *close = true;
        }
        Err(p) => {
            let peer = cell.borrow().peer;
            report_caught(settings, peer, p);
            *close = true;
        }
    }
}

/// A 101 without an upgrade body is the handler's mistake: answer 500 instead.
#[cold]
#[inline(never)]
fn bad_101(resp: &mut Response) {
    *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    *resp.body_mut() = "101 without an upgrade body\n".into();
}

fn error_response(status: StatusCode, text: &'static str) -> Response {
    let body =
        ResponseBody::from(text).with_content_type(http::HeaderValue::from_static("text/plain"));
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

/// Composes the head and sends or buffers the body. Returns the upgrade callback of a 101.
#[inline(always)]
fn write_response<T: Transport>(
    cell: &RefCell<Shared<T>>,
    resp: &mut Response,
    is_head: bool,
    http11: bool,
    settings: &Settings,
    close: &mut bool,
) -> io::Result<Option<UpgradeFn>> {
    let server = settings.server_header.as_deref();
    // The response is read in place (by reference): a copy of a value just built field by
    // field stalls on store forwarding. Only a stream's or an upgrade's callback is moved out.
    let status = resp.status;
    let no_framing = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let framing = match resp.body.len() {
        _ if no_framing => Framing::None,
        Some(n) => Framing::Length(n),
        None if http11 => Framing::Chunked,
        None => {
            *close = true;
            Framing::None
        }
    };
    let upgrade = status == StatusCode::SWITCHING_PROTOCOLS;
    let conn = if upgrade {
        ConnHeader::Handler
    } else if *close {
        ConnHeader::Close
    } else if !http11 {
        ConnHeader::KeepAlive
    } else {
        ConnHeader::Omit
    };
    let mut sh = cell.borrow_mut();
    let head = HeadOut {
        status,
        headers: resp.headers.get_or(&NO_HEADERS),
        content_type: resp.body.content_type.as_ref(),
        server,
        framing,
        conn,
    };
    if put_head(&mut sh.wbuf, &head) {
        *close = true;
    }
    if let Kind::Upgrade(_) = resp.body.kind {
        let Kind::Upgrade(f) = std::mem::replace(&mut resp.body.kind, Kind::Empty) else {
            unreachable!()
        };
        return Ok(upgrade.then_some(f));
    }
    if is_head || no_framing {
        return Ok(None);
    }
    match &resp.body.kind {
        Kind::Empty | Kind::Upgrade(_) => {}
        Kind::Static(b) => sh.put_bytes(b)?,
        Kind::Vec(v) => sh.put_bytes(v)?,
        Kind::Bytes(b) => sh.put_bytes(b)?,
        Kind::File(r) => {
            if !sh.put_file(r)? {
                *close = true;
            }
        }
        Kind::Stream { .. } => {
            let Kind::Stream { len, f } = std::mem::replace(&mut resp.body.kind, Kind::Empty)
            else {
                unreachable!()
            };
            drop(sh);
            write_stream(cell, len, f, framing == Framing::Chunked, settings, close);
            sh = cell.borrow_mut();
        }
    }
    if sh.wbuf.len() > FLUSH_BYTES {
        sh.flush()?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A transport fed from a byte string, recording every write. A write takes at most
    /// `max_write` bytes; the first `interrupts` writes fail with `Interrupted`.
    struct Mock {
        input: Vec<u8>,
        pos: usize,
        writes: Rc<RefCell<Vec<Vec<u8>>>>,
        max_write: usize,
        interrupts: usize,
    }

    impl Read for Mock {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.input.len() - self.pos);
            buf[..n].copy_from_slice(&self.input[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }
    impl Write for Mock {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            if self.interrupts > 0 {
                self.interrupts -= 1;
                return Err(io::ErrorKind::Interrupted.into());
            }
            // A transport that takes nothing is broken: it panics, as a buggy one might.
            assert!(self.max_write > 0, "transport broke");
            let n = data.len().min(self.max_write);
            self.writes.borrow_mut().push(data[..n].to_vec());
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Transport for Mock {
        fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
            Ok(())
        }
        fn set_write_timeout(&self, _: Option<Duration>) -> io::Result<()> {
            Ok(())
        }
        fn peer_addr(&self) -> Option<SocketAddr> {
            None
        }
        fn shutdown(&self, _: Shutdown) -> io::Result<()> {
            Ok(())
        }
    }

    fn run(input: &[u8], handler: impl Fn(Request) -> Response) -> Vec<Vec<u8>> {
        run_with(input, handler, &Settings::default(), usize::MAX, 0)
    }

    fn run_with(
        input: &[u8],
        handler: impl Fn(Request) -> Response,
        settings: &Settings,
        max_write: usize,
        interrupts: usize,
    ) -> Vec<Vec<u8>> {
        let writes = Rc::new(RefCell::new(Vec::new()));
        let mock = Mock {
            input: input.to_vec(),
            pos: 0,
            writes: writes.clone(),
            max_write,
            interrupts,
        };
        serve_connection(mock, settings, &handler);
        let w = writes.borrow().clone();
        w
    }

    #[test]
    fn short_and_interrupted_writes_still_send_every_byte_in_order() {
        let req = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n".repeat(8);
        let handler = |r: Request| Response::new(r.uri().path().to_string().into());
        let whole = run(&req, handler).concat();
        // A transport that takes 7 bytes per write, with and without a first interrupted call.
        for interrupts in [0, 1] {
            let writes = run_with(&req, handler, &Settings::default(), 7, interrupts);
            assert!(writes.len() > 1 && writes.iter().all(|w| w.len() <= 7));
            let pieces = writes.concat();
            let text = String::from_utf8(pieces.clone()).unwrap();
            assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 8);
            assert!(text.ends_with("\r\n\r\n/a"), "{text}");
            // The bytes of one whole write (only the date may differ, at the same length).
            assert_eq!(pieces.len(), whole.len());
        }
    }

    #[test]
    fn a_panic_while_a_response_is_written_ends_the_connection_and_is_reported() {
        // The handler returned; the transport panics on the first write of the response (a
        // body too big to buffer is written while the response is). The panic is reported,
        // the partial response is not followed by a 500, and the next request is not answered.
        let reported = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = reported.clone();
        let settings = Settings {
            on_error: Some(crate::settings::ErrorHook::new(move |e| {
                sink.lock().unwrap().push(e.to_string())
            })),
            ..Settings::default()
        };
        let req = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n";
        let handler = |_: Request| Response::new(vec![b'x'; 4 * FLUSH_BYTES].into());
        let writes = run_with(req, handler, &settings, 0, 0);
        assert!(writes.is_empty(), "{writes:?}");
        let reported = reported.lock().unwrap();
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert!(reported[0].contains("transport broke"), "{reported:?}");
    }

    #[test]
    fn read_buffer_and_head_limits_under_512_bytes_still_serve() {
        // The read buffer is at least 512 bytes unless both limits are smaller: then it is
        // the larger limit (this used to panic in `clamp`, min above max).
        let settings = Settings {
            read_buffer_bytes: 128,
            max_head_bytes: 200,
            ..Settings::default()
        };
        assert_eq!(read_sizes(&settings), (200, 200));
        let req = b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n";
        let handler = |r: Request| Response::new(r.uri().path().to_string().into());
        let writes = run_with(req, handler, &settings, usize::MAX, 0);
        let out = String::from_utf8(writes.concat()).unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\n/small"), "{out}");
        // The defaults are what they were.
        assert_eq!(read_sizes(&Settings::default()), (4096, 16 * 1024));
    }

    #[test]
    fn pipelined_responses_leave_in_one_write() {
        let req = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n".repeat(8);
        let writes = run(&req, |r| Response::new(r.uri().path().to_string().into()));
        assert_eq!(writes.len(), 1);
        let out = String::from_utf8(writes[0].clone()).unwrap();
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 8);
    }

    #[test]
    fn continue_is_sent_before_reading_and_after_earlier_responses() {
        let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n";
        let mut input = req.to_vec();
        input.extend_from_slice(b"ok");
        // The body is already buffered, so no 100 is needed: the client sent it anyway.
        let writes = run(&input, |mut r| {
            let mut s = String::new();
            r.body_mut().read_to_string(&mut s).unwrap();
            Response::new(s.into())
        });
        let all: Vec<u8> = writes.concat();
        let out = String::from_utf8(all).unwrap();
        assert!(!out.contains("100 Continue"), "{out}");
        assert!(out.ends_with("\r\n\r\nok"), "{out}");
    }

    #[test]
    fn streaming_body_is_chunked() {
        let writes = run(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", |_| {
            Response::new(crate::ResponseBody::stream(|w| {
                w.write_all(b"hello ")?;
                w.write_all(b"world")
            }))
        });
        let out = String::from_utf8(writes.concat()).unwrap();
        assert!(out.contains("Transfer-Encoding: chunked\r\n"), "{out}");
        assert!(
            out.ends_with("\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"),
            "{out}"
        );
    }
}
