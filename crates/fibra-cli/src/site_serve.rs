//! `fibra serve --config FILE`: the sites of a site file (see `docs/CONFIG.md`) on one server
//! and runtime, every address an acceptor of it. SIGHUP reads the file again (all or nothing:
//! a bad file is logged and the old configuration keeps serving; requests in flight finish on
//! the configuration they started with; new addresses open, removed ones stop accepting),
//! SIGUSR2 hands the sockets to a new binary, SIGTERM/SIGINT shut down gracefully.

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use fibra_http::proxy_protocol::ProxyProtocolAcceptor;
use fibra_http::tls::{AlpnHook, TlsAcceptor, ALPN_ACME_TLS};
use fibra_http::{Server, ServerHandle, Service, TcpAcceptor, UnixAcceptor};
use fibra_site::config::{self, Config, Listen, ServerConfig};
use fibra_site::{choose_tls, Live, SiteLogs, SiteService};

use crate::endpoints::Endpoints;
use crate::signals;
use crate::site_http3::{http3_addr, start_http3, stop_http3, Http3s, Serving};
use crate::site_listen::{bind, fd_name, Bound, Closable};

/// What every server of the process shares.
struct Ctx {
    live: Arc<Live>,
    server: ServerConfig,
    workers: usize,
    /// Whether a site had an access log at start: then every server hands its entries to
    /// the sites' logs (a reload that adds the first log needs a restart).
    logging: bool,
    endpoints: Arc<Endpoints>,
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
fn start(ctx: &Ctx, bounds: &[&Bound], config: &Config) -> io::Result<(ServerHandle, Http3s)> {
    let slots: Vec<usize> = bounds.iter().map(|b| ctx.live.slot(&b.listen)).collect();
    let mut h3: Http3s = Vec::new();
    let mut alt_svc = Vec::new();
    for (b, &slot) in bounds.iter().zip(&slots) {
        let started = match http3_addr(config, b) {
            Some(addr) => {
                let serving = Serving {
                    live: &ctx.live,
                    server: &ctx.server,
                    logging: ctx.logging,
                    endpoints: &ctx.endpoints,
                };
                start_http3(&serving, slot, addr)
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
fn start_tcp(
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
fn has_logs(config: &Config) -> bool {
    config.sites.iter().any(|s| s.access_log.is_some())
}

/// Whether `config` serves HTTPS on `l`.
fn is_tls(config: &Config, l: &Listen) -> bool {
    config
        .sites
        .iter()
        .any(|s| s.listen.contains(l) && s.tls.is_some())
}

/// The per-site series of the metrics: responses by site and status class.
fn site_series(live: &Live) -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "# HELP fibra_site_responses_total Responses by site (of the site file) and status class.\n\
         # TYPE fibra_site_responses_total counter\n",
    );
    for (name, counters) in live.current().counters() {
        let name = name.replace('\\', "\\\\").replace('"', "\\\"");
        for (i, n) in counters.get().iter().enumerate() {
            let _ = writeln!(
                out,
                "fibra_site_responses_total{{site=\"{name}\",class=\"{}xx\"}} {n}",
                i + 1
            );
        }
    }
    out
}

/// The URL of a bound address (`http://127.0.0.1:8080/`, `https://…`, `unix:/run/x.sock`).
fn url(live: &Live, b: &Bound) -> String {
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
fn addresses(config: &Config) -> Vec<Listen> {
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
fn where_listened(config: &Config, l: &Listen) -> String {
    config
        .sites
        .iter()
        .find(|s| s.listen.contains(l) || s.redirect_http.contains(l))
        .map(|s| format!("{}: {}.listen: ", s.at, s.key))
        .unwrap_or_default()
}

/// Binds every address of `config` (a failure names the site and the address).
fn bind_all(config: &Config, ls: &[Listen], workers: usize) -> io::Result<Vec<Bound>> {
    ls.iter()
        .map(|l| {
            bind(l, workers, config.server.reuse_port)
                .map_err(|e| io::Error::new(e.kind(), format!("{}{e}", where_listened(config, l))))
        })
        .collect()
}

/// `fibra serve --check-config FILE`: exit 0, or every error (as starting would report it).
pub fn check(path: &Path) -> io::Result<()> {
    let config = config::load(path)?;
    fibra_site::check_files(&config)?;
    if let Err(e) = fibra_site::log_writable(&config.server.error_log) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: server.error_log: {e}", path.display()),
        ));
    }
    let workers = config.server.workers.unwrap_or(1);
    // Addresses another process holds fail as they would at start.
    let bound = bind_all(&config, &addresses(&config), workers)?;
    drop(bound);
    for l in addresses(&config) {
        if let Listen::Unix(p) = l {
            let _ = std::fs::remove_file(p);
        }
    }
    println!(
        "fibra serve: {}: configuration OK ({} site(s))",
        path.display(),
        config.sites.len()
    );
    Ok(())
}

/// The servers running and what they listen on.
struct Running {
    servers: Vec<(ServerHandle, Vec<Listen>)>,
    bound: Vec<Bound>,
    /// HTTP/3 beside some of the addresses.
    h3: Http3s,
}

impl Running {
    fn listening(&self) -> Vec<Listen> {
        self.bound.iter().map(|b| b.listen.clone()).collect()
    }
}

/// Runs `fibra serve --config FILE` until SIGINT/SIGTERM (or a SIGUSR2 handover).
pub fn run(path: PathBuf) -> io::Result<()> {
    let config = config::load(&path)?;
    crate::error_log::install(&config.server.error_log).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "{}: server.error_log {}: {e}",
                path.display(),
                config.server.error_log
            ),
        )
    })?;
    signals::block_server_signals()?;
    crate::server_flags::raise_nofile_limit();
    // Proxy routes' 502/503/504 count in the metrics, as the flags' proxy's do.
    fibra_site::set_upstream_error_hook(|e| {
        crate::endpoints::count_server_error(e.status.as_u16())
    });
    let live = Live::new(config.clone())?;
    let workers = config
        .server
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let endpoints = Endpoints::new(config.server.health.clone(), config.server.metrics.clone());
    let ctx = Ctx {
        live: live.clone(),
        server: config.server.clone(),
        workers,
        logging: has_logs(&config),
        endpoints: endpoints.clone(),
    };
    let ls = addresses(&config);
    let bound = bind_all(&config, &ls, workers)?;
    let refs: Vec<&Bound> = bound.iter().collect();
    let (handle, h3) = start(&ctx, &refs, &config)?;
    endpoints.set_connections(handle.connection_count());
    let counted = live.clone();
    endpoints.set_extra(move || site_series(&counted));
    println!(
        "fibra serve: {} site(s) from {} ({workers} worker{}) on {}",
        config.sites.len(),
        path.display(),
        if workers == 1 { "" } else { "s" },
        bound
            .iter()
            .map(|b| url(&live, b))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if let Some(p) = &config.server.pid_file {
        std::fs::write(p, format!("{}\n", std::process::id()))
            .map_err(|e| io::Error::new(e.kind(), format!("pid_file {}: {e}", p.display())))?;
    }
    crate::upgrade::signal_ready();
    let mut running = Running {
        servers: vec![(handle, ls)],
        bound,
        h3,
    };
    let mut current = config;
    let handed_over = loop {
        match signals::wait_for_server_signal() {
            signals::ServerSignal::Shutdown(sig) => {
                endpoints.set_draining();
                if !current.server.drain_delay.is_zero() {
                    eprintln!(
                        "fibra serve: {sig}, draining for {:?}",
                        current.server.drain_delay
                    );
                    std::thread::sleep(current.server.drain_delay);
                }
                eprintln!(
                    "fibra serve: {sig}, shutting down (requests in flight have {:?} to finish)",
                    current.server.shutdown_timeout
                );
                break false;
            }
            signals::ServerSignal::Reload => match reload(&ctx, &path, &current, &mut running) {
                Ok(next) => current = next,
                Err(e) => {
                    for line in e.to_string().lines() {
                        eprintln!("fibra serve: SIGHUP: {line}");
                    }
                    eprintln!("fibra serve: SIGHUP: the configuration is unchanged");
                }
            },
            signals::ServerSignal::Upgrade => {
                let open: Vec<&Bound> = running
                    .bound
                    .iter()
                    .filter(|b| !b.closed.load(Ordering::Acquire))
                    .collect();
                let mut handed = Vec::new();
                let mut names = Vec::new();
                for b in &open {
                    use std::os::fd::AsFd;
                    // TCP sockets and Unix ones alike, each under its address's name.
                    let fds = b
                        .tcp
                        .iter()
                        .map(|l| l.as_fd())
                        .chain(b.unix.iter().map(|u| u.as_fd()));
                    for fd in fds {
                        handed.push(fd);
                        names.push(fd_name(&b.listen));
                    }
                }
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                match crate::upgrade::start_new_binary(&handed, &names) {
                    Ok(pid) => {
                        for (h, _) in &running.servers {
                            h.begin_drain();
                        }
                        endpoints.set_draining();
                        eprintln!(
                            "fibra serve: SIGUSR2, the new binary (pid {pid}) serves; draining"
                        );
                        break true;
                    }
                    Err(e) => eprintln!("fibra serve: SIGUSR2, upgrade failed, still serving: {e}"),
                }
            }
        }
    };
    let grace = current.server.shutdown_timeout;
    let servers = std::mem::take(&mut running.servers);
    // HTTP/3 drains beside the TCP servers, in the same grace period.
    let h3_stopping = stop_http3(std::mem::take(&mut running.h3), grace);
    drop(running);
    for (h, _) in &servers {
        match handed_over {
            true => h.drain(crate::upgrade::IDLE_GRACE, grace),
            false => h.shutdown(grace),
        }
    }
    for (h, _) in servers {
        h.join();
    }
    for t in h3_stopping {
        let _ = t.join();
    }
    // The file written at start (a reload does not move it).
    if let Some(p) = &ctx.server.pid_file {
        let ours = format!("{}\n", std::process::id());
        if std::fs::read_to_string(p).is_ok_and(|x| x == ours) {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

/// The keys of `[server]` a reload cannot apply (SIGUSR2 does).
fn restart_keys(old: &ServerConfig, new: &ServerConfig) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if old.workers != new.workers {
        keys.push("workers");
    }
    if old.header_timeout != new.header_timeout {
        keys.push("header_timeout");
    }
    if old.idle_timeout != new.idle_timeout {
        keys.push("idle_timeout");
    }
    if old.error_log != new.error_log {
        keys.push("error_log");
    }
    if old.proxy_protocol != new.proxy_protocol
        || old.proxy_protocol_from != new.proxy_protocol_from
    {
        keys.push("proxy_protocol");
    }
    if old.reuse_port != new.reuse_port {
        keys.push("reuse_port");
    }
    if old.health != new.health || old.metrics != new.metrics {
        keys.push("health/metrics");
    }
    if old.pid_file != new.pid_file {
        keys.push("pid_file");
    }
    keys
}

/// SIGHUP: the file read and built again, new addresses bound and served, then the new
/// configuration swapped in, then removed addresses closed. Any error before the swap
/// leaves everything as it was.
fn reload(ctx: &Ctx, path: &Path, current: &Config, running: &mut Running) -> io::Result<Config> {
    let next = config::load(path)?;
    let listening = running.listening();
    let wanted = addresses(&next);
    // An address that stays must keep its kind: its acceptor cannot change.
    for l in wanted.iter().filter(|l| listening.contains(l)) {
        if is_tls(current, l) != is_tls(&next, l) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}{l}: switching between HTTP and HTTPS needs a restart (SIGUSR2)",
                    where_listened(&next, l)
                ),
            ));
        }
    }
    let new_ls: Vec<Listen> = wanted
        .iter()
        .filter(|l| !listening.contains(l))
        .cloned()
        .collect();
    let new_bound = bind_all(&next, &new_ls, ctx.workers)?;
    // The new addresses' server starts before the swap (until it, their requests find no
    // site: 404), so that a failure to start it leaves the old configuration in place.
    let started = match new_bound.is_empty() {
        true => None,
        false => {
            let refs: Vec<&Bound> = new_bound.iter().collect();
            Some(start(ctx, &refs, &next)?)
        }
    };
    if let Err(e) = ctx.live.reload(next.clone()) {
        if let Some((h, h3)) = started {
            stop_http3(h3, std::time::Duration::ZERO);
            h.shutdown(std::time::Duration::ZERO);
            h.join();
        }
        return Err(e.into());
    }
    // HTTP/3 is started and stopped with its address; an address kept keeps what it had.
    for l in wanted.iter().filter(|l| listening.contains(l)) {
        let running_h3 = running.h3.iter().any(|(x, _)| x == l);
        let wants_h3 = next
            .sites
            .iter()
            .any(|s| s.http3 && s.tls.is_some() && s.listen.contains(l));
        if wants_h3 != running_h3 {
            eprintln!(
                "fibra serve: SIGHUP: {l}: http3 changed on an address already served: needs a restart (SIGUSR2); kept as before"
            );
        }
    }
    if let Some((h, h3)) = started {
        running.h3.extend(h3);
        running.servers.push((h, new_ls.clone()));
        for b in &new_bound {
            eprintln!(
                "fibra serve: SIGHUP: now listening on {} ({})",
                b.listen,
                url(&ctx.live, b)
            );
        }
    }
    running.bound.extend(new_bound);
    // Removed addresses: the acceptors drop their descriptors at their next look, and the
    // copies kept here go now, so the socket closes; open connections finish.
    let (gone, kept): (Http3s, Http3s) = std::mem::take(&mut running.h3)
        .into_iter()
        .partition(|(l, _)| !wanted.contains(l));
    running.h3 = kept;
    drop(stop_http3(gone, next.server.shutdown_timeout));
    running.bound.retain(|b| {
        let keep = wanted.contains(&b.listen);
        if !keep {
            b.closed.store(true, Ordering::Release);
            eprintln!(
                "fibra serve: SIGHUP: no longer listening on {} (open connections finish)",
                b.listen
            );
        }
        keep
    });
    // A server started by a reload whose addresses are all gone is shut down gracefully.
    let grace = next.server.shutdown_timeout;
    let (idle, busy): (Vec<_>, Vec<_>) = std::mem::take(&mut running.servers)
        .into_iter()
        .enumerate()
        .partition(|(i, (_, ls))| *i > 0 && !ls.iter().any(|l| wanted.contains(l)));
    running.servers = busy.into_iter().map(|(_, s)| s).collect();
    for (_, (h, _)) in idle {
        std::thread::spawn(move || {
            h.shutdown(grace);
            h.join();
        });
    }
    // Against what runs (a reload never applied them), not the last file read.
    let mut keys = restart_keys(&ctx.server, &next.server);
    if !ctx.logging && has_logs(&next) {
        keys.push("the first site access_log");
    }
    if !keys.is_empty() {
        eprintln!(
            "fibra serve: SIGHUP: [server] {} changed: needs a restart (SIGUSR2 applies it); kept as before",
            keys.join(", ")
        );
    }
    eprintln!(
        "fibra serve: SIGHUP, reloaded {} ({} site(s))",
        path.display(),
        next.sites.len()
    );
    Ok(next)
}
