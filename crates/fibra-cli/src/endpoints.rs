//! `--health PATH` and `--metrics PATH`: endpoints for a balancer and a Prometheus scraper,
//! answered before the app.
//!
//! - Health: `200 ok` while serving, `503 draining` once the server is shutting down or
//!   handing over to a new binary (with `--drain-delay`, it keeps serving that long after
//!   SIGTERM with the health check failing, so a balancer stops sending first).
//! - Metrics, in Prometheus's text format: requests by status class, response body bytes
//!   (bodies of known length), open connections, a histogram of the time handlers take, and
//!   whether the server drains; idle connections (counted when scraped), and the error
//!   responses the server made itself (`fibra_server_errors_total`: rejected requests, 400,
//!   408, 413, 414, 431; panics, 500; the proxy's 502 and 504), counted where they are
//!   reported, off the request path. Counters are per worker thread (each written only by its
//!   thread, with plain loads and stores: no shared cache line, no locked instruction) and
//!   summed when scraped.

use std::cell::OnceCell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use fibra_http::http::{header, HeaderValue, Method, StatusCode};
use fibra_http::{ConnectionCount, Request, Response, ResponseBody};

/// Upper bounds of the latency histogram's buckets, in seconds (and in nanoseconds).
const BUCKETS: [(&str, u64); 16] = [
    ("0.0001", 100_000),
    ("0.00025", 250_000),
    ("0.0005", 500_000),
    ("0.001", 1_000_000),
    ("0.0025", 2_500_000),
    ("0.005", 5_000_000),
    ("0.01", 10_000_000),
    ("0.025", 25_000_000),
    ("0.05", 50_000_000),
    ("0.1", 100_000_000),
    ("0.25", 250_000_000),
    ("0.5", 500_000_000),
    ("1", 1_000_000_000),
    ("2.5", 2_500_000_000),
    ("5", 5_000_000_000),
    ("10", 10_000_000_000),
];

/// One worker thread's counters. Written only by that thread (load + store), read by the
/// scrape from any thread.
#[derive(Default)]
struct WorkerStats {
    /// Responses by status class: 1xx … 5xx.
    by_class: [AtomicU64; 5],
    bytes: AtomicU64,
    /// Per bucket of `BUCKETS`, plus one for slower requests (not cumulative here).
    latency: [AtomicU64; BUCKETS.len() + 1],
    latency_sum_ns: AtomicU64,
}

/// Adds `n` to a counter only this thread writes.
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Every worker's counters, for the scrape.
static WORKERS: Mutex<Vec<Arc<WorkerStats>>> = Mutex::new(Vec::new());

thread_local! {
    static LOCAL: OnceCell<Arc<WorkerStats>> = const { OnceCell::new() };
}

fn record(status: StatusCode, bytes: Option<u64>, nanos: u64) {
    LOCAL.with(|cell| {
        let w = cell.get_or_init(|| {
            let w = Arc::new(WorkerStats::default());
            WORKERS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(w.clone());
            w
        });
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        bump(&w.by_class[class], 1);
        if let Some(b) = bytes {
            bump(&w.bytes, b);
        }
        let bucket = BUCKETS
            .iter()
            .position(|&(_, le)| nanos <= le)
            .unwrap_or(BUCKETS.len());
        bump(&w.latency[bucket], 1);
        bump(&w.latency_sum_ns, nanos);
    });
}

/// The statuses `fibra_server_errors_total` has a series for; others count as `other`.
const ERROR_STATUSES: [u16; 8] = [400, 408, 413, 414, 431, 500, 502, 504];

/// Error responses the server made itself, by [`ERROR_STATUSES`] (plus `other`). Shared
/// atomics: errors are rare, and counted off the request path (where they are reported).
static SERVER_ERRORS: [AtomicU64; ERROR_STATUSES.len() + 1] =
    [const { AtomicU64::new(0) }; ERROR_STATUSES.len() + 1];

/// Counts an error response with `status` the server made itself (a rejected request, a
/// panic, the proxy's 502 or 504).
pub fn count_server_error(status: u16) {
    let i = ERROR_STATUSES
        .iter()
        .position(|&s| s == status)
        .unwrap_or(ERROR_STATUSES.len());
    SERVER_ERRORS[i].fetch_add(1, Ordering::Relaxed);
}

/// The server's error hook with `--metrics`: counts what it reports
/// ([`count_server_error`]) and logs it as the server does without a hook.
pub fn on_server_error(e: &fibra_http::ServerError) {
    use fibra_http::ServerErrorKind;
    match e.kind() {
        ServerErrorKind::Protocol(p) => {
            count_server_error(p.status().as_u16());
            log::debug!("{e}");
        }
        ServerErrorKind::Panic(_) => {
            count_server_error(500);
            log::error!("{e}");
        }
        _ => log::warn!("{e}"),
    }
}

/// The endpoints of one server, and its draining flag.
pub struct Endpoints {
    health: Option<String>,
    metrics: Option<String>,
    draining: AtomicBool,
    connections: OnceLock<ConnectionCount>,
    /// More series for the scrape (the site file's per-site counts).
    extra: OnceLock<Box<dyn Fn() -> String + Send + Sync>>,
}

impl Endpoints {
    /// Endpoints at these paths (`None`: not answered).
    pub fn new(health: Option<String>, metrics: Option<String>) -> Arc<Endpoints> {
        Arc::new(Endpoints {
            health,
            metrics,
            draining: AtomicBool::new(false),
            connections: OnceLock::new(),
            extra: OnceLock::new(),
        })
    }

    /// Whether there is anything to answer (else the app runs unwrapped).
    pub fn any(&self) -> bool {
        self.health.is_some() || self.metrics.is_some()
    }

