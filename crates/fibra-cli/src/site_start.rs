//! The servers of a site file (`fibra serve --config`): what they share ([`Ctx`]), each
//! address's acceptors (TCP or Unix, TLS or not, PROXY protocol or not), one server (one
//! runtime) started on a set of addresses with HTTP/3 beside those that want it, and the
//! addresses of a configuration bound. `site_serve` runs them; `site_reload` changes them.

use std::io;
use std::net::TcpListener;
use std::sync::Arc;

use fibra_http::proxy_protocol::ProxyProtocolAcceptor;
use fibra_http::tls::{AlpnHook, TlsAcceptor, ALPN_ACME_TLS};
use fibra_http::{Server, ServerHandle, Service, TcpAcceptor, UnixAcceptor};
use fibra_site::config::{Config, Listen, ServerConfig};
use fibra_site::{choose_tls, Live, SiteLogs, SiteService};

use crate::endpoints::Endpoints;
use crate::site_http3::{http3_addr, start_http3, stop_http3, Http3s, Serving};
use crate::site_listen::{bind, Bound, Closable};

/// What every server of the process shares.
pub(crate) struct Ctx {
    pub(crate) live: Arc<Live>,
    pub(crate) server: ServerConfig,
    pub(crate) workers: usize,
    /// Whether a site had an access log at start: then every server hands its entries to
    /// the sites' logs (a reload that adds the first log needs a restart).
    pub(crate) logging: bool,
    pub(crate) endpoints: Arc<Endpoints>,
}

/// Each worker's acceptor for `$bound` (HTTPS if `$config` says so), as `$maker` (a `FnMut(usize) -> io::Result<_>`),
/// then `$body`: one expansion per kind of address (TCP or Unix, TLS or not, PROXY
/// protocol or not), each acceptor [`Closable`].
macro_rules! with_acceptor {
    ($ctx:expr, $config:expr, $bound:expr, |$maker:ident| $body:expr) => {{
        let ctx: &Ctx = $ctx;
        let b: &Bound = $bound;
        let slot = ctx.live.slot(&b.listen);
        let closed = b.closed.clone();
        let tls = is_tls($config, &b.listen).then(|| choose_tls(ctx.live.clone(), slot));
        // ACME's tls-alpn-01 validations are closed after their handshake, never served.
        let hook = Arc::new(AlpnHook::new(ALPN_ACME_TLS, |name| {
            log::info!("ACME tls-alpn-01 validation for {name:?}")
        }));
        let trusted = (!ctx.server.proxy_protocol_from.is_empty())
            .then(|| Arc::<[fibra_http::IpNet]>::from(ctx.server.proxy_protocol_from.clone()));
        let pp = ctx.server.proxy_protocol || trusted.is_some();
        let proxied = move |a: TcpAcceptor| match &trusted {
            Some(t) => ProxyProtocolAcceptor::trusting(a, t.clone()),
            None => ProxyProtocolAcceptor::new(a),
        };
        match (&b.unix, tls, pp) {
            (Some(u), tls, _) => {
                let u = u.try_clone()?;
                match tls {
                    None => {
                        let $maker = move |_w: usize| {
                            let l = fibra::net::UnixListener::from_std(u.try_clone()?)?;
                            Ok(Closable::new(
                                UnixAcceptor::from_listener(l),
                                closed.clone(),
                            ))
                        };
                        $body
                    }
                    Some(t) => {
                        let $maker = move |_w: usize| {
                            let l = fibra::net::UnixListener::from_std(u.try_clone()?)?;
                            let a =
                                TlsAcceptor::choosing(UnixAcceptor::from_listener(l), t.clone())
                                    .alpn_hook(hook.clone());
                            Ok(Closable::new(a, closed.clone()))
                        };
                        $body
                    }
                }
            }
            (None, tls, pp) => {
                let ls: Vec<TcpListener> = b
                    .tcp
                    .iter()
                    .map(|l| l.try_clone())
                    .collect::<io::Result<_>>()?;
                let tcp = move |w: usize| TcpAcceptor::from_std(ls[w % ls.len()].try_clone()?);
                match (tls, pp) {
                    (None, false) => {
                        let $maker = move |w: usize| Ok(Closable::new(tcp(w)?, closed.clone()));
                        $body
                    }
                    (None, true) => {
                        let $maker =
                            move |w: usize| Ok(Closable::new(proxied(tcp(w)?), closed.clone()));
                        $body
                    }
                    (Some(t), false) => {
                        let $maker = move |w: usize| {
                            let a =
                                TlsAcceptor::choosing(tcp(w)?, t.clone()).alpn_hook(hook.clone());
                            Ok(Closable::new(a, closed.clone()))
                        };
                        $body
                    }
                    (Some(t), true) => {
                        let $maker = move |w: usize| {
                            let a = TlsAcceptor::choosing(proxied(tcp(w)?), t.clone())
                                .alpn_hook(hook.clone());
                            Ok(Closable::new(a, closed.clone()))
                        };
                        $body
                    }
                }
            }
        }
    }};
}

