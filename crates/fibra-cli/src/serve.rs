//! `fibra serve`: a static file server (Mighty's job) over `fibra_http::files`.

use crate::signals;
use fibra_http::files::{AccessLog, FileServer, FileServerConfig};
use fibra_http::{Request, Server};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Flags of `fibra serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory to serve (default: the current directory).
    dir: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Worker threads (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Index file served for a directory URL.
    #[arg(long, default_value = "index.html")]
    index: String,
    /// List directories that have no index file (otherwise 403).
    #[arg(long)]
    list: bool,
    /// Value of the Cache-Control header on file responses.
    #[arg(long, value_name = "VALUE")]
    cache_control: Option<String>,
    /// Write a combined-format access log to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE|-")]
    access_log: Option<String>,
    /// Serve hidden files (names starting with a dot).
    #[arg(long)]
    allow_hidden: bool,
    /// Follow symlinks that point outside DIR.
    #[arg(long)]
    follow_symlinks: bool,
    /// Total deadline for a request head, in seconds.
    #[arg(long, value_name = "SECS")]
    header_timeout: Option<f64>,
    /// Keep-alive idle timeout, in seconds.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Grace period for in-flight requests at shutdown, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    grace: f64,
}

fn secs(s: f64) -> std::io::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("bad duration {s}: {e}"),
        )
    })
}

/// Runs `fibra serve` until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> std::io::Result<()> {
    signals::block_shutdown_signals()?;
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let mut config = FileServerConfig::new(dir.clone());
    config.index = Some(args.index).filter(|s| !s.is_empty());
    config.listing = args.list;
    config.cache_control = args.cache_control;
    config.allow_hidden = args.allow_hidden;
    config.follow_symlinks = args.follow_symlinks;
    let mut files = FileServer::new(config)?;
    if let Some(spec) = &args.access_log {
        files = files.with_access_log(AccessLog::open(spec)?);
    }
    let files = Arc::new(files);
    let mut server = Server::bind((args.addr.as_str(), args.port));
    if let Some(w) = args.workers {
        server = server.workers(w);
    }
    if let Some(t) = args.header_timeout {
        server = server.header_timeout(secs(t)?);
    }
    if let Some(t) = args.idle_timeout {
        server = server.idle_timeout(secs(t)?);
    }
    let grace = secs(args.grace)?;
    let f2 = files.clone();
    let handle = server.serve(move |req: Request| f2.handle(&req))?;
    println!(
        "fibra serve: serving {} on http://{}/",
        dir.display(),
        handle.local_addr()
    );
    let sig = signals::wait_for_shutdown_signal();
    eprintln!("fibra serve: {sig}, shutting down (grace {grace:?})");
    handle.shutdown(grace);
    if let Some(log) = files.access_log() {
        log.flush()?;
    }
    Ok(())
}
