//! HTTP/2 (RFC 9113) on the HTTP/1.1 port: a connection that opens with the HTTP/2 preface
//! (cleartext with prior knowledge, or TLS after ALPN chose `h2`) is handed here by the
//! HTTP/1.1 loop, with the bytes it had read.
//!
//! The framing, HPACK, flow control and the protocol's state machines are the `h2` crate's,
//! driven without an async runtime:
//!
//! - one **owner fiber** (the connection's own) polls the crate's connection: it reads
//!   frames, accepts streams, and writes the frames every stream has queued, batched into as
//!   few `write` calls as the crate's buffer allows. Between polls it waits for input or a
//!   wake-up from a stream fiber ([`crate::Transport::wait_readable_or`], see `io`);
//! - each request stream runs the **unchanged application** in a fiber of its own on the
//!   same worker (`stream`), as Warp runs a thread per stream: the handler reads the body
//!   and returns its response, which the fiber sends within the flow-control windows,
//!   waiting (up to the write timeout) when they are closed.
//!
//! Graceful shutdown sends GOAWAY with the last stream id and lets the streams in flight
//! finish; an idle connection (no open stream) ends with GOAWAY after the idle timeout.
//!
//! Why the `h2` crate rather than framing of our own on an HPACK crate: it passes h2spec and
//! carries the protocol's defences (rapid reset, CONTINUATION floods, header list limits), and
//! driven this way it was already ahead of h2o on one core (`h2load -c100 -m10`, cleartext
//! and TLS; `docs/BENCHMARKS.md`). Framing of our own was not written: it would have to win
//! that margin back before it could pay for re-doing the crate's conformance.
//!
//! Two leniencies of the crate show through: a request without `:path` is taken as `/`,
//! and a WINDOW_UPDATE that overflows the window of a stream whose response has ended is
//! ignored rather than answered with RST_STREAM (h2spec's case 6.9.1/3 then passes or not
//! depending on whether the response was faster than the client's frames).

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use fibra::fiber::{Resume, Step};
use h2::server::SendResponse;

use crate::going_away::{GoingAway, GoingAwayList};
use crate::lifecycle::{Detached, Owner};
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::{is_timeout, Transport};

// Unused until the framing of our own lands.
#[cfg_attr(not(test), allow(dead_code, unused_imports))]
pub(crate) mod hpack;
pub mod park;
mod request_body;
mod send;
mod stream;
pub mod wire;

use park::Parker;
use wire::{H2Io, Link};

