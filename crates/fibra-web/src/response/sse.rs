//! Server-sent events: [`Sse`] answers with a `text/event-stream` whose [`Event`]s a closure
//! sends, in a fiber of its own, through an [`SseSender`].
//!
//! ```
//! use std::time::Duration;
//! use fibra_web::response::sse::{Event, KeepAlive, Sse, SseSender};
//! use fibra_web::routing::get;
//! use fibra_web::Router;
//!
//! fn ticks() -> Sse {
//!     Sse::new(|tx: &mut SseSender| {
//!         for i in 0.. {
//!             // Fails once the client has gone away (or the server shuts down): the loop ends.
//!             tx.send(Event::default().id(i.to_string()).data("tick"))?;
//!             fibra::time::sleep(Duration::from_secs(1));
//!         }
//!         Ok(())
//!     })
//!     .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
//! }
//!
//! let app: Router = Router::new().route("/ticks", get(ticks));
//! ```
//!
//! How it runs: the response's body is a stream (`ResponseBody::stream`, chunked on
//! HTTP/1.1) written by the connection's fiber. That fiber starts the closure in a fiber of
//! its own (on the same worker), then waits for what the closure sends through a queue
//! bounded in bytes (a sender waits while it is full: a slow client slows its producer
//! instead of growing memory), and writes and flushes each batch of events as it comes. With
//! a [`KeepAlive`], a wait that lasts its interval writes a comment instead, so proxies keep
//! the connection open and a client that has gone away is found. The stream ends:
//!
//! - when the closure returns: with `Ok`, the response ends properly; with an error (or a
//!   panic), the connection is closed without the last chunk, so the client sees the stream
//!   cut short (as axum does with a stream's error);
//! - when a write fails (the client has gone away): [`SseSender::send`] fails from then on
//!   with `BrokenPipe`, so a loop over `send(..)?` ends. Without keep-alive this is found only
//!   when the next event is written;
//! - when the server shuts down gracefully (`ServerHandle::shutdown`, or `drain` once its
//!   idle grace is over, as for a WebSocket): the response ends properly (on HTTP/2, with
//!   END_STREAM after the connection's GOAWAY) and `send` fails with `BrokenPipe`.
//!
//! A `HEAD` request gets the head only; the closure never runs.

mod event;
mod queue;

use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fibra_http::http::header::CACHE_CONTROL;
use fibra_http::http::HeaderValue;
use fibra_http::{BodyWriter, Response, ResponseBody};

pub use event::Event;
use queue::{Queue, Taken};

use super::IntoResponse;

/// Most bytes of events queued for the connection's fiber before [`SseSender::send`] waits.
const QUEUE_BYTES: usize = 64 * 1024;

type Producer = Box<dyn FnOnce(&mut SseSender) -> io::Result<()> + Send>;

/// A `text/event-stream` response whose events a closure sends: see the module docs.
#[must_use]
pub struct Sse {
    producer: Producer,
    keep_alive: Option<KeepAlive>,
}

impl Sse {
    /// A stream of the events `producer` sends; it ends when `producer` returns. `producer`
    /// runs in a fiber of its own, and may block (sleep, wait on a channel, query a
    /// database) between its sends.
    pub fn new<F>(producer: F) -> Sse
    where
        F: FnOnce(&mut SseSender) -> io::Result<()> + Send + 'static,
    {
        Sse {
            producer: Box::new(producer),
            keep_alive: None,
        }
    }

    /// Sends `keep_alive`'s comment whenever no event has gone out for its interval. Default:
    /// none (as axum's).
    pub fn keep_alive(mut self, keep_alive: KeepAlive) -> Sse {
        self.keep_alive = Some(keep_alive);
        self
    }
}

impl std::fmt::Debug for Sse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sse")
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

/// What an [`Sse`]'s closure sends its events through.
pub struct SseSender {
    queue: Arc<Queue>,
}

impl SseSender {
    /// Queues `event` for the connection (waiting while the queue is full). Fails with
    /// `BrokenPipe` once the stream has ended on the connection's side: the client has gone
    /// away, a write failed, or the server is shutting down.
    pub fn send(&self, event: Event) -> io::Result<()> {
        self.queue.push(event.encode())
    }

    /// Whether the stream has ended on the connection's side (the next `send` fails).
    pub fn is_closed(&self) -> bool {
        self.queue.is_closed()
    }
}

