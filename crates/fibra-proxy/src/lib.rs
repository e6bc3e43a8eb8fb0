//! A reverse proxy handler for fibra-http: requests under a path prefix go to an upstream
//! HTTP/1.1 server (or one of a balanced group), over keep-alive connections pooled per
//! worker, with bodies streamed both ways.
//!
//! ```no_run
//! use std::sync::Arc;
//! use fibra_proxy::{ActiveHealth, Balance, Policy, Proxy};
//! use fibra_http::{Request, Response, Server};
//!
//! let proxy = Proxy::new()
//!     .route("/api/", "http://127.0.0.1:9000/")? // /api/users → /users
//!     .route("/app", "http://127.0.0.1:9001")?   // /app/x → /app/x
//!     .route_balanced(
//!         "/shop/",
//!         &["http://10.0.0.1:8000/", "http://10.0.0.2:8000/"],
//!         Balance {
//!             policy: Policy::LeastConn,
//!             active: Some(ActiveHealth { path: "/health".into(), ..ActiveHealth::default() }),
//!             ..Balance::default()
//!         },
//!     )?;
//! let server = Server::bind("127.0.0.1:8080").serve(move |req: Request| {
//!     match proxy.handle(req) {
//!         Ok(resp) => resp,
//!         // No route: the request comes back for another handler.
//!         Err(_req) => Response::new("not proxied".into()),
//!     }
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! What it does, with nginx's `proxy_pass` as the model (where it differs, it says so):
//!
//! * **Routing** ([`route`](Proxy::route)): the longest matching prefix wins; an upstream URL
//!   with a path replaces the prefix with it (so `/api/` → `http://host:port/` strips
//!   `/api/`), one without passes the target unchanged. A prefix ending in `/` answers its
//!   slashless form with a `301` to it. A path with a dot segment is refused with `400`. See
//!   the `route` module for the details.
//! * **Connections**: HTTP/1.1 keep-alive to the upstream, a pool of idle connections per
//!   worker and upstream (fibers on one worker share it; [`max_idle`](Proxy::max_idle),
//!   [`idle_timeout`](Proxy::idle_timeout)). Upstream responses are read with
//!   [`fibra_http::client::ResponseParser`].
//! * **Bodies** stream both ways with backpressure: the request body is read from the client
//!   only as the upstream takes it, the response body from the upstream only as the client
//!   takes it, one buffer at a time, so memory does not grow with the size of a body.
//!   `Content-Length` bodies keep their length; chunked ones are sent chunked (or, to an
//!   HTTP/1.0 client, delimited by the close). Trailer fields are dropped.
//! * **Header fields**: hop-by-hop fields are removed both ways; `X-Forwarded-For`,
//!   `X-Forwarded-Proto`, `X-Forwarded-Host` and `Forwarded` (RFC 7239) are set; the client's
//!   `Host` is kept. See the `headers` module.
//! * **Failures**: `502 Bad Gateway` when the upstream refuses, resets, closes early or
//!   answers with something that is not HTTP (a head over 64 KiB included), `504 Gateway
//!   Timeout` when it does not connect, take the request or answer in time
//!   ([`connect_timeout`](Proxy::connect_timeout), [`read_timeout`](Proxy::read_timeout),
//!   [`write_timeout`](Proxy::write_timeout)); each is reported to
//!   [`on_error`](Proxy::on_error), and to `log::warn!` at most once a second per upstream and
//!   kind of failure (the next line counts the ones left out). After a failed connect an
//!   upstream is not dialled again for 25 ms, doubled after each further failure in a row up
//!   to 500 ms (one request then probes it); meanwhile requests for it get `502` at once. So
//!   a down upstream costs a few connects a second, not one per request, and one that comes
//!   back is used again within half a second. An idempotent request without a body
//!   that failed on a reused idle connection before any byte of the response is sent again
//!   once, on a fresh connection.
//! * **Balancing** ([`route_balanced`](Proxy::route_balanced), nginx's `upstream` block):
//!   a route's requests spread over several upstreams by a [`Policy`] — round robin, least
//!   connections, a hash of the client's IP address, or the first one up — over state
//!   shared by all workers (atomics: choosing costs no lock and no allocation). Upstreams
//!   that fail are left out: [`PassiveHealth`] counts failed requests (`max_fails` within
//!   `fail_timeout` take one out for `fail_timeout`), and [`ActiveHealth`] checks, if
//!   configured, send `GET path` every interval from a thread per upstream (`2xx`: up),
//!   which stop when the proxy is dropped. An idempotent request without a body that
//!   failed on one upstream before any byte of the response went out is sent once to
//!   another. When no upstream is up the answer is `502` at once, or `503` with
//!   `Retry-After` (the check interval) when the checks found them all down.
//!   [`upstream_states`](Proxy::upstream_states) tells which are up, why not, and their
//!   requests in flight. A route to one upstream ([`route`](Proxy::route)) is a group of one
//!   that skips all of this but the checks: see the `balance` module.
//!
//! * **WebSocket** (and any protocol switch): an HTTP/1.1 request whose `Connection` names
//!   `upgrade` goes up with its `Upgrade` field and `Connection: upgrade` (what nginx does
//!   with `proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection "upgrade"`).
//!   A `101` from the upstream goes to the client, and then bytes are copied both ways until
//!   one side closes, or the upstream is silent for the read timeout (see the `tunnel`
//!   module); that upstream connection is never pooled again. Any other answer is relayed as
//!   usual. A `101` the client did not ask for, or one without `Upgrade`, is a `502`.
//!
//! * **`https://` upstreams**: TLS with rustls, the certificate verified against the
//!   system's roots or a CA file ([`upstream_ca`](Proxy::upstream_ca)), SNI the URL's host;
//!   pooled as plain connections are (see the `tls` module), and tunnelled to after a `101`
//!   (the `tunnel_tls` module). A TCP end without `close_notify` is a truncation, not an end
//!   of stream; `close_notify` is sent whenever the proxy closes such a connection.
//!
//! Not supported: trailers.

