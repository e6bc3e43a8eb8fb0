//! Flags shared by the server subcommands (`serve`, `hello`) and the serve-until-signal loop.

use crate::http3::Handover;
use crate::signals;
use fibra_http::tls::CertResolver;
use fibra_http::{Request, Response, Server};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where and how to listen, and the timeouts users most often tune.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerFlags {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    /// Port to listen on (0: any free port).
    #[arg(short, long, default_value_t = 8080)]
    port: u16,
    /// Worker threads, one per core by default.
    #[arg(long, value_name = "N", value_parser = parse_workers, default_value_t = default_workers())]
    workers: usize,
    /// Total deadline for a request head, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    header_timeout: f64,
    /// Keep-alive idle timeout, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    idle_timeout: f64,
    /// At shutdown (SIGINT/SIGTERM), how long requests in flight may take to finish, in
    /// seconds; connections still open then are closed. Idle connections close at once.
    #[arg(long, value_name = "SECS", default_value_t = 5.0, alias = "grace")]
    shutdown_timeout: f64,
    /// Write the error log (permission failures with the path, failed accepts such as EMFILE
    /// with the address, TLS failures with the client's address) to FILE, or `-` for stderr.
    #[arg(long, value_name = "FILE|-", default_value = "-")]
    error_log: String,
    /// Let each worker bind its own socket with SO_REUSEPORT. Other processes of the same user
    /// can then listen on the port too and take a share of its connections (without this, a
    /// second server on the port fails with "address in use").
    #[arg(long)]
    reuse_port: bool,
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key. Repeat the
    /// --tls-cert/--tls-key pair for several certificates: each client gets the one whose
    /// names (SAN, `*.example.com` wildcards included) cover the name it asks for (SNI), and
    /// the first pair is the default for a client without SNI or with an unknown name. SIGHUP
    /// reads the files again (a failure keeps the old certificates, with a warning).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Vec<PathBuf>,
    /// The PEM private key of the --tls-cert in the same position.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Vec<PathBuf>,
    /// Also listen for plain HTTP on PORT (same --addr) and redirect every request to the
    /// same URL over HTTPS: 301 for GET/HEAD, 308 (same method and body) for the others; 400
    /// without a Host. Needs --tls-cert.
    #[arg(long, value_name = "PORT", requires = "tls_cert")]
    redirect_http: Option<u16>,
    /// Also answer HTTP/3 (QUIC) on the UDP port of the same number as the HTTPS one, with
    /// the same certificates and handler, and tell HTTPS clients so (`Alt-Svc: h3=":PORT";
    /// ma=86400` on every response). Needs --tls-cert.
    #[arg(long, requires = "tls_cert")]
    http3: bool,
    /// With --http3, accept 0-RTT: a client resuming a session may send requests in its
    /// first packet, a round trip sooner. Early data can be replayed by an attacker, so a
    /// request in it whose method is not idempotent (POST, PATCH, …) is answered `425 Too
    /// Early` (the client sends it again after the handshake); GET, HEAD, PUT, DELETE,
    /// OPTIONS are served.
    #[arg(long = "http3-0rtt", requires = "http3")]
    http3_0rtt: bool,
    /// Expect a PROXY protocol header (v1 or v2, as HAProxy's send-proxy and send-proxy-v2
    /// send it) at the start of every connection, and take the client's address from it
    /// (access log, requests' peer address). A connection without a valid header within the
    /// header timeout is closed. With --tls-cert, the header comes before the TLS handshake.
    #[arg(long)]
    proxy_protocol: bool,
    /// Expect the PROXY header only from sources in CIDR (e.g. 10.0.0.0/8, or one address;
    /// repeatable; implies --proxy-protocol). Connections from other addresses are served
    /// without a header, with their own address (HAProxy's expect-proxy if { src ... }).
    #[arg(long, value_name = "CIDR")]
    proxy_protocol_from: Vec<fibra_http::IpNet>,
    /// Write the process id to FILE once serving (removed at exit, unless a newer process
    /// of a SIGUSR2 upgrade has written its own).
    #[arg(long, value_name = "FILE")]
    pid_file: Option<PathBuf>,
    /// Answer GET PATH with 200 while serving and 503 once shutting down or handing over
    /// to a new binary (for a balancer's health check), before the app sees it.
    #[arg(long, value_name = "PATH")]
    health: Option<String>,
    /// Answer GET PATH with metrics in Prometheus's text format: requests by status class,
    /// response bytes, open connections, a latency histogram.
    #[arg(long, value_name = "PATH")]
    metrics: Option<String>,
    /// After SIGTERM/SIGINT, keep serving this many seconds with --health answering 503
    /// before the graceful shutdown, so a balancer stops sending first.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    drain_delay: f64,
}