impl Drop for SseSender {
    /// A closure that unwound (a panic) ends the stream as an error (the closure's result,
    /// if it returned, was given first and stands).
    fn drop(&mut self) {
        self.queue.finish(Err(io::Error::other(
            "the event stream's producer panicked",
        )));
    }
}

impl std::fmt::Debug for SseSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseSender")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The comment an [`Sse`] sends when it has sent nothing for a while, which keeps proxies
/// from closing an idle connection and finds clients that have gone away.
#[derive(Debug, Clone)]
#[must_use]
pub struct KeepAlive {
    event: Bytes,
    interval: Duration,
}

impl KeepAlive {
    /// An empty comment (`:`) after 15 s without an event (axum's defaults).
    pub fn new() -> KeepAlive {
        KeepAlive {
            event: Bytes::from_static(b":\n\n"),
            interval: Duration::from_secs(15),
        }
    }

    /// How long without an event before the comment is sent.
    pub fn interval(mut self, interval: Duration) -> KeepAlive {
        self.interval = interval;
        self
    }

    /// The comment's text (`: text`).
    ///
    /// # Panics
    /// If `text` has a newline or a carriage return.
    pub fn text<T: AsRef<str>>(self, text: T) -> KeepAlive {
        self.event(Event::default().comment(text))
    }

    /// An event of one's own to send instead of the comment.
    pub fn event(mut self, event: Event) -> KeepAlive {
        self.event = event.encode();
        self
    }
}

impl Default for KeepAlive {
    fn default() -> KeepAlive {
        KeepAlive::new()
    }
}

impl IntoResponse for Sse {
    fn into_response(self) -> Response {
        let Sse {
            producer,
            keep_alive,
        } = self;
        let body = ResponseBody::stream(move |w| write_events(w, producer, keep_alive))
            .with_content_type(HeaderValue::from_static("text/event-stream"));
        let mut res = Response::new(body);
        res.headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        res
    }
}

/// Ends the stream on the connection's side when the body's writer returns (or unwinds).
struct CloseOnDrop(Arc<Queue>, &'static str);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

/// The body: starts the producer, then writes what it sends until it is done, the client
/// has gone away or the server shuts down.
fn write_events(
    w: &mut BodyWriter<'_>,
    producer: Producer,
    keep_alive: Option<KeepAlive>,
) -> io::Result<()> {
    let ready = w.going_away_notify().unwrap_or_default();
    let queue = Arc::new(Queue::new(QUEUE_BYTES, ready));
    let mut closer = CloseOnDrop(queue.clone(), "the event stream has ended");
    start_producer(producer, queue.clone())?;
    // The head goes out now, not with the first event: a client (a browser's `EventSource`)
    // counts the stream open when it has the head, and an event may be long in coming.
    w.flush()?;
    let interval = keep_alive.as_ref().map(|k| k.interval);
    loop {
        if w.is_going_away() {
            closer.1 = "the event stream has ended: the server is shutting down";
            return Ok(());
        }
        let written = match queue.take(interval) {
            Taken::Events(events) => events.iter().try_for_each(|e| w.write_all(e)),
            Taken::Finished(result) => return result,
            Taken::Idle => match &keep_alive {
                Some(k) => w.write_all(&k.event),
                None => Ok(()),
            },
            Taken::Woken => continue,
        };
        if let Err(e) = written.and_then(|()| w.flush()) {
            closer.1 = "the event stream has ended: the client has gone away";
            return Err(e);
        }
    }
}

/// Runs `producer` in a fiber on this worker (a thread outside a fibra runtime, as when a
/// body is collected by a plain thread); its result ends the stream.
fn start_producer(producer: Producer, queue: Arc<Queue>) -> io::Result<()> {
    let run = move || {
        let mut tx = SseSender { queue };
        let result = producer(&mut tx);
        tx.queue.finish(result);
    };
    let mut fiber = fibra::fiber::Builder::new().name("sse-producer");
    if let Some(worker) = fibra::current_worker() {
        fiber = fiber.worker(worker);
    }
    if fibra::fiber::in_fiber() {
        fiber.spawn(run).map(drop)
    } else {
        std::thread::Builder::new()
            .name("sse-producer".into())
            .spawn(run)
            .map(drop)
    }
}
