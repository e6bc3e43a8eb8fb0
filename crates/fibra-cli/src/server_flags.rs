//! Flags shared by the server subcommands (`serve`, `hello`) and the serve-until-signal loop.

use crate::signals;
use fibra_http::tls::CertResolver;
use fibra_http::{Request, Response, Server};
use std::path::PathBuf;
use std::time::Duration;

/// Where and how to listen, and the timeouts users most often tune.
#[derive(clap::Args, Debug)]
pub struct ServerFlags {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Worker threads (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Total deadline for a request head, in seconds.
    #[arg(long, value_name = "SECS")]
    header_timeout: Option<f64>,
    /// Keep-alive idle timeout, in seconds.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Grace period for in-flight requests at shutdown, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    grace: f64,
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
    /// Expect a PROXY protocol header (v1 or v2, as HAProxy's send-proxy and send-proxy-v2
    /// send it) at the start of every connection, and take the client's address from it
    /// (access log, requests' peer address). A connection without a valid header within the
    /// header timeout is closed. With --tls-cert, the header comes before the TLS handshake.
    #[arg(long)]
    proxy_protocol: bool,
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

fn secs(s: f64) -> std::io::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("bad duration {s}: {e}"),
        )
    })
}

/// Raises the soft open-files limit to the hard one, as Go's runtime does at start (since
/// 1.19): the default soft limit of 1024 holds neither many connections nor a file cache.
/// Child processes inherit the raised limit. Failure leaves the limit as it was.
fn raise_nofile_limit() {
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

/// SIGHUP: reads the certificate files again and swaps them in (new handshakes use them, open
/// connections go on); on failure, a warning naming the file, and the old ones stay.
fn reload(name: &str, resolver: Option<&CertResolver>, pairs: &[(PathBuf, PathBuf)]) {
    match resolver {
        None => eprintln!("{name}: SIGHUP, no TLS certificates to reload"),
        Some(r) => match r.reload(pairs) {
            Ok(()) => {
                eprintln!("{name}: SIGHUP, reloaded {} certificate(s)", pairs.len());
                warn_validity(name, pairs);
            }
            Err(e) => eprintln!("{name}: warning: SIGHUP, keeping the old certificates: {e}"),
        },
    }
}

/// A warning on stderr for each certificate file whose leaf has expired or is not yet valid:
/// it is served anyway (as nginx does), clients will refuse it.
fn warn_validity(name: &str, pairs: &[(PathBuf, PathBuf)]) {
    for (cert, _) in pairs {
        if let Some(w) = fibra_http::tls::validity_warning(cert) {
            eprintln!("{name}: warning: {w} (serving it anyway)");
        }
    }
}

impl ServerFlags {
    /// A server on `port` of --addr with `workers` and the timeouts of these flags.
    fn server(&self, port: u16, workers: Option<usize>) -> std::io::Result<Server> {
        let mut server = Server::bind((self.addr.as_str(), port));
        if let Some(w) = workers {
            server = server.workers(w);
        }
        self.tune(server)
    }

    /// The main server, on the inherited listening sockets if there are any (`LISTEN_FDS`),
    /// else on new ones on --addr and --port, one per worker; with a copy of each listener
    /// (for a binary upgrade to hand over).
    fn main_server(&self) -> std::io::Result<(Server, Vec<std::net::TcpListener>)> {
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let (listeners, _) = crate::listeners::listeners(&self.addr, self.port, workers)?;
        let copies = listeners
            .iter()
            .map(|l| l.try_clone())
            .collect::<std::io::Result<Vec<_>>>()?;
        let server = self.tune(Server::from_listeners(listeners).workers(workers))?;
        Ok((server, copies))
    }

    /// `server` with the timeouts of these flags.
    fn tune(&self, mut server: Server) -> std::io::Result<Server> {
        if let Some(t) = self.header_timeout {
            server = server.header_timeout(secs(t)?);
        }
        if let Some(t) = self.idle_timeout {
            server = server.idle_timeout(secs(t)?);
        }
        Ok(server)
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
    pub fn serve_until_signal_with<H>(
        &self,
        name: &str,
        banner: &str,
        configure: impl FnOnce(Server) -> Server,
        handler: H,
    ) -> std::io::Result<()>
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        signals::block_server_signals()?;
        raise_nofile_limit();
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
        let grace = secs(self.grace)?;
        let drain_delay = secs(self.drain_delay)?;
        let endpoints = crate::endpoints::Endpoints::new(self.health.clone(), self.metrics.clone());
        let handler = endpoints.clone().wrap(handler);
        let (server, listeners) = self.main_server()?;
        let server = configure(server);
        let (handle, scheme) = match (tls, self.proxy_protocol) {
            (Some(choose), false) => (server.tls_choosing(choose).serve(handler)?, "https"),
            (Some(choose), true) => (
                server
                    .proxy_protocol()
                    .tls_choosing(choose)
                    .serve(handler)?,
                "https",
            ),
            (None, false) => (server.serve(handler)?, "http"),
            (None, true) => (server.proxy_protocol().serve(handler)?, "http"),
        };
        endpoints.set_connections(handle.connection_count());
        println!("{banner} {scheme}://{}/", handle.local_addr());
        if let Some(path) = &self.pid_file {
            std::fs::write(path, format!("{}\n", std::process::id())).map_err(|e| {
                std::io::Error::new(e.kind(), format!("--pid-file {}: {e}", path.display()))
            })?;
        }
        // Serving: an upgrading parent may now drain and exit.
        crate::upgrade::signal_ready();
        // One worker: redirects are cheap, and their clients come back over TLS.
        let redirect = match self.redirect_http {
            Some(port) => {
                let to = fibra_http::tls::redirect_to_https(handle.local_addr().port());
                let redirect = self.server(port, Some(1))?.serve(to)?;
                println!(
                    "{name}: redirecting http://{}/ to https",
                    redirect.local_addr()
                );
                Some(redirect)
            }
            None => None,
        };
        let handed_over = loop {
            match signals::wait_for_server_signal() {
                signals::ServerSignal::Shutdown(sig) => {
                    endpoints.set_draining();
                    if !drain_delay.is_zero() {
                        eprintln!("{name}: {sig}, draining for {drain_delay:?}");
                        std::thread::sleep(drain_delay);
                    }
                    eprintln!("{name}: {sig}, shutting down (grace {grace:?})");
                    break false;
                }
                signals::ServerSignal::Reload => reload(name, resolver.as_deref(), &pairs),
                signals::ServerSignal::Upgrade => {
                    match crate::upgrade::start_new_binary(&listeners) {
                        Ok(pid) => {
                            endpoints.set_draining();
                            eprintln!(
                                "{name}: SIGUSR2, the new binary (pid {pid}) serves; draining"
                            );
                            break true;
                        }
                        Err(e) => eprintln!("{name}: SIGUSR2, upgrade failed, still serving: {e}"),
                    }
                }
            }
        };
        drop(listeners);
        if let Some(redirect) = redirect {
            redirect.shutdown(grace);
        }
        if handed_over {
            handle.drain(crate::upgrade::IDLE_GRACE, grace);
        } else {
            handle.shutdown(grace);
        }
        if let Some(path) = &self.pid_file {
            let ours = format!("{}\n", std::process::id());
            if std::fs::read_to_string(path).is_ok_and(|p| p == ours) {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    }
}
