//! `fibra bench`: an HTTP/1.x load generator built on fibra fibers, with
//! weighttp's flags and report.
//!
//! Layout: [`args`] (flags and validation), [`target`] (the URL, with
//! `http::Uri`), [`request`] (rendered once), [`paths`] (`--paths`: a random path a
//! request), [`conn`] (one connection and its
//! buffer, read with [`fibra_http::client`]'s response parser), [`driver`]
//! (fibers on a runtime), [`tls`] (the client configuration for `https://`),
//! [`ws`] (`--ws`: WebSocket echo load), [`http2`] (`--h2`), [`http3`] (`--h3`), [`pace`] (`--rate`), [`stats`] (per-worker counters and histogram),
//! [`report`] (text and JSON), [`progress`].
//!
//! Exit status: 0 after a run in which some request succeeded, 1 when none
//! did or the host cannot be reached, 2 for invalid flags.

pub mod args;
pub mod conn;
pub mod driver;
pub mod h2_io;
pub mod http2;
pub mod http3;
pub mod pace;
pub mod paths;
pub mod progress;
pub mod report;
pub mod request;
pub mod stats;
pub mod target;
pub mod tls;
pub mod ws;

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use args::BenchArgs;
use args::Config;
use progress::Progress;
use report::Summary;

/// How long the reachability probe waits without `--timeout`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs `fibra bench` and prints its report to stdout.
pub fn run(args: BenchArgs) -> ExitCode {
    let config = match args.validate() {
        Ok(config) => config,
        Err(e) => {
            stderr_line!("fibra bench: error: {e}");
            return ExitCode::from(2);
        }
    };
    let addr = match resolve(&config) {
        Ok(addr) => addr,
        Err(e) => {
            stderr_line!("fibra bench: error: {e}");
            return ExitCode::from(1);
        }
    };
    raise_fd_limit(config.connections);
    let stop = Arc::new(AtomicBool::new(false));
    watch_interrupts(stop.clone());
    let progress = Progress::start(config.limit, config.workers);
    let counters = progress.as_ref().map(Progress::counters);
    let outcome = driver::execute(&config, addr, counters, stop);
    if let Some(p) = progress {
        p.finish();
    }
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            stderr_line!("fibra bench: error: cannot start the fibra runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let summary = Summary {
        config: &config,
        stats: &outcome.stats,
        elapsed: outcome.elapsed,
    };
    let report = if config.json {
        format!("{}\n", summary.json())
    } else {
        summary.text()
    };
    if let Err(e) = crate::output::write_output(&report) {
        stderr_line!("fibra bench: error: writing the report: {e}");
        return ExitCode::from(1);
    }
    if outcome.stats.succeeded == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// On the first SIGINT or SIGTERM, sets `stop` so the run ends and reports
/// what it did; on the second, exits at once. Must run before the runtime
/// starts, so that its threads inherit the blocked signals.
fn watch_interrupts(stop: Arc<AtomicBool>) {
    if crate::signals::block_shutdown_signals().is_err() {
        return; // the default action (terminate) stays in force
    }
    let watcher = move || {
        let sig = crate::signals::wait_for_shutdown_signal();
        stop.store(true, Ordering::Relaxed);
        stderr_line!("fibra bench: {sig}, finishing requests in flight (again to quit)");
        crate::signals::wait_for_shutdown_signal();
        std::process::exit(130);
    };
    let _ = std::thread::Builder::new()
        .name("bench-signals".into())
        .spawn(watcher);
}

/// Resolves the target and picks the first address that accepts a
/// connection. A refused connection is not fatal (the run counts it), but a
/// name that does not resolve or a host that cannot be reached is.
fn resolve(config: &Config) -> Result<SocketAddr, String> {
    let target = &config.target;
    let addrs: Vec<SocketAddr> = target
        .socket_addr_string()
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve host {:?}: {e}", target.host))?
        .collect();
    if config.h3.is_some() {
        // UDP has no connection to probe: the first connection's handshake tells.
        return addrs
            .first()
            .copied()
            .ok_or_else(|| format!("host {:?} has no address", target.host));
    }
    let mut refused = None;
    let mut last_error = None;
    for addr in &addrs {
        match std::net::TcpStream::connect_timeout(addr, config.timeout.unwrap_or(PROBE_TIMEOUT)) {
            Ok(_) => return Ok(*addr),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                refused.get_or_insert(*addr);
            }
            Err(e) => last_error = Some(format!("cannot reach {} ({addr}): {e}", target.authority)),
        }
    }
    refused.ok_or_else(|| {
        last_error.unwrap_or_else(|| format!("host {:?} has no address", target.host))
    })
}

/// Raises the soft open-files limit to the hard one when `connections`
/// sockets would not fit; failure just leaves connects to fail visibly.
fn raise_fd_limit(connections: usize) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let wanted = connections as libc::rlim_t + 64;
    if limit.rlim_cur < wanted && limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = wanted.min(limit.rlim_max);
        // SAFETY: `limit` is a valid rlimit; setrlimit only reads it.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    }
}
