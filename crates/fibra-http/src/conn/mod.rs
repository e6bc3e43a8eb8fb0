//! The connection loop: read heads, run the handler, write responses — one fiber per
//! connection, readable top to bottom (Go's `conn.serve`).
//!
//! One read buffer and one write buffer per connection, allocated once. All requests already
//! in the read buffer are answered before the socket is read again, and their responses leave
//! in one `write` (pipelining). The write buffer is flushed only before the connection would
//! block on a read, before a large body, or at close.
//!
//! One keep-alive loop (`Connection::serve`) for every transport: a burst answers what has
//! arrived, then the idle stage waits for more. The server runs each connection as a fiber
//! made of steps (`serve_steps`), whose idle connections wait without a stack when the
//! transport can ([`Transport::when_readable`]); [`serve_connection`] runs the same loop on the
//! caller's stack, for any transport.
//!
//! The parts, along hyper's h1 lines:
//!
//! - `buffered`: the state a connection shares with its request bodies (buffers, transport),
//!   flushing, reading what has arrived, lending the worker's hot buffers;
//! - `decode`: request body framing and reading (`BodyState`, the `BodySource` of a `Body`),
//!   draining unread bodies;
//! - `compose`: response heads as HTTP/1.1 bytes (the only place they are written);
//! - `encode`: the head, then the body through HTTP/1.1's body sink (`Http1Body`, for
//!   `crate::response`'s one match over body kinds), and the server's own error pages;
//! - `dispatch`: one burst — parse, run the service, send, re-arm the read timeout;
//! - `refuse`: the server's own answers (408, 431, body errors, 500);
//! - `switch`: the hand-offs to an upgrade or to HTTP/2 (preface or ALPN);
//! - `idle`: the idle stage, stackless or on the stack;
//! - `linger`: lingering close;
//! - `log`: the access-log entries of answered and refused requests.

use std::cell::RefCell;
use std::io;
use std::ops::Deref;
use std::rc::Rc;
use std::sync::Arc;

use fibra::fiber::{Resume, Step, Wait};

use crate::body::BodySource;
use crate::lifecycle::Detached;
pub(crate) use crate::lifecycle::{ConnCtl, Owner};
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::Transport;

mod buffered;
mod compose;
mod decode;
mod dispatch;
mod encode;
mod idle;
mod linger;
mod log;
mod refuse;
mod switch;
#[cfg(test)]
mod tests;

use buffered::{open, Shared};
use dispatch::Conn;
use idle::Idle;

/// Marks the branch that calls it as rarely taken, so that the compiler places its code away
/// from the hot path and the lines a wake-up runs hold less cold code (`std::hint::cold_path`,
/// stable only since Rust 1.95, does the same).
#[cold]
#[inline]
pub(super) fn cold_path() {}

/// `fields` as HTTP/1.1 field lines, each ending in CRLF, in the case and order the connection
/// writes a handler's fields (a [`PreparedHead`](crate::prepared::PreparedHead)'s lines).
pub(crate) fn render_fields(fields: &http::HeaderMap) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    for (name, value) in fields {
        compose::put_field(&mut out, name, value);
    }
    out
}

/// Serves HTTP/1.1 on one connection until it closes, running `handler` for each request.
///
/// This is the loop `Server` runs in each connection's fiber; call it yourself to serve over
/// another transport (e.g. TLS), from a fiber or a plain thread.
pub fn serve_connection<T, H>(io: T, settings: &Settings, handler: &H)
where
    T: Transport,
    H: Service + ?Sized,
{
    let owner = Detached::new(false);
    // Waits on the caller's stack: there is no fiber made of steps to return a wait to.
    let served = Connection::new(io, settings, handler, owner).serve(false);
    debug_assert!(matches!(served, Served::Ended));
}

/// How a run of the keep-alive loop ([`Connection::serve`]) ended.
enum Served {
    /// The connection has ended.
    Ended,
    /// It waits for input without a stack: the fiber's next step.
    Parked(Wait),
    /// It opened with the HTTP/2 preface (and its owner allows HTTP/2, [`ConnCtl::h2`]):
    /// the transport and the bytes read so far go to [`crate::http2`].
    Http2,
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
    G::Target: Service,
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

