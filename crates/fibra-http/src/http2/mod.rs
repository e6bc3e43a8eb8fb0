//! HTTP/2 (RFC 9113) on the HTTP/1.1 port: a connection that opens with the HTTP/2 preface
//! (cleartext with prior knowledge, or TLS after ALPN chose `h2`) is handed here by the
//! HTTP/1.1 loop, with the bytes it had read.
//!
//! The framing is our own, made for fibers:
//!
//! - one **owner fiber** (the connection's own, `conn`) reads the client's frames, keeps
//!   the protocol's state (`recv`: the stream states, flow control, SETTINGS, PING, header
//!   blocks, the flood defences), starts a fiber per request stream, and writes the frames
//!   every stream has put into the connection's shared output (`shared`), batched into one
//!   `write` per round. Between rounds it waits for input or a wake-up from a stream fiber;
//!   an idle connection waits without a stack;
//! - each request stream runs the **unchanged application** in a fiber of its own on the
//!   same worker (`stream`), as Warp runs a thread per stream: the handler reads the body
//!   and returns its response, whose HEADERS (`hpack`, the static table and literals) and
//!   DATA frames (payload copied once, file bodies read straight into the output) the fiber
//!   writes into the shared output within the flow-control windows (`stream_io`), waiting
//!   (up to the write timeout) when they are closed.
//!
//! Graceful shutdown sends GOAWAY with the last stream id and lets the streams in flight
//! finish; an idle connection (no open stream) ends with GOAWAY after the idle timeout.
//! Why our own framing rather than the `h2` crate's: the crate cost 2.2–4.2× h2o's
//! instructions per request, most of them in its stream bookkeeping and buffers
//! (`docs/lab/http2-h2o-2026-11-29.md`).

use std::sync::Arc;

use fibra::fiber::Step;

use crate::going_away::GoingAway;
use crate::lifecycle::{Detached, Owner};
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::Transport;

mod conn;
mod frame;
pub(crate) mod hpack;
mod recv;
mod request_body;
mod request_head;
mod send;
mod shared;
mod stream;
mod stream_io;

use conn::Connection;
use recv::Recv;
use shared::ConnShared;

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
/// connection ends: the connection's fiber becomes the owner fiber. With no stream open
/// and nothing to write it waits for input without a stack
/// ([`Transport::when_readable`]), like an idle HTTP/1.1 connection.
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
    match open(io, early, settings, handler, owner, true) {
        Some(conn) => conn.run(),
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
    if let Some(conn) = open(
        io,
        Vec::new(),
        settings,
        handler,
        Detached::new(true),
        false,
    ) {
        // Not stackless: `run` waits on this stack and returns only when the connection has
        // ended (a finished step).
        drop(conn.run());
    }
}

/// The connection's state, its SETTINGS written: `None` if that write failed.
fn open<T, H, O>(
    io: T,
    early: Vec<u8>,
    settings: Arc<Settings>,
    handler: Arc<H>,
    owner: O,
    stackless: bool,
) -> Option<Box<Connection<T, H, O>>>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    // Graceful shutdown wakes the owner through the same `Notify` as the streams do, so a
    // busy connection learns of it at once and sends GOAWAY.
    let notify = match owner.ctl().going_away {
        Some(cell) => {
            let going_away = cell.get_or_init(|| Arc::new(GoingAway::default()));
            going_away.notify().clone()
        }
        None => Arc::default(),
    };
    let mut conn = Box::new(Connection {
        peer: io.peer_addr(),
        server_name: io.server_name().map(Arc::from),
        io,
        shared: Arc::new(ConnShared::new(notify, frame::MAX_FRAME)),
        recv: Recv::new(settings.max_head_bytes),
        partial: Vec::new(),
        early,
        spare: conn::new_out(),
        drained: false,
        settings,
        handler,
        owner,
        worker: fibra::current_worker(),
        streamed: Arc::default(),
        stackless,
        drain_deadline: None,
    });
    conn.greet().then_some(conn)
}
