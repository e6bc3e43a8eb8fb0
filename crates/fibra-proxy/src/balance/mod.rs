//! Balanced upstream groups: a route's requests spread over several upstreams by a
//! [`Policy`], with upstreams that fail taken out of the rotation by passive health
//! ([`PassiveHealth`], nginx's `max_fails`/`fail_timeout`) and, if configured, by active
//! checks ([`ActiveHealth`]: a `GET` every interval from a thread of the proxy's own).
//!
//! All of a group's state is the process's, shared by the workers through atomics: the
//! round-robin counter, each upstream's requests in flight, its failures and when it is down
//! until. Choosing an upstream takes no lock and allocates nothing; only idle connections
//! stay per worker (the `pool` module).
//!
//! A group of one (what [`Proxy::route`](crate::Proxy::route) makes) skips all of it: no
//! policy, no count of requests in flight, and, as in nginx, no passive health (one upstream
//! is never taken out; its connects back off as the module docs of the crate say). Active
//! checks still apply to it.
//!
//! The files: `policy` (the policies and the pick), `passive` (failures counted against an
//! upstream), `active` (the checker threads), `group` (a route's upstreams and their state).

use std::fmt;
use std::time::Duration;

mod active;
mod group;
mod passive;
mod policy;

pub(crate) use group::{Group, Lease, NoneUp, OwnedLease};
pub use policy::{Policy, UnknownPolicy};

/// Passive health: requests that fail count against their upstream, and one that fails
/// `max_fails` times within `fail_timeout` is not chosen for `fail_timeout` (nginx's
/// `max_fails` and `fail_timeout`). A failure is a connect refused or timed out, or the
/// upstream resetting, closing or timing out before its response head, or sending one that
/// is not HTTP; a response head, whatever its status, resets the count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassiveHealth {
    /// Failures within `fail_timeout` that take an upstream out; 0: never (passive health
    /// off). Default 1.
    pub max_fails: u32,
    /// The window in which failures are counted, and how long an upstream stays out after
    /// them. Default 10 s.
    pub fail_timeout: Duration,
}

impl Default for PassiveHealth {
    fn default() -> Self {
        PassiveHealth {
            max_fails: 1,
            fail_timeout: Duration::from_secs(10),
        }
    }
}

/// Active health: each upstream is sent `GET path` (HTTP/1.1, `Host` its URL's authority,
/// over TLS for `https://`) every `interval`, the first at once, by one thread per upstream
/// for the process; a `2xx` answer within `timeout` marks it up (and back in at once if
/// failed requests had taken it out: it answers), anything else down. An upstream is taken
/// as up until its first check has answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveHealth {
    /// The path checked, starting with `/` (a query may follow). Default `/`.
    pub path: String,
    /// Between the start of one check and the next. Default 5 s.
    pub interval: Duration,
    /// For connecting, and for each read and write of a check. Default 2 s.
    pub timeout: Duration,
}

impl Default for ActiveHealth {
    fn default() -> Self {
        ActiveHealth {
            path: "/".into(),
            interval: Duration::from_secs(5),
            timeout: Duration::from_secs(2),
        }
    }
}

/// How a route's requests are spread over its upstreams (see
/// [`Proxy::route_balanced`](crate::Proxy::route_balanced)). Default: round robin, passive
/// health with one failure taking an upstream out for 10 s, no active checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Balance {
    /// Which upstream a request goes to.
    pub policy: Policy,
    /// Failed requests taking an upstream out.
    pub passive: PassiveHealth,
    /// Checks of the upstreams' health, if any.
    pub active: Option<ActiveHealth>,
}

/// Whether an upstream takes requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// It is chosen.
    Up,
    /// It is not chosen (or, while its connects back off, requests for it fail at once);
    /// why, e.g. `health check: GET /health: 503`.
    Down(String),
}

impl Health {
    /// Whether it is [`Health::Up`].
    pub fn is_up(&self) -> bool {
        matches!(self, Health::Up)
    }
}

/// One upstream of one route, as [`Proxy::upstream_states`](crate::Proxy::upstream_states)
/// sees it: for logs and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamState {
    /// The route's prefix.
    pub prefix: String,
    /// The upstream's URL, as given.
    pub url: String,
    /// Up, or down and why.
    pub health: Health,
    /// Requests being forwarded to it now (from choosing it to the end of the response body,
    /// or of a tunnel); `None` for the upstream of a group of one, which is not counted.
    pub in_flight: Option<usize>,
}

impl fmt::Display for UpstreamState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.prefix, self.url)?;
        match &self.health {
            Health::Up => f.write_str("up")?,
            Health::Down(why) => write!(f, "down ({why})")?,
        }
        match self.in_flight {
            Some(n) => write!(f, ", {n} in flight"),
            None => Ok(()),
        }
    }
}
