//! Runs the load on a fibra runtime: one fiber per connection, or with
//! `--batch` one fiber per worker driving all of that worker's connections in
//! rounds (the Anon pattern).
//!
//! Each worker gets a share of the request budget and a statistics slot
//! ([`stats`]); fibers are pinned to workers so a fiber only ever touches its
//! own worker's slot. The request bytes are rendered once and shared. Per
//! request a fiber does one `write`, one `read` (usually), two clock reads and
//! a few counter updates: no allocation, no lock, no shared cache line.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::sync::mpsc;
use fibra_http::client::ParseError;
use rustls::pki_types::ServerName;

use super::args::{Config, Limit};
use super::conn::{Conn, RecvError, TlsClient};
use super::http2::{self, H2Load};
use super::http3::{self, H3Load};
use super::pace::Pace;
use super::paths::Draw;
use super::stats::{self, Problem, Stats, WorkerState};
use super::ws::{self, WsLoad};

/// Pause after a failed connect in a timed run, so a refused port is not
/// hammered in a busy loop for the whole duration.
pub(super) const CONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// How long a timed run waits past its end for requests in flight (when no
/// `--timeout` says otherwise).
const DEFAULT_GRACE: Duration = Duration::from_secs(2);
/// How often the root fiber looks at the stop flag while it waits.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Read-only state shared by every connection fiber.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) addr: SocketAddr,
    /// The request repeated `pipeline` times.
    requests: Vec<u8>,
    request_len: usize,
    /// `--paths`: one request per listed path, drawn at random for each request (empty:
    /// every request is `requests`' one).
    path_requests: Vec<Vec<u8>>,
    seed: u64,
    drop_bodies: bool,
    pipeline: u64,
    keep_alive: bool,
    head_request: bool,
    /// For an `https` target.
    tls: Option<TlsClient>,
    pub(super) timeout: Option<Duration>,
    /// End of a timed run.
    pub(super) deadline: Option<Instant>,
    /// Set when the user interrupts the run: start nothing more.
    stop: Arc<AtomicBool>,
    /// `--ws`: the WebSocket echo load instead of HTTP requests.
    ws: Option<WsLoad>,
    /// `--h2`: HTTP/2 streams instead of HTTP/1.x requests.
    h2: Option<H2Load>,
    /// `--h3`: HTTP/3 streams instead of HTTP/1.x requests.
    h3: Option<Arc<H3Load>>,
    /// `--rate`: requests wait for their turn, so a request's clock starts at its send
    /// (not at the previous response).
    paced: bool,
}

impl Shared {
    /// An unconnected HTTP/1.x connection slot with this run's settings.
    fn conn(&self) -> Conn {
        Conn::new(self.head_request, self.tls.clone()).drop_bodies(self.drop_bodies)
    }

    /// The bytes of `n` back-to-back requests.
    fn requests(&self, n: u64) -> &[u8] {
        &self.requests[..n as usize * self.request_len]
    }