/// One worker per core.
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `--workers`: a whole number of at least 1.
fn parse_workers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("a server needs at least 1 worker".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (a whole number of at least 1)")),
    }
}

/// The value of the duration flag `flag`, in seconds.
fn secs(flag: &str, s: f64) -> std::io::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{flag} {s}: {e}"))
    })
}

/// Raises the soft open-files limit to the hard one, as Go's runtime does at start (since
/// 1.19): the default soft limit of 1024 holds neither many connections nor a file cache.
/// Child processes inherit the raised limit. Failure leaves the limit as it was.
pub fn raise_nofile_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: `limit` is a valid rlimit; setrlimit only reads it.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    }
}

/// `p` from the current directory when relative (a site file takes relative paths from its
/// own directory).
pub fn absolute(p: PathBuf) -> PathBuf {
    match p.is_absolute() {
        true => p,
        false => std::env::current_dir().map_or(p.clone(), |d| d.join(&p)),
    }
}

/// SIGHUP: reads the certificate files again and swaps them in (new handshakes use them, open
/// connections go on); on failure, a warning naming the file, and the old ones stay.
fn reload(name: &str, resolver: Option<&CertResolver>, pairs: &[(PathBuf, PathBuf)]) {
    match resolver {
        None => stderr_line!("{name}: SIGHUP, no TLS certificates to reload"),
        Some(r) => match r.reload(pairs) {
            Ok(()) => {
                stderr_line!("{name}: SIGHUP, reloaded {} certificate(s)", pairs.len());
                warn_validity(name, pairs);
            }
            Err(e) => stderr_line!("{name}: warning: SIGHUP, keeping the old certificates: {e}"),
        },
    }
}

/// A warning on stderr for each certificate file whose leaf has expired or is not yet valid:
/// it is served anyway (as nginx does), clients will refuse it.
fn warn_validity(name: &str, pairs: &[(PathBuf, PathBuf)]) {
    for (cert, _) in pairs {
        if let Some(w) = fibra_http::tls::validity_warning(cert) {
            stderr_line!("{name}: warning: {w} (serving it anyway)");
        }
    }
}

