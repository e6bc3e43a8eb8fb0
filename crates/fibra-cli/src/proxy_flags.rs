//! `fibra serve --proxy PREFIX=URL`: the reverse-proxy flags and the [`Proxy`] they make.

use fibra_proxy::Proxy;
use std::io;
use std::time::Duration;

/// Flags of the reverse proxy in front of the files.
#[derive(clap::Args, Debug)]
pub struct ProxyFlags {
    /// Forward requests whose path starts with PREFIX to URL (http[s]://HOST:PORT[/PATH]);
    /// repeatable, the longest matching prefix wins. A URL with a path replaces the prefix
    /// (nginx's proxy_pass): `/api/=http://127.0.0.1:9000/` sends /api/users as /users; a URL
    /// without one passes the path unchanged.
    #[arg(long, value_name = "PREFIX=URL")]
    proxy: Vec<String>,
    /// Seconds an upstream may take to accept a connection (then 504).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    proxy_connect_timeout: f64,
    /// Seconds an upstream may take to send the next bytes of its response or accept the
    /// next bytes of the request (then 504).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    proxy_timeout: f64,
    /// Idle connections kept open to each upstream, per worker (nginx's `keepalive`); after
    /// a burst up to 4N may stay idle for a second; the least recently used is closed first.
    #[arg(long, value_name = "N", default_value_t = 64)]
    proxy_keepalive: usize,
    /// PEM file of the CA certificates that https:// upstreams' certificates must chain to
    /// (instead of the system's roots). Certificates are always verified.
    #[arg(long, value_name = "FILE")]
    proxy_ca: Option<std::path::PathBuf>,
    /// Largest request body accepted, in bytes (default with --proxy: no limit, bodies are
    /// streamed to the upstream, which may refuse them itself).
    #[arg(long, value_name = "BYTES")]
    proxy_max_body: Option<u64>,
}

fn secs(flag: &str, s: f64) -> io::Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{flag} {s}: not a positive duration"),
            )
        })
}

impl ProxyFlags {
    /// The proxy of these flags (`None` without --proxy); `https` says clients come over TLS.
    pub fn proxy(&self, https: bool) -> io::Result<Option<Proxy>> {
        if self.proxy.is_empty() {
            return Ok(None);
        }
        let mut proxy = Proxy::new()
            .connect_timeout(secs("--proxy-connect-timeout", self.proxy_connect_timeout)?)
            .read_timeout(secs("--proxy-timeout", self.proxy_timeout)?)
            .write_timeout(secs("--proxy-timeout", self.proxy_timeout)?)
            .max_idle(self.proxy_keepalive)
            .forwarded_proto(if https { "https" } else { "http" })
            // The library logs each failure (throttled); the hook only counts them.
            .on_error(|e| crate::endpoints::count_server_error(e.status.as_u16()));
        if let Some(ca) = &self.proxy_ca {
            proxy = proxy.upstream_ca(ca)?;
        }
        for spec in &self.proxy {
            let Some((prefix, url)) = spec.split_once('=') else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "--proxy {spec:?}: expected PREFIX=URL, e.g. /api/=http://127.0.0.1:9000/"
                    ),
                ));
            };
            proxy = proxy.route(prefix, url)?;
        }
        Ok(Some(proxy))
    }

    /// The proxy routes of these flags as site-file proxy settings: (prefix, upstream URL,
    /// settings) each (`--print-config`).
    pub fn site_routes(&self) -> io::Result<Vec<(String, fibra_site::config::ProxyConfig)>> {
        let mut out = Vec::new();
        for spec in &self.proxy {
            let Some((prefix, url)) = spec.split_once('=') else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("--proxy {spec:?}: expected PREFIX=URL"),
                ));
            };
            let mut p = fibra_site::config::ProxyConfig {
                connect_timeout: secs("--proxy-connect-timeout", self.proxy_connect_timeout)?,
                timeout: secs("--proxy-timeout", self.proxy_timeout)?,
                keepalive: self.proxy_keepalive,
                ca: self.proxy_ca.clone().map(crate::server_flags::absolute),
                ..fibra_site::config::ProxyConfig::new(vec![url.to_owned()])
            };
            // One upstream: failures answer 502 as the flags' proxy does, never "down".
            p.max_fails = 0;
            out.push((prefix.to_owned(), p));
        }
        Ok(out)
    }

    /// The request body limit: --proxy-max-body, else none with --proxy.
    pub fn max_body(&self) -> Option<u64> {
        match (self.proxy_max_body, self.proxy.is_empty()) {
            (Some(n), _) => Some(n),
            (None, false) => Some(u64::MAX),
            (None, true) => None,
        }
    }
}