    /// Takes up to `want` requests from this worker's budget; with `--rate`, waits for
    /// their turn ([`super::pace`]).
    #[inline]
    pub(super) fn take(&self, want: u64) -> u64 {
        if self.stop.load(Ordering::Relaxed)
            || self.deadline.is_some_and(|d| fibra::time::now() >= d)
        {
            return 0;
        }
        let (n, turn) = stats::with(|w| {
            let n = w.take(want);
            let turn = match &mut w.pace {
                Some(pace) if n > 0 => Some(pace.turn(n, fibra::time::now())),
                _ => None,
            };
            (n, turn)
        });
        if let Some(at) = turn {
            // A turn past the end of a timed run is not taken.
            if self.deadline.is_some_and(|d| at >= d) {
                stats::with(|w| w.give_back(n));
                return 0;
            }
            if at > fibra::time::now() {
                fibra::time::sleep_until(at);
            }
        }
        n
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// Merged statistics of all workers.
    pub stats: Stats,
    /// From the first connection attempt to the last response.
    pub elapsed: Duration,
}

/// `total` split into `parts` shares differing by at most one.
fn share(total: u64, parts: usize, index: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

/// Runs the benchmark described by `config` against `addr`. `progress`, if
/// given, holds one live counter of finished requests per worker; setting
/// `stop` ends the run early (requests in flight still finish).
pub fn execute(
    config: &Config,
    addr: SocketAddr,
    progress: Option<Vec<Arc<AtomicU64>>>,
    stop: Arc<AtomicBool>,
) -> io::Result<Outcome> {
    let workers = config.workers;
    let runtime = fibra::Runtime::builder().workers(workers).build()?;
    let pipeline = config.pipeline;
    let mut shared = Shared {
        addr,
        requests: config.request.repeat(pipeline),
        request_len: config.request.len(),
        path_requests: config.path_requests.clone(),
        seed: config.seed,
        drop_bodies: config.drop_bodies,
        pipeline: pipeline as u64,
        keep_alive: config.keep_alive,
        head_request: config.head_request,
        tls: match &config.tls {
            None => None,
            Some(tls) => Some(TlsClient {
                config: tls.clone(),
                name: ServerName::try_from(config.target.host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            }),
        },
        timeout: config.timeout,
        deadline: None,
        stop,
        ws: config
            .ws_message
            .map(|size| WsLoad::new(&config.target, size)),
        h2: config.h2.clone(),
        h3: config.h3.clone().map(Arc::new),
        paced: config.rate.is_some(),
    };
    let (limit, connections, batch) = (config.limit, config.connections, config.batch);
    let config_rate = config.rate;
    let grace = config.timeout.unwrap_or(DEFAULT_GRACE);
    let outcome = runtime.block_on(move || -> io::Result<Outcome> {
        for w in 0..workers {
            let budget = match limit {
                Limit::Requests(n) => share(n, workers, w),
                Limit::Duration(_) => u64::MAX,
            };
            let counter = progress.as_ref().map(|p| p[w].clone());
            let mut state = WorkerState::new(budget, counter);
            state.pace = config_rate.map(|rate| Pace::per_worker(rate, workers));
            fibra::fiber::Builder::new()
                .worker(w)
                .spawn(move || stats::install(state))?
                .join()
                .expect("installing worker state cannot panic");
        }
        let start = Instant::now();
        if let Limit::Duration(d) = limit {
            shared.deadline = Some(start + d);
        }
        let shared = Arc::new(shared);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let fibers = if batch { workers } else { connections };
        for i in 0..fibers {
            let (shared, done) = (shared.clone(), FinishGuard(done_tx.clone()));
            let builder = fibra::fiber::Builder::new()
                .name(format!("bench-{i}"))
                .worker(i % workers);
            if batch {
                let conns = share(connections as u64, workers, i) as usize;
                builder.spawn(move || batch_fiber(&shared, conns, i, done))?;
            } else if shared.h2.is_some() {
                builder.spawn(move || {
                    if let Some(load) = &shared.h2 {
                        http2::connection_fiber(&shared, load, done);
                    }
                })?;
            } else if shared.h3.is_some() {
                builder.spawn(move || {
                    if let Some(load) = &shared.h3 {
                        http3::connection_fiber(&shared, load, done);
                    }
                })?;
            } else if shared.ws.is_some() {
                builder.spawn(move || {
                    if let Some(load) = &shared.ws {
                        ws::connection_fiber(&shared, load, i, done);
                    }
                })?;
            } else {
                builder.spawn(move || connection_fiber(&shared, i, done))?;
            }
        }
        drop(done_tx);
        // Wait for every driver fiber; past the end of a timed run or an
        // interrupt, give requests in flight `grace` to finish.
        let mut give_up = shared.deadline.map(|d| d + grace);
        let mut finished = 0;
        while finished < fibers {
            match done_rx.recv_timeout(STOP_POLL) {
                Ok(()) => finished += 1,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let now = Instant::now();
                    if shared.stop.load(Ordering::Relaxed) {
                        give_up = Some(give_up.unwrap_or(now + grace).min(now + grace));
                    }
                    if give_up.is_some_and(|at| now >= at) {
                        break;
                    }
                }
            }
        }
        let mut total = Stats::new();
        let mut last = None;
        for w in 0..workers {
            let state = fibra::fiber::Builder::new()
                .worker(w)
                .spawn(stats::take)?
                .join();
            if let Ok(Some(state)) = state {
                total.merge(&state.stats);
                last = last.max(state.finished);
            }
        }
        let end = match last {
            Some(t) if finished == fibers => t,
            _ => Instant::now(),
        };
        Ok(Outcome {
            stats: total,
            elapsed: end.saturating_duration_since(start),
        })
    });
    // Dropping the runtime cancels any fiber still stuck past the grace period.
    drop(runtime);
    outcome
}

/// Counts a broken connection's `lost` requests as `problem`; false once the budget is spent.
/// A connection that failed before taking requests (`lost` 0) costs one, so that a server
/// that cannot be reached ends an `-n` run instead of being tried forever. In a timed run it
/// waits a moment before the next connect.
pub(super) fn count_broken(shared: &Shared, problem: Problem, why: String, lost: u64) -> bool {
    let lost = if lost > 0 { lost } else { shared.take(1) };
    if lost == 0 {
        return false;
    }
    stats::with(|w| {
        w.stats.problem(problem, lost, || why);
        w.advance(lost);
    });
    if shared.deadline.is_some() {
        fibra::time::sleep(CONNECT_BACKOFF);
    }
    true
}

/// Signals the root fiber when a driver fiber ends, even by panic.
pub(super) struct FinishGuard(mpsc::Sender<()>);

impl Drop for FinishGuard {
    fn drop(&mut self) {
        stats::with(|w| w.fiber_finished(Instant::now()));
        let _ = self.0.send(());
    }
}

/// What a connection sends: the one request, or (`--paths`) requests drawn from the list.
struct Requests<'a> {
    shared: &'a Shared,
    draw: Draw,
    /// The drawn requests of one write.
    scratch: Vec<u8>,
}

impl<'a> Requests<'a> {
    /// The requests of connection number `index`.
    fn new(shared: &'a Shared, index: usize) -> Requests<'a> {
        Requests {
            shared,
            draw: Draw::new(shared.seed, index as u64),
            scratch: Vec::new(),
        }
    }

    /// The bytes of the next `n` requests, back to back.
    fn next(&mut self, n: u64) -> &[u8] {
        let list = &self.shared.path_requests;
        if list.is_empty() {
            return self.shared.requests(n);
        }
        self.scratch.clear();
        for _ in 0..n {
            self.scratch
                .extend_from_slice(&list[self.draw.below(list.len())]);
        }
        &self.scratch
    }
}

/// One connection: take requests (`pipeline` at a time), send them in one
/// write, read every response, repeat until the budget or the time is spent.
fn connection_fiber(shared: &Shared, index: usize, _done: FinishGuard) {
    let mut conn = shared.conn();
    let mut requests = Requests::new(shared, index);
    let mut last = Instant::now();
    loop {
        let n = shared.take(shared.pipeline);
        if n == 0 {
            break;
        }
        let Some(opened) = connect(&mut conn, shared, n) else {
            continue;
        };
        // On a reused connection the next request leaves right after the
        // last response was timed: reuse that clock reading (unless it waited for its
        // turn).
        let sent = if opened || shared.paced {
            Instant::now()
        } else {
            last
        };
        let bytes = requests.next(n);
        let len = bytes.len() as u64;
        if send(&mut conn, bytes, n) {
            last = read_responses(&mut conn, shared, n, sent, len);
        }
    }
}

/// The Anon pattern: one request on every connection of this worker, then
/// every response in turn, round after round.
fn batch_fiber(shared: &Shared, connections: usize, index: usize, _done: FinishGuard) {
    let mut conns: Vec<(Conn, Option<(Instant, u64)>)> =
        (0..connections).map(|_| (shared.conn(), None)).collect();
    let mut requests = Requests::new(shared, index);
    loop {
        let mut taken = 0;
        for (conn, sent) in conns.iter_mut() {
            if shared.take(1) == 0 {
                break;
            }
            taken += 1;
            if connect(conn, shared, 1).is_some() {
                let at = Instant::now();
                let bytes = requests.next(1);
                let len = bytes.len() as u64;
                if send(conn, bytes, 1) {
                    *sent = Some((at, len));
                }
            }
        }
        if taken == 0 {
            break;
        }
        for (conn, sent) in conns.iter_mut() {
            if let Some((at, len)) = sent.take() {
                read_responses(conn, shared, 1, at, len);
            }
        }
    }
}

/// Connects `conn` if needed: `Some(true)` when a connection was opened,
/// `Some(false)` when the open one is reused, `None` on failure (recorded as
/// `n` errored requests).
fn connect(conn: &mut Conn, shared: &Shared, n: u64) -> Option<bool> {
    match conn.ensure_connected(&shared.addr, shared.timeout) {
        Ok(opened) => {
            if opened {
                stats::with(|w| w.stats.connects += 1);
            }
            Some(opened)
        }
        Err(e) => {
            let problem = if e.kind() == io::ErrorKind::TimedOut {
                Problem::Timeout
            } else {
                Problem::Connect
            };
            stats::with(|w| {
                w.stats.problem(problem, n, || format!("connect: {e}"));
                w.advance(n);
            });
            if shared.deadline.is_some() {
                fibra::time::sleep(CONNECT_BACKOFF);
            }
            None
        }
    }
}

/// Sends `bytes` (`n` requests); on failure closes and records them errored.
/// On success the bytes are counted by [`read_responses`].
fn send(conn: &mut Conn, bytes: &[u8], n: u64) -> bool {
    match conn.send(bytes) {
        Ok(()) => true,
        Err(e) => {
            conn.close();
            let problem = if e.kind() == io::ErrorKind::TimedOut {
                Problem::Timeout
            } else {
                Problem::Write
            };
            stats::with(|w| {
                w.stats.problem(problem, n, || format!("write: {e}"));
                w.advance(n);
            });
            false
        }
    }
}

/// Classifies a failed read.
fn problem_of(e: &RecvError) -> Problem {
    match e {
        RecvError::Io(e) if e.kind() == io::ErrorKind::TimedOut => Problem::Timeout,
        RecvError::Io(_) => Problem::Read,
        RecvError::Parse(ParseError::Closed) => Problem::Closed,
        RecvError::Parse(ParseError::Truncated) => Problem::Truncated,
        RecvError::Parse(_) => Problem::Malformed,
    }
}

/// Reads the responses to `n` requests (`written` bytes) sent together at
/// `sent` and records each; returns when the last one completed. If the
/// server ends the connection early, requests it can no longer answer are
/// returned to the budget (after `Connection: close`) or counted as errored
/// or failed (after an error).
fn read_responses(
    conn: &mut Conn,
    shared: &Shared,
    n: u64,
    sent: Instant,
    mut written: u64,
) -> Instant {
    let mut left = n;
    loop {
        let result = conn.recv();
        let now = Instant::now();
        let (read, head) = (conn.take_bytes_read(), conn.take_head_bytes());
        match result {
            Ok(response) => {
                left -= 1;
                let reuse = shared.keep_alive && response.keep_alive;
                stats::with(|w| {
                    w.stats.response(response.status, now - sent);
                    w.stats.bytes_read += read;
                    w.stats.bytes_head += head;
                    w.stats.bytes_written += written;
                    w.advance(1);
                    if !reuse && left > 0 {
                        w.give_back(left);
                    }
                });
                written = 0;
                if !reuse {
                    conn.close();
                    return now;
                }
                if left == 0 {
                    return now;
                }
            }
            Err(e) => {
                conn.close();
                let problem = problem_of(&e);
                stats::with(|w| {
                    w.stats.problem(problem, left, || match &e {
                        RecvError::Io(e) => format!("read: {e}"),
                        RecvError::Parse(e) => e.to_string(),
                    });
                    w.stats.bytes_read += read;
                    w.stats.bytes_head += head;
                    w.stats.bytes_written += written;
                    w.advance(left);
                });
                return now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_add_up() {
        for (total, parts) in [(10, 3), (1000, 7), (5, 5), (2, 4), (u64::MAX, 1)] {
            let sum: u64 = (0..parts).map(|i| share(total, parts, i)).sum();
            assert_eq!(sum, total);
            let (lo, hi) = (share(total, parts, parts - 1), share(total, parts, 0));
            assert!(hi - lo <= 1);
        }
    }
}
