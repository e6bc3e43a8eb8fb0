//! A proxy route's [`Proxy`]: its upstreams, balancing, health checks and timeouts.

use std::io;

use fibra_proxy::{ActiveHealth, Balance, PassiveHealth, Policy, Proxy};

use crate::config::ProxyConfig;

/// The proxy of a route with `prefix` (`https`: clients come over TLS). Its health checks
/// (one thread per upstream) run until it is dropped: a reload that keeps the route's
/// settings keeps the proxy, its health and its balancing state.
pub fn proxy(p: &ProxyConfig, prefix: &str, https: bool) -> io::Result<Proxy> {
    let mut proxy = Proxy::new()
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
        active: p.health.as_ref().map(|h| ActiveHealth {
            path: h.path.clone(),
            interval: h.interval,
            timeout: h.timeout,
        }),
    };
    let upstreams: Vec<&str> = p.upstreams.iter().map(String::as_str).collect();
    proxy.route_balanced(prefix, &upstreams, balance)
}
