//! `fibra serve`: a static file server (Mighty's job) over `fibra_http::files`.

use crate::server_flags::ServerFlags;
use fibra_http::files::{AccessLog, FileServer, FileServerConfig};
use fibra_http::Request;
use std::path::PathBuf;
use std::sync::Arc;

/// Flags of `fibra serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory to serve (default: the current directory).
    dir: Option<PathBuf>,
    #[command(flatten)]
    server: ServerFlags,
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
}

/// Runs `fibra serve` until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> std::io::Result<()> {
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
    let files = Arc::new(FileServer::new(config)?);
    // The connection loop writes the access log: it knows the bytes actually sent.
    let access_log = match &args.access_log {
        Some(spec) => Some(AccessLog::open(spec)?),
        None => None,
    };
    let log = access_log.clone();
    args.server.serve_until_signal_with(
        "fibra serve",
        &format!("fibra serve: serving {} on", dir.display()),
        move |server| match log {
            Some(log) => server.access_log_sink(log),
            None => server,
        },
        move |req: Request| files.handle(&req),
    )?;
    if let Some(log) = access_log {
        log.flush()?;
    }
    Ok(())
}
