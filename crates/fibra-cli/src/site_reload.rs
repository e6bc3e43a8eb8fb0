//! SIGHUP for `fibra serve --config`: the file read and built again, new addresses served,
//! the configuration swapped in, removed addresses closed; all or nothing.

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use fibra_site::config::{self, Config, Listen, ServerConfig};

use crate::site_http3::{stop_http3, wants_http3, Http3s};
use crate::site_listen::Bound;
use crate::site_start::{
    addresses, bind_all, has_logs, is_tls, start, url, where_listened, Ctx, Running,
};

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
    if old.http3_0rtt != new.http3_0rtt {
        keys.push("http3_0rtt");
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
pub(crate) fn reload(
    ctx: &Ctx,
    path: &Path,
    current: &Config,
    running: &mut Running,
) -> io::Result<Config> {
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
        if wants_http3(&next, l) != running_h3 {
            stderr_line!(
                "fibra serve: SIGHUP: {l}: http3 changed on an address already served: needs a restart (SIGUSR2); kept as before"
            );
        }
    }
    if let Some((h, h3)) = started {
        running.h3.extend(h3);
        running.servers.push((h, new_ls.clone()));
        for b in &new_bound {
            stderr_line!(
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
            stderr_line!(
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
        stderr_line!(
            "fibra serve: SIGHUP: [server] {} changed: needs a restart (SIGUSR2 applies it); kept as before",
            keys.join(", ")
        );
    }
    stderr_line!(
        "fibra serve: SIGHUP, reloaded {} ({} site(s))",
        path.display(),
        next.sites.len()
    );
    Ok(next)
}
