//! `fibra serve`: a static file server (Mighty's job) over `fibra_files`.

use crate::proxy_flags::ProxyFlags;
use crate::server_flags::ServerFlags;
use fibra_files::{FileServer, FileServerConfig};
use fibra_http::access_log::AccessLog;
use fibra_http::Request;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Flags of `fibra serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory to serve (default: the current directory).
    dir: Option<PathBuf>,
    /// Serve the sites of a site file (TOML, see docs/CONFIG.md: virtual hosts, routes,
    /// balanced upstreams, TLS, ACME) instead of DIR and the per-site flags. SIGHUP reads it
    /// again (a bad file keeps the old configuration, with every error logged).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dir", "check_config", "print_config"])]
    config: Option<PathBuf>,
    /// Check a site file as starting with it would (syntax, keys, values, certificates and
    /// keys, password files, error pages, file roots, addresses) and exit: 0 if it is good,
    /// else 1 with every error as FILE:LINE:COLUMN: KEY: MESSAGE.
    #[arg(long, value_name = "FILE", conflicts_with = "print_config")]
    check_config: Option<PathBuf>,
    /// Print the site file equivalent to the other flags given, and exit.
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    server: ServerFlags,
    #[command(flatten)]
    proxy: ProxyFlags,
    /// Index file served for a directory URL.
    #[arg(long, default_value = "index.html")]
    index: String,
    /// Answer a directory without index file with 403 instead of a listing of its files.
    #[arg(long)]
    no_list: bool,
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
    /// Most files (paths, 404s included) kept open or in memory; files up to 16 KiB are held
    /// in memory, at most 64 MiB of them. A change to a cached file is seen at once (inotify).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    cache_entries: usize,
    /// Longest time a cached file is trusted, in seconds: a backstop for changes inotify
    /// cannot see (a network filesystem written from another machine).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    cache_ttl: f64,
    /// gzip level (1 fastest .. 9 smallest) for compressible files (text, JSON, JS, CSS, SVG)
    /// of 1 KiB to 8 MiB without a precompressed .gz/.br sibling, for clients that accept it;
    /// clients that accept brotli get brotli (quality 5). Each file is compressed once: the
    /// results are cached (at most 64 MiB).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=9))]
    gzip_level: u32,
    /// Never compress on the fly (precompressed siblings are still served).
    #[arg(long)]
    no_compress: bool,
    /// Look every file up on every request (no cache).
    #[arg(long, conflicts_with_all = ["cache_entries", "cache_ttl"])]
    no_cache: bool,
}

/// The startup line before the URL: what is served, how directories without index file are
/// answered, and by how many workers.
fn banner(root: &std::path::Path, listing: bool, workers: usize) -> String {
    let dirs = match listing {
        true => "directories without index listed",
        false => "directories without index refused (403)",
    };
    let plural = if workers == 1 { "" } else { "s" };
    format!(
        "fibra serve: serving {} ({dirs}, {workers} worker{plural}) on",
        root.display()
    )
}

/// The site file equivalent to the flags of `args` (`--print-config`).
fn flags_config(args: &ServeArgs) -> std::io::Result<fibra_site::config::Config> {
    use fibra_site::config::{
        Action, CacheConfig, CompressionConfig, Config, FilesConfig, HeaderRules, PathMatch, Pos,
        RouteConfig, SiteConfig, Tls,
    };
    let (mut server, listen, certs, redirect) = args.server.site_parts()?;
    server.cache = CacheConfig {
        entries: if args.no_cache { 0 } else { args.cache_entries },
        ttl: Duration::try_from_secs_f64(args.cache_ttl).unwrap_or(Duration::from_secs(60)),
    };
    server.compression = CompressionConfig {
        enabled: !args.no_compress,
        gzip_level: args.gzip_level,
    };
    let dir = match &args.dir {
        Some(d) => crate::server_flags::absolute(d.clone()),
        None => std::env::current_dir()?,
    };
    let route = |path: PathMatch, action: Action, max_body: Option<u64>| RouteConfig {
        path,
        action: Some(action),
        headers: HeaderRules::default(),
        basic_auth: None,
        allow: Vec::new(),
        deny: Vec::new(),
        rate_limit: None,
        max_body,
        error_pages: Vec::new(),
        at: Pos::default(),
        key: String::new(),
    };
    let mut routes = vec![route(
        PathMatch::Prefix("/".into()),
        Action::Files(FilesConfig {
            root: dir,
            index: args.index.clone(),
            listing: !args.no_list,
            try_files: Vec::new(),
            cache_control: args.cache_control.clone(),
            compress: true,
            allow_hidden: args.allow_hidden,
            follow_symlinks: args.follow_symlinks,
            strip_prefix: false,
        }),
        None,
    )];
    for (prefix, proxy) in args.proxy.site_routes()? {
        let max = args.proxy.max_body().filter(|&n| n != u64::MAX);
        routes.push(route(PathMatch::Prefix(prefix), Action::Proxy(proxy), max));
    }
    let access_log = args
        .access_log
        .as_ref()
        .map(|p| fibra_site::config::AccessLogConfig {
            path: p.clone(),
            format: fibra_site::config::LogFormat::Combined,
        });
    Ok(Config {
        server,
        acme: None,
        sites: vec![SiteConfig {
            hosts: Vec::new(),
            listen: vec![listen],
            default: true,
            tls: (!certs.is_empty()).then_some(Tls::Files(certs)),
            redirect_http: redirect.into_iter().collect(),
            http2: true,
            http3: args.server.http3(),
            access_log,
            routes,
            at: Pos::default(),
            tls_at: Pos::default(),
            key: "site[0]".into(),
        }],
    })
}

/// Runs `fibra serve` until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> std::io::Result<()> {
    if let Some(path) = args.check_config {
        return crate::site_serve::check(&path);
    }
    if args.print_config {
        return crate::output::write_output(&fibra_site::config::print(&flags_config(&args)?));
    }
    if let Some(path) = args.config {
        return crate::site_serve::run(path);
    }
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let mut config = FileServerConfig::new(dir.clone());
    config.index = Some(args.index).filter(|s| !s.is_empty());
    config.listing = !args.no_list;
    config.cache_control = args.cache_control;
    config.allow_hidden = args.allow_hidden;
    config.follow_symlinks = args.follow_symlinks;
    config.cache_ttl = Duration::try_from_secs_f64(args.cache_ttl).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--cache-ttl {}: {e}", args.cache_ttl),
        )
    })?;
    config.compress = (!args.no_compress).then(|| fibra_files::compress::CompressConfig {
        level: args.gzip_level,
        ..Default::default()
    });
    config.cache_capacity = if args.no_cache { 0 } else { args.cache_entries };
    let files = Arc::new(FileServer::new(config)?);
    if !args.no_cache && args.cache_entries > 0 && !files.caching() {
        stderr_line!(
            "fibra serve: warning: cannot watch {} for changes (inotify); file cache off",
            files.root().display()
        );
    }
    // The connection loop writes the access log: it knows the bytes actually sent.
    let access_log = match &args.access_log {
        Some(spec) => Some(AccessLog::open(spec)?),
        None => None,
    };
    let log = access_log.clone();
    let proxy = args.proxy.proxy(args.server.is_tls())?;
    let max_body = args.proxy.max_body();
    args.server.serve_until_signal_with(
        "fibra serve",
        &banner(files.root(), !args.no_list, args.server.workers()),
        move |server| {
            let server = match max_body {
                Some(n) => server.max_body_bytes(n),
                None => server,
            };
            match log {
                Some(log) => server.access_log_sink(log),
                None => server,
            }
        },
        // Proxied prefixes first; every other request is a file's.
        move |req: Request| match &proxy {
            Some(proxy) => proxy.handle(req).unwrap_or_else(|req| files.handle(&req)),
            None => files.handle(&req),
        },
    )?;
    if let Some(log) = access_log {
        log.flush()?;
    }
    Ok(())
}