/// The client connection preface (RFC 9113 §3.4) that starts every HTTP/2 connection.
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Streams a client may open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`).
pub const MAX_CONCURRENT_STREAMS: u32 = 128;

/// The flow-control window of each stream we receive on: bounds the request body bytes
/// buffered per stream before the application reads them.
const STREAM_WINDOW: u32 = 256 * 1024;

/// The connection's receive window: bounds what all streams buffer together.
const CONNECTION_WINDOW: u32 = 1024 * 1024;

/// Serves HTTP/2 on `io`, whose first bytes (already read) are `early`, until the
/// connection ends: the connection's fiber becomes the owner fiber. The handshake runs on
/// its stack; from then on the connection is a fiber made of steps: with no stream open and
/// nothing to write it waits for input without a stack ([`Transport::when_readable`]), like
/// an idle HTTP/1.1 connection.
pub(crate) fn serve<T, H, O>(
    io: T,
    early: Vec<u8>,
    settings: Arc<Settings>,
    handler: Arc<H>,
    owner: O,
) -> Step
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    match open(io, early, settings, handler, owner) {
        Some(mut conn) => {
            conn.stackless = true;
            conn.run()
        }
        None => Step::done(),
    }
}

/// Serves HTTP/2 on `io` on the caller's fiber until the connection ends: the client's first
/// bytes must be the connection preface. Each request stream runs `handler` in a fiber of
/// its own (on the caller's worker), so this must run inside a fibra runtime. The server
/// switches its connections to HTTP/2 by itself; this is for other transports (and tests,
/// and the fuzz target), as [`crate::serve_connection`] is for HTTP/1.1.
pub fn serve_connection_h2<T, H>(io: T, settings: Arc<Settings>, handler: Arc<H>)
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
{
    if let Some(conn) = open(io, Vec::new(), settings, handler, Detached::new(true)) {
        // Not stackless: `run` waits on this stack and returns only when the connection has
        // ended (a finished step).
        drop(conn.run());
    }
}

/// The handshake, on the caller's stack: the connection, or `None` if it failed.
fn open<T, H, O>(
    io: T,
    early: Vec<u8>,
    settings: Arc<Settings>,
    handler: Arc<H>,
    owner: O,
) -> Option<Box<Connection<T, H, O>>>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    let peer = io.peer_addr();
    let server_name = io.server_name().map(Arc::from);
    let link = Link::new(io, early);
    // Graceful shutdown wakes the owner through the same `Notify` as the streams do, so a
    // busy connection learns of it at once and sends GOAWAY.
    let parker = match owner.ctl().going_away {
        Some(cell) => {
            let going_away = cell.get_or_init(|| Arc::new(GoingAway::default()));
            Parker::with_notify(going_away.notify().clone())
        }
        None => Parker::new(),
    };

    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_header_list_size(settings.max_head_bytes as u32)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    let _ = link
        .transport()
        .set_read_timeout(Some(settings.header_timeout));
    let handshake = builder.handshake::<_, Bytes>(H2Io(link.clone()));
    let conn = match link.block_on(&parker, handshake)? {
        Ok(conn) => conn,
        Err(e) => {
            log::debug!("HTTP/2 handshake with {peer:?}: {e}");
            return None;
        }
    };
    Some(Box::new(Connection {
        conn,
        link,
        parker,
        open: Arc::new(AtomicUsize::new(0)),
        settings,
        handler,
        owner,
        peer,
        server_name,
        worker: fibra::current_worker(),
        going_away: false,
        streamed: Arc::default(),
        stackless: false,
    }))
}

/// An HTTP/2 connection between the owner fiber's steps.
struct Connection<T, H: ?Sized, O> {
    conn: h2::server::Connection<H2Io<T>, Bytes>,
    link: Rc<Link<T>>,
    parker: Parker,
    /// Streams whose fibers have not ended.
    open: Arc<AtomicUsize>,
    settings: Arc<Settings>,
    handler: Arc<H>,
    owner: O,
    peer: Option<SocketAddr>,
    /// The TLS server name (SNI), for each stream's request.
    server_name: Option<Arc<str>>,
    worker: Option<usize>,
    /// GOAWAY has been sent (shutdown, idle timeout).
    going_away: bool,
    /// The streamed bodies' shutdown signals, set with the GOAWAY.
    streamed: Arc<GoingAwayList>,
    /// Whether an idle connection waits without a stack (a fiber made of steps) or on the
    /// caller's.
    stackless: bool,
}

impl<T, H, O> Connection<T, H, O>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    /// Polls the connection until it ends, or returns the stackless wait of an idle one.
    fn run(mut self: Box<Self>) -> Step {
        loop {
            if !self.poll_accept() {
                return Step::done();
            }
            let idle = self.open.load(Ordering::Relaxed) == 0;
            let ctl = self.owner.ctl();
            ctl.idle.store(idle, Ordering::Relaxed);
            if ctl.shutting_down.load(Ordering::Relaxed) && !self.going_away {
                // GOAWAY with the last stream id; the streams in flight finish.
                self.go_away();
                continue;
            }
            let timeout = idle.then_some(self.settings.idle_timeout);
            let _ = self.link.transport().set_read_timeout(timeout);
            if self.stackless && idle && self.link.wants_read() {
                let wait = self.link.transport().when_readable();
                if let Some(wait) = wait {
                    self.link.take_wants_read();
                    return wait.resume_with(self);
                }
            }
            if !self.link.wait(&self.parker) && !self.timed_out() {
                return Step::done();
            }
        }
    }

    /// Polls the crate's connection, spawning a fiber for each new stream, until it has
    /// nothing more to do for now (true) or has ended (false).
    fn poll_accept(&mut self) -> bool {
        let mut cx = Context::from_waker(self.parker.waker());
        loop {
            match self.conn.poll_accept(&mut cx) {
                Poll::Ready(Some(Ok((req, respond)))) => self.spawn_stream(req, respond),
                Poll::Ready(Some(Err(e))) => {
                    log::debug!("HTTP/2 connection with {:?}: {e}", self.peer);
                    return false;
                }
                Poll::Ready(None) => return false,
                Poll::Pending => return true,
            }
        }
    }

    /// Runs a request stream in a fiber of its own, on this worker.
    fn spawn_stream(&self, req: http::Request<h2::RecvStream>, respond: SendResponse<Bytes>) {
        self.open.fetch_add(1, Ordering::Relaxed);
        let done = StreamDone {
            open: self.open.clone(),
            owner: self.parker.waker().clone(),
        };
        let (settings, handler, peer) = (self.settings.clone(), self.handler.clone(), self.peer);
        let server_name = self.server_name.clone();
        let streamed = self.streamed.clone();
        let mut fiber = fibra::fiber::Builder::new();
        if let Some(w) = self.worker {
            fiber = fiber.worker(w);
        }
        let spawned = fiber.spawn(move || {
            let _done = done;
            let conn = stream::ConnInfo {
                peer,
                server_name,
                streamed,
            };
            stream::run(req, respond, &settings, &*handler, conn);
        });
        if let Err(e) = spawned {
            log::warn!("cannot spawn an HTTP/2 stream fiber: {e}");
        }
    }

    /// Starts a graceful close: GOAWAY, no new streams, the open ones finish.
    fn go_away(&mut self) {
        self.conn.graceful_shutdown();
        self.going_away = true;
        // Streamed bodies (server-sent events) end their responses.
        self.streamed.set_all();
    }

    /// A wait ended without input: on an idle connection the idle timeout, which says
    /// GOAWAY once (true: go on to write it) and then ends (false).
    fn timed_out(&mut self) -> bool {
        if self.going_away {
            return false;
        }
        self.go_away();
        // One more round to write the GOAWAY, not to wait for the client again.
        let _ = self.link.transport().set_read_timeout(Some(Duration::ZERO));
        true
    }
}

impl<T, H, O> Resume for Connection<T, H, O>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    /// The end of an idle connection's stackless wait: input, or the idle timeout.
    fn resume(mut self: Box<Self>, ready: io::Result<()>) -> Step {
        match ready {
            Ok(()) => self.run(),
            Err(e) if is_timeout(&e) && self.timed_out() => self.run(),
            Err(_) => Step::done(),
        }
    }
}

/// Counts a stream fiber out and wakes the owner (which may now be idle) when it ends, also
/// when it unwinds.
struct StreamDone {
    open: Arc<AtomicUsize>,
    owner: std::task::Waker,
}

impl Drop for StreamDone {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.owner.wake_by_ref();
    }
}
