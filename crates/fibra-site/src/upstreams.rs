//! A proxy route's [`Proxy`]: its upstreams, balancing, health checks and timeouts.

use std::io;

use fibra_proxy::Proxy;

use crate::config::ProxyConfig;

/// The proxy of a route with `prefix` (`https`: clients come over TLS).
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
    proxy.route(prefix, &p.upstreams[0])
}