/// Starts one server (one runtime) on `bounds`, and HTTP/3 on the UDP twin of each of them
/// where a site has `http3 = true`.
pub(crate) fn start(
    ctx: &Ctx,
    bounds: &[&Bound],
    config: &Config,
) -> io::Result<(ServerHandle, Http3s)> {
    let slots: Vec<usize> = bounds.iter().map(|b| ctx.live.slot(&b.listen)).collect();
    let mut h3: Http3s = Vec::new();
    let mut alt_svc = Vec::new();
    for (b, &slot) in bounds.iter().zip(&slots) {
        let started = match http3_addr(config, b) {
            Some(addr) => {
                let serving = Serving {
                    live: &ctx.live,
                    server: &ctx.server,
                    workers: ctx.workers,
                    logging: ctx.logging,
                    endpoints: &ctx.endpoints,
                };
                start_http3(&serving, slot, &b.listen, addr)
            }
            None => {
                alt_svc.push(None);
                continue;
            }
        };
        match started {
            Ok(endpoint) => {
                alt_svc.push(Some(crate::http3::alt_svc(endpoint.local_addr().port())));
                h3.push((b.listen.clone(), endpoint));
            }
            Err(e) => {
                stop_http3(h3, std::time::Duration::ZERO);
                let e = io::Error::new(
                    e.kind(),
                    format!("{}{e}", where_listened(config, &b.listen)),
                );
                return Err(e);
            }
        }
    }
    match start_tcp(ctx, bounds, config, slots, alt_svc) {
        Ok(handle) => Ok((handle, h3)),
        Err(e) => {
            stop_http3(h3, std::time::Duration::ZERO);
            Err(e)
        }
    }
}

/// Starts the TCP server of `start`, its service adding `alt_svc` per acceptor.
pub(crate) fn start_tcp(
    ctx: &Ctx,
    bounds: &[&Bound],
    config: &Config,
    slots: Vec<usize>,
    alt_svc: Vec<Option<fibra_http::http::HeaderValue>>,
) -> io::Result<ServerHandle> {
    let service = SiteService::new(ctx.live.clone(), slots.clone())
        .counting(ctx.server.metrics.is_some())
        .alt_svc(alt_svc);
    let logs = SiteLogs::new(ctx.live.clone(), slots);
    let max_body = service.max_body_bytes();
    let handler = ctx.endpoints.clone().wrap(move |req| service.call(req));
    let s = &ctx.server;
    with_acceptor!(ctx, config, bounds[0], |main| {
        let mut server = Server::with_acceptor(main);
        for b in &bounds[1..] {
            with_acceptor!(ctx, config, b, |more| {
                server = server.also_acceptor(more);
            });
        }
        let server = server
            .workers(ctx.workers)
            .header_timeout(s.header_timeout)
            .idle_timeout(s.idle_timeout);
        // Without a site's log, no entry is made at all (the engine skips that work).
        let server = match ctx.logging {
            true => server.access_log_sink(logs),
            false => server,
        };
        let server = match max_body {
            Some(n) => server.max_body_bytes(n),
            None => server,
        };
        let server = match s.metrics.is_some() {
            true => server.on_error(crate::endpoints::on_server_error),
            false => server,
        };
        server.serve(handler)
    })
}

/// Whether a site of `config` has an access log.
pub(crate) fn has_logs(config: &Config) -> bool {
    config.sites.iter().any(|s| s.access_log.is_some())
}

/// Whether `config` serves HTTPS on `l`.
pub(crate) fn is_tls(config: &Config, l: &Listen) -> bool {
    config
        .sites
        .iter()
        .any(|s| s.listen.contains(l) && s.tls.is_some())
}

/// The URL of a bound address (`http://127.0.0.1:8080/`, `https://…`, `unix:/run/x.sock`).
pub(crate) fn url(live: &Live, b: &Bound) -> String {
    let tls = live
        .current()
        .group(live.slot(&b.listen))
        .is_some_and(|g| g.tls);
    match b.local_addr() {
        Some(a) => format!("{}://{a}/", if tls { "https" } else { "http" }),
        None => b.listen.to_string(),
    }
}

/// Every address of `config`, in file order, once.
pub(crate) fn addresses(config: &Config) -> Vec<Listen> {
    let mut out: Vec<Listen> = Vec::new();
    for site in &config.sites {
        for l in site.listen.iter().chain(&site.redirect_http) {
            if !out.contains(l) {
                out.push(l.clone());
            }
        }
    }
    out
}

/// The position of the first site listening on `l`, for messages.
pub(crate) fn where_listened(config: &Config, l: &Listen) -> String {
    config
        .sites
        .iter()
        .find(|s| s.listen.contains(l) || s.redirect_http.contains(l))
        .map(|s| format!("{}: {}.listen: ", s.at, s.key))
        .unwrap_or_default()
}

/// Binds every address of `config` (a failure names the site and the address).
pub(crate) fn bind_all(config: &Config, ls: &[Listen], workers: usize) -> io::Result<Vec<Bound>> {
    ls.iter()
        .map(|l| {
            bind(l, workers, config.server.reuse_port)
                .map_err(|e| io::Error::new(e.kind(), format!("{}{e}", where_listened(config, l))))
        })
        .collect()
}

/// The servers running and what they listen on.
pub(crate) struct Running {
    pub(crate) servers: Vec<(ServerHandle, Vec<Listen>)>,
    pub(crate) bound: Vec<Bound>,
    /// HTTP/3 beside some of the addresses.
    pub(crate) h3: Http3s,
}

impl Running {
    pub(crate) fn listening(&self) -> Vec<Listen> {
        self.bound.iter().map(|b| b.listen.clone()).collect()
    }
}