impl ServerFlags {
    /// These flags as the site file's `[server]` table, the one site's address, its
    /// certificates and its redirect address (`--print-config`).
    pub fn site_parts(
        &self,
    ) -> std::io::Result<(
        fibra_site::config::ServerConfig,
        fibra_site::config::Listen,
        Vec<fibra_site::config::CertFiles>,
        Option<fibra_site::config::Listen>,
    )> {
        use fibra_site::config::{CertFiles, Listen, ServerConfig};
        let mut server = ServerConfig {
            workers: Some(self.workers),
            header_timeout: secs("--header-timeout", self.header_timeout)?,
            idle_timeout: secs("--idle-timeout", self.idle_timeout)?,
            shutdown_timeout: secs("--shutdown-timeout", self.shutdown_timeout)?,
            drain_delay: secs("--drain-delay", self.drain_delay)?,
            error_log: self.error_log.clone(),
            pid_file: self.pid_file.clone(),
            health: self.health.clone(),
            metrics: self.metrics.clone(),
            proxy_protocol: self.proxy_protocol,
            proxy_protocol_from: self.proxy_protocol_from.clone(),
            reuse_port: self.reuse_port,
            ..ServerConfig::default()
        };
        server.proxy_protocol |= !self.proxy_protocol_from.is_empty();
        let host = match self.addr.contains(':') {
            true => format!("[{}]", self.addr),
            false => self.addr.clone(),
        };
        let listen = Listen::Tcp(format!("{host}:{}", self.port));
        let certs = self
            .tls_pairs()?
            .into_iter()
            .map(|(cert, key)| CertFiles {
                cert: absolute(cert),
                key: absolute(key),
            })
            .collect();
        let redirect = self
            .redirect_http
            .map(|p| Listen::Tcp(format!("{host}:{p}")));
        Ok((server, listen, certs, redirect))
    }

    /// Whether the server speaks HTTPS (--tls-cert given).
    pub fn is_tls(&self) -> bool {
        !self.tls_cert.is_empty()
    }

    /// Whether HTTP/3 was asked for (`--http3`).
    pub fn http3(&self) -> bool {
        self.http3
    }

    /// The number of worker threads (`--workers`).
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The main server, on the inherited listening sockets if there are any (`LISTEN_FDS`),
    /// else on a new one on --addr and --port shared by the workers (one per worker with
    /// --reuse-port); with a copy of each listener (for a binary upgrade to hand over).
    fn main_server(&self) -> std::io::Result<(Server, Vec<std::net::TcpListener>)> {
        let (listeners, _) =
            crate::listeners::listeners(&self.addr, self.port, self.workers, self.reuse_port)?;
        let copies = listeners
            .iter()
            .map(|l| l.try_clone())
            .collect::<std::io::Result<Vec<_>>>()?;
        let server = self.tune(Server::from_listeners(listeners).workers(self.workers))?;
        Ok((server, copies))
    }

    /// `server` with the timeouts of these flags.
    fn tune(&self, server: Server) -> std::io::Result<Server> {
        Ok(server
            .header_timeout(secs("--header-timeout", self.header_timeout)?)
            .idle_timeout(secs("--idle-timeout", self.idle_timeout)?))
    }