    /// From now on health answers 503. (Release, with the health check's Acquire: a client
    /// told 503 is answered by a server whose own drain, started before, is seen.)
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Adds the series `extra` writes (Prometheus text) to every scrape.
    pub fn set_extra(&self, extra: impl Fn() -> String + Send + Sync + 'static) {
        let _ = self.extra.set(Box::new(extra));
    }

    /// Where the open connections are counted (known once the server runs).
    pub fn set_connections(&self, count: ConnectionCount) {
        let _ = self.connections.set(count);
    }

    /// `app`, behind the endpoints (and, with `--metrics`, timed and counted).
    pub fn wrap<H>(self: Arc<Self>, app: H) -> impl Fn(Request) -> Response + Send + Sync + 'static
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        let any = self.any();
        move |req: Request| {
            if !any {
                return app(req);
            }
            self.answer(req, &app)
        }
    }

    /// The answer to `req` when anything is configured: health, metrics, or the app (timed
    /// for the metrics). Out of line: the closure in front of the app stays small enough for
    /// the connection loop's inlining to stay as it was without any endpoint (+17
    /// instructions per pipelined request with this inside it).
    #[inline(never)]
    fn answer<H>(&self, req: Request, app: &H) -> Response
    where
        H: Fn(Request) -> Response,
    {
        let path = req.uri().path();
        if self.health.as_deref() == Some(path) {
            return self.health_answer(&req);
        }
        if self.metrics.as_deref() == Some(path) {
            return text(StatusCode::OK, self.scrape(), "text/plain; version=0.0.4");
        }
        if self.metrics.is_none() {
            return app(req);
        }
        let start = Instant::now();
        let resp = app(req);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        record(resp.status(), resp.body().len(), nanos);
        resp
    }

    fn health_answer(&self, req: &Request) -> Response {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, String::new(), "text/plain");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        if self.draining.load(Ordering::Acquire) {
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                "draining\n".into(),
                "text/plain",
            )
        } else {
            text(StatusCode::OK, "ok\n".into(), "text/plain")
        }
    }

    /// The metrics, summed over the workers, in Prometheus's text format.
    fn scrape(&self) -> String {
        let workers = WORKERS.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let sum = |f: &dyn Fn(&WorkerStats) -> &AtomicU64| -> u64 {
            workers.iter().map(|w| f(w).load(Ordering::Relaxed)).sum()
        };
        let mut out = String::new();
        out.push_str(
            "# HELP fibra_requests_total Requests answered by the app, by status class.\n",
        );
        out.push_str("# TYPE fibra_requests_total counter\n");
        for (i, class) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().enumerate() {
            let n = sum(&|w| &w.by_class[i]);
            let _ = writeln!(out, "fibra_requests_total{{class=\"{class}\"}} {n}");
        }
        out.push_str("# HELP fibra_response_body_bytes_total Response body bytes (bodies of known length).\n");
        out.push_str("# TYPE fibra_response_body_bytes_total counter\n");
        let _ = writeln!(
            out,
            "fibra_response_body_bytes_total {}",
            sum(&|w| &w.bytes)
        );
        out.push_str("# HELP fibra_open_connections Connections open now.\n");
        out.push_str("# TYPE fibra_open_connections gauge\n");
        let open = self.connections.get().map_or(0, |c| c.get());
        let _ = writeln!(out, "fibra_open_connections {open}");
        out.push_str("# HELP fibra_idle_connections Open connections waiting for a request (holding no fiber stack).\n");
        out.push_str("# TYPE fibra_idle_connections gauge\n");
        let idle = self.connections.get().map_or(0, |c| c.idle());
        let _ = writeln!(out, "fibra_idle_connections {idle}");
        out.push_str("# HELP fibra_server_errors_total Error responses the server made itself (rejected requests, panics, the proxy's 502 and 504), by status.\n");
        out.push_str("# TYPE fibra_server_errors_total counter\n");
        for (i, status) in ERROR_STATUSES.iter().enumerate() {
            let n = SERVER_ERRORS[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "fibra_server_errors_total{{status=\"{status}\"}} {n}");
        }
        let other = SERVER_ERRORS[ERROR_STATUSES.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "fibra_server_errors_total{{status=\"other\"}} {other}");
        out.push_str(
            "# HELP fibra_request_duration_seconds Time the app took to make a response.\n",
        );
        out.push_str("# TYPE fibra_request_duration_seconds histogram\n");
        let mut cumulative = 0;
        for (i, (le, _)) in BUCKETS.iter().enumerate() {
            cumulative += sum(&|w| &w.latency[i]);
            let _ = writeln!(
                out,
                "fibra_request_duration_seconds_bucket{{le=\"{le}\"}} {cumulative}"
            );
        }
        cumulative += sum(&|w| &w.latency[BUCKETS.len()]);
        let _ = writeln!(
            out,
            "fibra_request_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let secs = sum(&|w| &w.latency_sum_ns) as f64 / 1e9;
        let _ = writeln!(out, "fibra_request_duration_seconds_sum {secs}");
        let _ = writeln!(out, "fibra_request_duration_seconds_count {cumulative}");
        out.push_str("# HELP fibra_draining 1 once the server is shutting down or handing over.\n");
        out.push_str("# TYPE fibra_draining gauge\n");
        let _ = writeln!(
            out,
            "fibra_draining {}",
            u8::from(self.draining.load(Ordering::Relaxed))
        );
        if let Some(extra) = self.extra.get() {
            out.push_str(&extra());
        }
        out
    }
}

fn text(status: StatusCode, body: String, ctype: &'static str) -> Response {
    let mut r = Response::new(
        ResponseBody::from(body.into_bytes()).with_content_type(HeaderValue::from_static(ctype)),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