    /// A burst ([`Conn::serve_ready`]) on the worker's shared stack, for a connection that
    /// waits on its own (see [`serve`](Self::serve)).
    // Out of line, so that the stackless path's burst is the only call of its closure and is
    // inlined into the loop: with both paths calling one closure, LLVM kept it out of line,
    // and a pipelined request cost ~20 more instructions (2.7 %, bench/arch_gate.sh).
    #[inline(never)]
    fn burst_on_shared_stack(&self) -> bool {
        fibra::fiber::on_shared_stack(|| self.with_conn(|conn| conn.serve_ready()))
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
    /// Returns how it ended: the connection ended, parked, or switches to HTTP/2.
    fn serve(&self, stackless: bool) -> Served {
        loop {
            let alive = if stackless {
                self.with_conn(|conn| conn.serve_ready())
            } else {
                self.burst_on_shared_stack()
            };
            if !alive {
                return if self.shared.borrow().h2 {
                    Served::Http2
                } else {
                    Served::Ended
                };
            }
            let mut sh = self.shared.borrow_mut();
            let Some(io) = &sh.io else {
                return Served::Ended;
            };
            if stackless {
                if let Some(wait) = idle::park(io) {
                    return Served::Parked(wait);
                }
            }
            match idle::wait(io) {
                Idle::Ready => {}
                Idle::TimedOut => {
                    self.with_conn(|conn| conn.read_timed_out(&mut sh));
                    return Served::Ended;
                }
                Idle::Closed => return Served::Ended,
            }
        }
    }
}

/// [`serve_connection`] as the first step of a fiber made of steps
/// ([`fibra::fiber::Builder::spawn_steps`]), the way [`crate::Server`] runs its connections:
/// between requests the connection waits without a stack when the transport can
/// ([`Transport::when_readable`]), and each burst of requests runs on the stack the worker used
/// last. For an accept loop of your own:
///
/// ```
/// use std::io::{Read, Write};
/// use std::sync::Arc;
/// use fibra::fiber::Builder;
/// use fibra_http::{serve_connection_steps, Request, Response, Settings, Tcp};
///
/// fibra::run(|| {
///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let settings = Arc::new(Settings::default());
///     let handler = Arc::new(|_req: Request| Response::new("hi".into()));
///     fibra::spawn(move || {
///         let (stream, _) = listener.accept().unwrap();
///         let io = Tcp::new(stream);
///         Builder::new()
///             .spawn_steps(move || serve_connection_steps(io, settings, handler))
///             .unwrap();
///     });
///     let mut client = fibra::net::TcpStream::connect(addr).unwrap();
///     client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
///     let mut reply = String::new();
///     client.read_to_string(&mut reply).unwrap();
///     assert!(reply.ends_with("\r\n\r\nhi"));
/// });
/// ```
pub fn serve_connection_steps<T, H>(io: T, settings: Arc<Settings>, handler: Arc<H>) -> Step
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
{
    let owner = Detached::new(false);
    serve_steps(io, settings, handler, owner)
}

/// Serves a connection as the first step of a fiber made of steps, with the lifecycle flags
/// of `owner` (the server's): the loop of [`Connection::serve`].
pub(crate) fn serve_steps<T, H, O>(
    io: T,
    settings: Arc<Settings>,
    handler: Arc<H>,
    owner: O,
) -> Step
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    step(Box::new(Connection::new(io, settings, handler, owner)))
}

/// A connection of a fiber made of steps: shared settings and a handler other fibers can run
/// (HTTP/2's stream fibers).
type SteppedConnection<T, H, O> = Connection<T, Arc<Settings>, Arc<H>, O>;

/// Runs the loop until the connection ends or parks without a stack; a connection that
/// turns out to be HTTP/2 is served as such on this fiber, which then holds its stack.
fn step<T, H, O>(c: Box<SteppedConnection<T, H, O>>) -> Step
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    match c.serve(true) {
        // The connection's box is the rest of the fiber: waiting allocates nothing.
        Served::Parked(wait) => wait.resume_with(c),
        Served::Ended => Step::done(),
        Served::Http2 => {
            let (io, early) = {
                let mut sh = c.shared.borrow_mut();
                let early = sh.pending().to_vec();
                (sh.io.take(), early)
            };
            match io {
                Some(io) => {
                    let c = *c;
                    crate::http2::serve(io, early, c.settings, c.handler, c.owner)
                }
                None => Step::done(),
            }
        }
    }
}

impl<T, H, O> Resume for SteppedConnection<T, H, O>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
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
            Idle::Closed => Step::done(),
        }
    }
}
