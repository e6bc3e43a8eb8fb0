//! HTTP/3 beside the addresses of a site file (`http3 = true`, see `docs/CONFIG.md`): an
//! endpoint on the UDP twin of each HTTPS address with such a site, serving that address's
//! sites as `SiteService` does over TCP, with their certificates (chosen per handshake:
//! `fibra_site::quic_certs`), logs and the server's limits.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use fibra_http::Service;
use fibra_site::config::{Config, Listen, ServerConfig};
use fibra_site::{Live, SiteLogs, SiteService};

use crate::endpoints::Endpoints;
use crate::http3::Http3;
use crate::http3_handover::Incoming;
use crate::site_listen::Bound;

/// What the HTTP/3 endpoints of a site file share with its TCP servers.
pub(crate) struct Serving<'a> {
    pub(crate) live: &'a Arc<Live>,
    pub(crate) server: &'a ServerConfig,
    /// The server's workers: HTTP/3 runs an endpoint on each.
    pub(crate) workers: usize,
    /// Whether the sites' access logs take entries (see `site_serve`).
    pub(crate) logging: bool,
    pub(crate) endpoints: &'a Arc<Endpoints>,
}

/// HTTP/3 endpoints, each with the address it is the UDP twin of.
pub(crate) type Http3s = Vec<(Listen, Http3)>;

/// The UDP address for HTTP/3 beside `b`: its TCP address, where `config` has a site with
/// `http3 = true` on it (TLS and TCP, as the site file's checks require).
pub(crate) fn http3_addr(config: &Config, b: &Bound) -> Option<SocketAddr> {
    match (wants_http3(config, &b.listen), &b.listen) {
        (true, Listen::Tcp(_)) => b.local_addr(),
        _ => None,
    }
}

/// Whether a site of `config` with `http3 = true` (and TLS) listens on `l`.
pub(crate) fn wants_http3(config: &Config, l: &Listen) -> bool {
    config
        .sites
        .iter()
        .any(|s| s.http3 && s.tls.is_some() && s.listen.contains(l))
}

/// HTTP/3 for the address in `slot` on UDP `addr`: its sites (as `SiteService` answers
/// them), their certificates, logs and the server's limits.
pub(crate) fn start_http3(
    serving: &Serving<'_>,
    slot: usize,
    listen: &Listen,
    addr: SocketAddr,
) -> io::Result<Http3> {
    let s = &serving.server;
    let service = SiteService::new(serving.live.clone(), vec![slot]).counting(s.metrics.is_some());
    let max_body = service.max_body_bytes();
    let handler = Arc::new(serving.endpoints.clone().wrap(move |req| service.call(req)));
    let sink: Option<Arc<dyn fibra_http::AccessLogSink>> = serving
        .logging
        .then(|| Arc::new(SiteLogs::new(serving.live.clone(), vec![slot])) as _);
    let settings = fibra_http::Settings {
        header_timeout: s.header_timeout,
        idle_timeout: s.idle_timeout,
        max_body_bytes: max_body.unwrap_or(fibra_http::Settings::default().max_body_bytes),
        access_log_sink: sink,
        on_error: s
            .metrics
            .is_some()
            .then(|| fibra_http::ErrorHook::new(crate::endpoints::on_server_error)),
        ..fibra_http::Settings::default()
    };
    let certs = fibra_site::quic_certs(serving.live.clone(), slot);
    let handed = Incoming::take(&quic_prefix(listen))?;
    let endpoint = Http3::start(
        addr,
        handed,
        serving.workers,
        serving.server.http3_0rtt,
        certs,
        Arc::new(settings),
        handler,
    )?;
    announce!("fibra serve: HTTP/3 on udp://{}", endpoint.local_addr());
    Ok(endpoint)
}

/// The prefix of the names HTTP/3's descriptors for `listen` are handed over under in an
/// upgrade (see `http3_handover`): the address's own name and a dash.
pub(crate) fn quic_prefix(listen: &Listen) -> String {
    format!("{}-", crate::site_listen::fd_name(listen))
}

/// Stops HTTP/3 endpoints, each draining in a thread of its own for up to `grace`.
pub(crate) fn stop_http3(h3: Http3s, grace: Duration) -> Vec<JoinHandle<()>> {
    h3.into_iter()
        .map(|(_, e)| e.stop_in_background(grace))
        .collect()
}
