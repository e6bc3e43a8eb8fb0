//! A proxy route's [`Proxy`]: its upstreams, balancing, health checks and timeouts.

use std::io;
use std::sync::OnceLock;

use fibra_proxy::{ActiveHealth, Balance, PassiveHealth, Policy, Proxy, UpstreamError};

use crate::config::ProxyConfig;

/// A hook that hears of an upstream failure.
type ErrorHook = Box<dyn Fn(&UpstreamError) + Send + Sync>;

/// What every proxy route reports its failures to (the server's metrics).
static ON_ERROR: OnceLock<ErrorHook> = OnceLock::new();

/// Reports every proxy route's 502, 503 and 504 to `hook` too (e.g. to count them in
/// metrics); set once, before the site file is built.
pub fn set_upstream_error_hook(hook: impl Fn(&UpstreamError) + Send + Sync + 'static) {
    let _ = ON_ERROR.set(Box::new(hook));
}

/// The proxy of a route with `prefix` (`https`: clients come over TLS). Its health checks
/// (one thread per upstream; with `checks` only: `--check-config` builds it without) run
/// until it is dropped: a reload that keeps the route's settings keeps the proxy, its health
/// and its balancing state.
pub fn proxy(p: &ProxyConfig, prefix: &str, https: bool, checks: bool) -> io::Result<Proxy> {
    let mut proxy = Proxy::new()
        .on_error(|e| {
            if let Some(hook) = ON_ERROR.get() {
                hook(e);
            }
        })
        .connect_timeout(p.connect_timeout)
        .read_timeout(p.timeout)
        .write_timeout(p.timeout)
        .max_idle(p.keepalive)
        .forwarded_proto(if https { "https" } else { "http" });
    if let Some(ca) = &p.ca {
        proxy = proxy.upstream_ca(ca)?;
    }
    let policy: Policy = p
        .policy
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e}")))?;
    let balance = Balance {
        policy,
        passive: PassiveHealth {
            max_fails: p.max_fails,
            fail_timeout: p.fail_timeout,
        },
        active: p.health.as_ref().filter(|_| checks).map(|h| ActiveHealth {
            path: h.path.clone(),
            interval: h.interval,
            timeout: h.timeout,
        }),
    };
    let upstreams: Vec<&str> = p.upstreams.iter().map(String::as_str).collect();
    proxy.route_balanced(prefix, &upstreams, balance)
}
