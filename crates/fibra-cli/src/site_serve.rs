//! `fibra serve --config FILE`: the sites of a site file (see `docs/CONFIG.md`) on one server
//! and runtime, every address an acceptor of it. SIGHUP reads the file again (all or nothing:
//! a bad file is logged and the old configuration keeps serving; requests in flight finish on
//! the configuration they started with; new addresses open, removed ones stop accepting),
//! SIGUSR2 hands the sockets to a new binary, SIGTERM/SIGINT shut down gracefully.
//!
//! The servers are started by `site_start`, a reload is `site_reload`'s.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use fibra_site::config::{self, Listen};
use fibra_site::Live;

use crate::endpoints::Endpoints;
use crate::http3::Handover;
use crate::signals;
use crate::site_http3::{quic_prefix, stop_http3};
use crate::site_listen::fd_name;
use crate::site_listen::Bound;
use crate::site_reload::reload;
use crate::site_start::{addresses, bind_all, has_logs, start, url, Ctx, Running};

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
    announce!(
        "fibra serve: {}: configuration OK ({} site(s))",
        path.display(),
        config.sites.len()
    );
    Ok(())
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
    let signals = signals::ServerSignals::new()?;
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
    announce!(
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
        match signals.next()? {
            signals::ServerSignal::Shutdown(sig) => {
                endpoints.set_draining();
                if !current.server.drain_delay.is_zero() {
                    stderr_line!(
                        "fibra serve: {sig}, draining for {:?}",
                        current.server.drain_delay
                    );
                    std::thread::sleep(current.server.drain_delay);
                }
                stderr_line!(
                    "fibra serve: {sig}, shutting down (requests in flight have {:?} to finish)",
                    current.server.shutdown_timeout
                );
                break false;
            }
            signals::ServerSignal::Reload => match reload(&ctx, &path, &current, &mut running) {
                Ok(next) => current = next,
                Err(e) => {
                    for line in e.to_string().lines() {
                        stderr_line!("fibra serve: SIGHUP: {line}");
                    }
                    stderr_line!("fibra serve: SIGHUP: the configuration is unchanged");
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
                // HTTP/3's sockets and links, each address's under its prefix.
                let h3 = Handover::begin(
                    running
                        .h3
                        .iter_mut()
                        .map(|(listen, h3)| (h3, quic_prefix(listen))),
                );
                let h3 = match h3 {
                    Ok(h3) => h3,
                    Err(e) => {
                        stderr_line!("fibra serve: SIGUSR2, upgrade failed, still serving: {e}");
                        continue;
                    }
                };
                for (fd, n) in &h3.fds {
                    use std::os::fd::AsFd;
                    handed.push(fd.as_fd());
                    names.push(n.clone());
                }
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let started = crate::upgrade::start_new_binary(&handed, &names);
                drop(handed);
                h3.end(started.is_ok());
                match started {
                    Ok(pid) => {
                        for (h, _) in &running.servers {
                            h.begin_drain();
                        }
                        endpoints.set_draining();
                        stderr_line!(
                            "fibra serve: SIGUSR2, the new binary (pid {pid}) serves; draining"
                        );
                        break true;
                    }
                    Err(e) => {
                        stderr_line!("fibra serve: SIGUSR2, upgrade failed, still serving: {e}")
                    }
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