use std::sync::Arc;
use std::time::Duration;
use std::{fmt, io};

use fibra::net::RedialBackoff;
use http::StatusCode;

use fibra_http::request::Request;
use fibra_http::response::Response;

mod balance;
mod error_log;
mod forward;
mod headers;
mod pool;
mod route;
mod settings;
mod tls;
mod tunnel;
mod tunnel_tls;
mod upstream;

use balance::Group;
pub use balance::{
    ActiveHealth, Balance, Health, PassiveHealth, Policy, UnknownPolicy, UpstreamState,
};
use route::{Refusal, Route, Upstream};
use settings::Settings;
pub use settings::UpstreamError;

/// The reverse proxy: its routes and settings. See the module docs.
pub struct Proxy {
    routes: Vec<Route<Group>>,
    settings: Settings,
}

impl Default for Proxy {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("routes", &self.routes)
            .field("timeouts", &self.settings.timeouts)
            .field("idle_timeout", &self.settings.idle_timeout)
            .field("max_idle", &self.settings.max_idle)
            .field("proto", &self.settings.proto)
            .field("trust_forwarded", &self.settings.trust_forwarded)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy without routes. Defaults: connect timeout 10 s, read and write timeouts 60 s
    /// (between two reads or writes, as nginx's), 64 idle connections per upstream and
    /// worker kept for 60 s, `X-Forwarded-Proto: http`, incoming forwarding fields replaced.
    pub fn new() -> Proxy {
        Proxy {
            routes: Vec::new(),
            settings: Settings::default(),
        }
    }

    /// Sends requests whose path starts with `prefix` to `upstream`,
    /// `http://HOST[:PORT][/PATH]` or `https://…` (see the module docs for how the target is
    /// rewritten). `HOST` is resolved now. The first `https://` route loads the system's
    /// root certificates unless [`upstream_ca`](Self::upstream_ca) or
    /// [`upstream_tls_config`](Self::upstream_tls_config) came before (failing if there are
    /// none). Fails (`InvalidInput`, naming the URL) on a prefix not starting
    /// with `/`, a prefix routed twice, an unsupported URL or a name that does not resolve.
    ///
    /// The route is a balanced group of one upstream without policy or passive health: a
    /// failing upstream is never taken out, its connects back off as the module docs say.
    pub fn route(self, prefix: &str, upstream: &str) -> io::Result<Proxy> {
        self.add_route(prefix, &[upstream], Balance::default())
    }