    /// The (certificate, key) pairs of the TLS flags, in order; an error if their counts
    /// differ.
    fn tls_pairs(&self) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
        if self.tls_cert.len() != self.tls_key.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} --tls-cert but {} --tls-key: give them in pairs",
                    self.tls_cert.len(),
                    self.tls_key.len()
                ),
            ));
        }
        Ok(self
            .tls_cert
            .iter()
            .cloned()
            .zip(self.tls_key.iter().cloned())
            .collect())
    }

    /// Starts `handler` with these flags, prints `banner` followed by the URL, serves until
    /// SIGINT/SIGTERM, then shuts down gracefully. SIGHUP reloads the TLS certificates.
    pub fn serve_until_signal<H>(&self, name: &str, banner: &str, handler: H) -> std::io::Result<()>
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        self.serve_until_signal_with(name, banner, |s| s, handler)
    }

    /// [`serve_until_signal`](Self::serve_until_signal), with `configure` applied to the
    /// server after these flags (e.g. to attach an access log).
    ///
    /// The main thread is worker 0 of the server's runtime (`--workers 1`: the process's
    /// only thread, without HTTP/3): the signals are read by a fiber beside the connections.
    pub fn serve_until_signal_with<H>(
        &self,
        name: &str,
        banner: &str,
        configure: impl FnOnce(Server) -> Server + Send + 'static,
        handler: H,
    ) -> std::io::Result<()>
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        crate::error_log::install(&self.error_log)?;
        // Before the runtime starts its other workers' threads: they inherit the mask.
        signals::block_server_signals()?;
        raise_nofile_limit();
        let flags = self.clone();
        let (name, banner) = (name.to_owned(), banner.to_owned());
        fibra::Runtime::builder()
            .workers(self.workers)
            .thread_name("fibra-http")
            .run(move || flags.serve_in_fiber(&name, &banner, configure, handler))?
    }

    /// The body of [`serve_until_signal_with`](Self::serve_until_signal_with), in the root
    /// fiber of the server's runtime.
    fn serve_in_fiber<H>(
        &self,
        name: &str,
        banner: &str,
        configure: impl FnOnce(Server) -> Server,
        handler: H,
    ) -> std::io::Result<()>
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        let signals = signals::ServerSignals::new()?;
        // Loaded first: a bad file is reported before anything listens.
        let pairs = self.tls_pairs()?;
        warn_validity(name, &pairs);
        let resolver = match pairs.is_empty() {
            true => None,
            false => Some(CertResolver::from_pem(&pairs)?),
        };
        let tls = match &resolver {
            Some(r) => Some(fibra_http::tls::choose_config_with_resolver(r.clone())?),
            None => None,
        };
        let grace = secs("--shutdown-timeout", self.shutdown_timeout)?;
        let drain_delay = secs("--drain-delay", self.drain_delay)?;
        let (server, listeners) = self.main_server()?;
        let server = configure(server);
        // HTTP/3 on the HTTPS port's UDP twin; the handler, shared, also answers it.
        let h3_addr = match (self.http3, listeners.first()) {
            (true, Some(l)) => Some(l.local_addr()?),
            _ => None,
        };
        // Written by the connections, as `Server` (a cached file's answer stays prepared);
        // HTTP/3's own answers go without.
        let server = server.alt_svc(h3_addr.map(|a| crate::http3::alt_svc(a.port())));
        let endpoints = crate::endpoints::Endpoints::new(self.health.clone(), self.metrics.clone());
        let handler = Arc::new(endpoints.clone().wrap(handler));
        let mut http3 = match (h3_addr, &resolver) {
            (Some(addr), Some(resolver)) => {
                let settings = Arc::new(server.current_settings().clone());
                let handed = crate::http3_handover::Incoming::take("")?;
                let h3 = crate::http3::Http3::start(
                    addr,
                    handed,
                    self.workers,
                    self.http3_0rtt,
                    resolver.clone(),
                    settings,
                    handler.clone(),
                )?;
                announce!("{name}: HTTP/3 on udp://{}", h3.local_addr());
                Some(h3)
            }
            _ => None,
        };
        // With --metrics, the errors the server reports are counted (and logged as before).
        let server = match self.metrics.is_some() {
            true => server.on_error(crate::endpoints::on_server_error),
            false => server,
        };
        let trusted = self.proxy_protocol_from.clone();
        let proxy_protocol = |server: Server| match trusted.is_empty() {
            true => server.proxy_protocol(),
            false => server.proxy_protocol_from(trusted),
        };
        let expect_header = self.proxy_protocol || !self.proxy_protocol_from.is_empty();
        let (handle, scheme) = match (tls, expect_header) {
            (Some(choose), false) => (server.tls_choosing(choose).serve_shared(handler)?, "https"),
            (Some(choose), true) => (
                proxy_protocol(server)
                    .tls_choosing(choose)
                    .serve_shared(handler)?,
                "https",
            ),
            (None, false) => (server.serve_shared(handler)?, "http"),
            (None, true) => (proxy_protocol(server).serve_shared(handler)?, "http"),
        };
        endpoints.set_connections(handle.connection_count());
        announce!("{banner} {scheme}://{}/", handle.local_addr());
        if let Some(path) = &self.pid_file {
            std::fs::write(path, format!("{}\n", std::process::id())).map_err(|e| {
                std::io::Error::new(e.kind(), format!("--pid-file {}: {e}", path.display()))
            })?;
        }
        // Serving: an upgrading parent may now drain and exit.
        crate::upgrade::signal_ready();
        // One worker: redirects are cheap, and their clients come back over TLS. Its
        // listener is kept too, for an upgrade to hand over.
        let mut redirect_copy = None;
        let redirect = match self.redirect_http {
            Some(port) => {
                let to = fibra_http::redirect::redirect_to_https(handle.local_addr().port());
                let listener = crate::listeners::redirect_listener(&self.addr, port)?;
                redirect_copy = Some(listener.try_clone()?);
                let server = self.tune(Server::from_listeners(vec![listener]).workers(1))?;
                let redirect = server.serve(to)?;
                announce!(
                    "{name}: redirecting http://{}/ to https",
                    redirect.local_addr()
                );
                Some(redirect)
            }
            None => None,
        };
        let handed_over = loop {
            match signals.next()? {
                signals::ServerSignal::Shutdown(sig) => {
                    endpoints.set_draining();
                    if !drain_delay.is_zero() {
                        stderr_line!("{name}: {sig}, draining for {drain_delay:?}");
                        fibra::time::sleep(drain_delay);
                    }
                    stderr_line!("{name}: {sig}, shutting down (requests in flight have {grace:?} to finish)");
                    break false;
                }
                signals::ServerSignal::Reload => reload(name, resolver.as_deref(), &pairs),
                signals::ServerSignal::Upgrade => {
                    use std::os::fd::AsFd;
                    let mut handed: Vec<_> = listeners.iter().map(|l| l.as_fd()).collect();
                    let mut names = vec![crate::listeners::MAIN; listeners.len()];
                    if let Some(r) = &redirect_copy {
                        handed.push(r.as_fd());
                        names.push(crate::listeners::REDIRECT);
                    }
                    // HTTP/3's sockets and the link between the processes (`http3_handover`).
                    let h3 = match Handover::begin(http3.iter_mut().map(|h| (h, String::new()))) {
                        Ok(h3) => h3,
                        Err(e) => {
                            stderr_line!("{name}: SIGUSR2, upgrade failed, still serving: {e}");
                            continue;
                        }
                    };
                    for (fd, n) in &h3.fds {
                        handed.push(fd.as_fd());
                        names.push(n);
                    }
                    let started = crate::upgrade::start_new_binary(&handed, &names);
                    h3.end(started.is_ok());
                    match started {
                        Ok(pid) => {
                            // Draining before the health check says so: a client that sees
                            // 503 knows this process closes after each answer.
                            handle.begin_drain();
                            endpoints.set_draining();
                            stderr_line!(
                                "{name}: SIGUSR2, the new binary (pid {pid}) serves; draining"
                            );
                            break true;
                        }
                        Err(e) => {
                            stderr_line!("{name}: SIGUSR2, upgrade failed, still serving: {e}")
                        }
                    }
                }
            }
        };
        drop(listeners);
        drop(redirect_copy);
        if let Some(redirect) = redirect {
            redirect.shutdown(grace);
        }
        // HTTP/3 drains beside the TCP listeners, in the same grace period.
        let h3_stop = http3.map(|h3| h3.stop_in_background(grace));
        if handed_over {
            handle.drain(crate::upgrade::IDLE_GRACE, grace);
        } else {
            handle.shutdown(grace);
        }
        if let Some(t) = h3_stop {
            // HTTP/3 runs on threads of its own; this worker's fibers go on meanwhile.
            while !t.is_finished() {
                fibra::time::sleep(Duration::from_millis(10));
            }
            let _ = t.join();
        }
        // The workers' exit closes what they still hold, such as pooled upstream TLS
        // sessions (each with its close_notify), before the process does.
        handle.join();
        if let Some(path) = &self.pid_file {
            let ours = format!("{}\n", std::process::id());
            if std::fs::read_to_string(path).is_ok_and(|p| p == ours) {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    }
}