    /// Sends requests whose path starts with `prefix` to one of `upstreams` (each
    /// `http[s]://HOST[:PORT][/PATH]`, rewritten as [`route`](Self::route) does, by its own
    /// URL), chosen by `balance`: its policy, its passive health and, if it has them, active
    /// health checks, whose threads start now (the first check at once; an upstream down at
    /// start is logged, not an error) and stop when the proxy is dropped. `https://`
    /// upstreams are checked with the TLS configuration in place now. See the module docs
    /// for retries and for what is answered when no upstream is up.
    ///
    /// Fails (`InvalidInput`) as [`route`](Self::route) does, and on an empty list of
    /// upstreams or an active check with a path not starting with `/` (or holding spaces or
    /// control characters) or a zero interval or timeout; fails if a checker thread cannot
    /// be started.
    pub fn route_balanced(
        self,
        prefix: &str,
        upstreams: &[&str],
        balance: Balance,
    ) -> io::Result<Proxy> {
        if upstreams.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("proxy prefix {prefix:?}: no upstream"),
            ));
        }
        if let Some(active) = &balance.active {
            let why = if !active.path.starts_with('/')
                || !active.path.bytes().all(|b| b.is_ascii_graphic())
            {
                Some("the path must start with / and hold no spaces or control characters")
            } else if active.interval.is_zero() || active.timeout.is_zero() {
                Some("the interval and the timeout must not be zero")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "proxy prefix {prefix:?}: health check {:?}: {why}",
                        active.path
                    ),
                ));
            }
        }
        self.add_route(prefix, upstreams, balance)
    }

    /// Adds a route to a group of `upstreams` and starts its checks.
    fn add_route(
        mut self,
        prefix: &str,
        upstreams: &[&str],
        balance: Balance,
    ) -> io::Result<Proxy> {
        if !prefix.starts_with('/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("proxy prefix {prefix:?} must start with /"),
            ));
        }
        if self.routes.iter().any(|r| r.prefix == prefix) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("proxy prefix {prefix:?} given twice"),
            ));
        }
        let mut members = Vec::with_capacity(upstreams.len());
        for &url in upstreams {
            let mut upstream = Upstream::parse(url)?;
            upstream.down = RedialBackoff::new(self.settings.redial.0, self.settings.redial.1);
            if upstream.tls.is_some() && self.settings.tls.is_none() {
                self.settings.tls = Some(tls::system_roots()?);
            }
            members.push((upstream, url.to_owned()));
        }
        let mut group = Group::new(members, balance);
        group.start_checks(self.settings.tls.as_ref())?;
        self.routes.push(Route {
            prefix: prefix.to_owned(),
            to: group,
        });
        Ok(self)
    }

    /// Trusts the CA certificates of the PEM file `path` (instead of the system's roots) for
    /// `https://` upstreams. Call it before the routes to such upstreams on a system without
    /// root certificates. Fails (naming the file) if it cannot be read or holds no
    /// certificate.
    pub fn upstream_ca(mut self, path: impl AsRef<std::path::Path>) -> io::Result<Proxy> {
        self.settings.tls = Some(tls::ca_file(path.as_ref())?);
        Ok(self)
    }

    /// The rustls client configuration for `https://` upstreams, for full control (client
    /// certificates, protocol versions). Its ALPN should offer only `http/1.1`.
    pub fn upstream_tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Proxy {
        self.settings.tls = Some(config);
        self
    }

    /// How long connecting to an upstream may take (then 504).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.settings.timeouts.connect = t;
        self
    }
    /// How long the upstream may take to send the next bytes of its response (then 504
    /// before the head, a cut connection after it).
    pub fn read_timeout(mut self, t: Duration) -> Self {
        self.settings.timeouts.read = t;
        self
    }
    /// How long the upstream may take to accept the next bytes of the request (then 504).
    pub fn write_timeout(mut self, t: Duration) -> Self {
        self.settings.timeouts.write = t;
        self
    }
    /// How a down upstream is dialled again: after a failed connect, requests for it get
    /// `502` at once for `first`, then one request tries it; each further failure in a row
    /// doubles the wait, up to `max`. Defaults 25 ms and 500 ms.
    pub fn redial_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.settings.redial = (first, max.max(first));
        for r in &mut self.routes {
            for up in r.to.upstreams_mut() {
                up.down = RedialBackoff::new(first, max);
            }
        }
        self
    }
    /// How long an idle pooled connection is kept.
    pub fn idle_timeout(mut self, t: Duration) -> Self {
        self.settings.idle_timeout = t;
        self
    }
    /// Idle connections kept per upstream and worker (0: none, a connection per request);
    /// the least recently used goes first. After a burst, up to four times as many may stay
    /// idle for a second, so the next burst finds them instead of connecting anew.
    pub fn max_idle(mut self, n: usize) -> Self {
        self.settings.max_idle = n;
        self
    }
    /// The scheme clients reach the proxy with, for `X-Forwarded-Proto` and `Forwarded`:
    /// `"https"` behind TLS (default `"http"`).
    pub fn forwarded_proto(mut self, proto: &str) -> Self {
        self.settings.proto = proto.to_owned();
        self
    }
    /// Whether the clients are proxies whose `X-Forwarded-*` and `Forwarded` fields are to be
    /// believed: then the client's address is appended to them. Default false: they are
    /// replaced (a client could otherwise claim any address).
    pub fn trust_forwarded(mut self, trust: bool) -> Self {
        self.settings.trust_forwarded = trust;
        self
    }
    /// Calls `f` with each upstream failure answered with 502, 503 or 504 (for counting
    /// them: every failure answered is reported, while the proxy's own `log::warn!` lines
    /// are throttled). A failure whose request was sent to another upstream of its group,
    /// and answered from there, is logged but not reported here.
    pub fn on_error(mut self, f: impl Fn(&UpstreamError) + Send + Sync + 'static) -> Self {
        self.settings.on_error = Some(Arc::new(f));
        self
    }

    /// Whether a route takes requests for `path`.
    pub fn routes_path(&self, path: &str) -> bool {
        route::longest(&self.routes, path).is_some()
    }

    /// Each upstream of each route (in the order they were given): its URL, whether it is
    /// up (and if not, why) and its requests in flight. For logs and metrics; it takes a
    /// few locks and allocates, so not for every request.
    pub fn upstream_states(&self) -> Vec<UpstreamState> {
        self.routes
            .iter()
            .flat_map(|r| r.to.states(&r.prefix))
            .collect()
    }

    /// Forwards `req` if a route takes its path, answering with the upstream's response
    /// (or the proxy's own 301, 400, 502, 503 or 504); gives the request back otherwise.
    pub fn handle(&self, req: Request) -> Result<Response, Request> {
        let path = req.uri().path();
        let Some(route) = route::longest(&self.routes, path) else {
            return Err(req);
        };
        let query = req.uri().query();
        Ok(match route.refusal(path, query) {
            None => {
                let group = &route.to;
                let lease = match group.pick(|| forward::client_ip(&req), None) {
                    Ok(lease) => lease,
                    Err(none) => return Ok(self.settings.none_up(group, none)),
                };
                let target = route.rewrite(lease.upstream().path.as_deref(), path, query);
                forward::forward(&self.settings, route, req, lease, target)
            }
            Some(Refusal::Redirect(location)) => {
                let mut r = forward::error(StatusCode::MOVED_PERMANENTLY, "Moved Permanently\n");
                if let Ok(v) = http::HeaderValue::try_from(location) {
                    r.headers_mut().insert(http::header::LOCATION, v);
                }
                r
            }
            Some(Refusal::DotSegment) => forward::error(StatusCode::BAD_REQUEST, "Bad Request\n"),
        })
    }

    /// [`handle`](Self::handle), answering `404` when no route takes the request.
    pub fn respond(&self, req: Request) -> Response {
        self.handle(req)
            .unwrap_or_else(|_| forward::error(StatusCode::NOT_FOUND, "Not Found\n"))
    }
}

/// A proxy is a [`Service`](fibra_http::Service) answering as [`Proxy::respond`]: the
/// upstream's response (or the proxy's own 301, 400, 502, 503 or 504), and `404` when no route
/// takes the path. Mounted in an application's router (fibra-web's `Router::mount`), it
/// sees the path without the mount's prefix, and routes that.
impl fibra_http::Service for Proxy {
    fn call(&self, req: Request) -> Response {
        self.respond(req)
    }
}
