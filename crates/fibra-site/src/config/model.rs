//! The site file's model: what `fibra serve --config` reads (see `docs/CONFIG.md`), each
//! value checked for its type and range, with the position of what later checks (files,
//! certificates, addresses) may still refuse.

use std::path::PathBuf;
use std::time::Duration;

use fibra_http::IpNet;

use super::reader::Pos;

/// A whole site file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// What is not per site.
    pub server: ServerConfig,
    /// The ACME account, when a site says `tls = "acme"`.
    pub acme: Option<AcmeConfig>,
    /// The sites, in file order.
    pub sites: Vec<SiteConfig>,
}

/// `[server]`: settings of the process, not of a site.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Worker threads (default: one per core). Needs a restart.
    pub workers: Option<usize>,
    /// Deadline for a request head. Needs a restart.
    pub header_timeout: Duration,
    /// Keep-alive idle timeout. Needs a restart.
    pub idle_timeout: Duration,
    /// How long requests in flight may take at shutdown.
    pub shutdown_timeout: Duration,
    /// How long health answers 503 before the shutdown starts.
    pub drain_delay: Duration,
    /// The error log: a file, or `-` for stderr. Needs a restart.
    pub error_log: String,
    /// Where to write the process id.
    pub pid_file: Option<PathBuf>,
    /// Path answered with 200 (503 when draining) on every site.
    pub health: Option<String>,
    /// Path answered with Prometheus metrics on every site.
    pub metrics: Option<String>,
    /// Expect a PROXY protocol header on every connection. Needs a restart.
    pub proxy_protocol: bool,
    /// Expect it only from these sources (implies `proxy_protocol`). Needs a restart.
    pub proxy_protocol_from: Vec<IpNet>,
    /// One listening socket per worker (`SO_REUSEPORT`). Needs a restart.
    pub reuse_port: bool,
    /// Accept 0-RTT on the HTTP/3 endpoints (`425 Too Early` for a non-idempotent request
    /// in early data). Needs a restart.
    pub http3_0rtt: bool,
    /// The file cache shared by every `files` route.
    pub cache: CacheConfig,
    /// On-the-fly compression of files.
    pub compression: CompressionConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            workers: None,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            shutdown_timeout: Duration::from_secs(5),
            drain_delay: Duration::ZERO,
            error_log: "-".into(),
            pid_file: None,
            health: None,
            metrics: None,
            proxy_protocol: false,
            proxy_protocol_from: Vec::new(),
            reuse_port: false,
            http3_0rtt: false,
            cache: CacheConfig::default(),
            compression: CompressionConfig::default(),
        }
    }
}

/// `[server.cache]`: the file cache.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheConfig {
    /// Most entries per files root (0: no cache).
    pub entries: usize,
    /// Longest time a cached file is trusted.
    pub ttl: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            entries: 4096,
            ttl: Duration::from_secs(60),
        }
    }
}

/// `[server.compression]`: on-the-fly compression of compressible files.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionConfig {
    /// Whether files are compressed on the fly (precompressed siblings are served anyway).
    pub enabled: bool,
    /// gzip level, 1..=9.
    pub gzip_level: u32,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig {
            enabled: true,
            gzip_level: 6,
        }
    }
}

/// `[acme]`: the ACME account for sites with `tls = "acme"`.
#[derive(Debug, Clone, PartialEq)]
pub struct AcmeConfig {
    /// Directory URL.
    pub directory: String,
    /// Contact URLs (`mailto:`).
    pub contact: Vec<String>,
    /// Keys and certificates (keys 0600).
    pub storage: PathBuf,
    /// CA bundle for the directory's HTTPS.
    pub ca: Option<PathBuf>,
    /// `tls-alpn-01`, `http-01`, in order of preference.
    pub challenges: Vec<String>,
    /// The certificate profile to ask for (e.g. Let's Encrypt's `"shortlived"`).
    pub profile: Option<String>,
    /// Where the table is.
    pub at: Pos,
}

/// A listening address: `HOST:PORT` or a Unix socket path (starting with `/` or `unix:`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Listen {
    /// A TCP address, as written (resolved when bound).
    Tcp(String),
    /// A Unix-domain socket path.
    Unix(PathBuf),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => f.write_str(a),
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A certificate and its key (PEM files).
#[derive(Debug, Clone, PartialEq)]
pub struct CertFiles {
    /// The chain, leaf first.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

/// A site's TLS.
#[derive(Debug, Clone, PartialEq)]
pub enum Tls {
    /// Certificates from files (several: chosen by SNI among them).
    Files(Vec<CertFiles>),
    /// Certificates obtained and renewed with ACME.
    Acme,
}

/// The format of an access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// nginx's `combined`.
    Combined,
    /// One JSON object per line.
    Json,
}

/// A site's access log.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessLogConfig {
    /// A file, or `-` for stdout.
    pub path: String,
    /// The format.
    pub format: LogFormat,
}

/// `[[site]]`: names, addresses, TLS and routes.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteConfig {
    /// Host names: exact, or `*.example.com` (any one label in front). Empty: only as the
    /// default site.
    pub hosts: Vec<String>,
    /// Where the site is served.
    pub listen: Vec<Listen>,
    /// The site for an unknown Host (or no SNI) on its addresses.
    pub default: bool,
    /// TLS, if the site is served over HTTPS.
    pub tls: Option<Tls>,
    /// Plain-HTTP addresses that redirect this site's names to HTTPS (ACME's http-01 path
    /// answered there).
    pub redirect_http: Vec<Listen>,
    /// HTTP/2 (over TLS by ALPN, cleartext with prior knowledge). Default true.
    pub http2: bool,
    /// HTTP/3 on the UDP twin of each of its HTTPS addresses, announced by `Alt-Svc` on its
    /// HTTPS answers. Default false; needs `tls` and TCP addresses.
    pub http3: bool,
    /// The site's access log.
    pub access_log: Option<AccessLogConfig>,
    /// The routes.
    pub routes: Vec<RouteConfig>,
    /// Where the site's table is.
    pub at: Pos,
    /// Where its `tls` is (certificate errors point there).
    pub tls_at: Pos,
    /// Its key path (`site[1]`).
    pub key: String,
}

/// How a route matches a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathMatch {
    /// `=/exact`.
    Exact(String),
    /// A prefix (`/api/`).
    Prefix(String),
}

impl std::fmt::Display for PathMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathMatch::Exact(p) => write!(f, "={p}"),
            PathMatch::Prefix(p) => f.write_str(p),
        }
    }
}

/// Response (or request) header rules.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeaderRules {
    /// Set (replace) these fields.
    pub set: Vec<(String, String)>,
    /// Add these fields (beside any of the same name).
    pub add: Vec<(String, String)>,
    /// Remove these fields.
    pub remove: Vec<String>,
}

impl HeaderRules {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }
}

/// `basic_auth`.
#[derive(Debug, Clone, PartialEq)]
pub struct BasicAuthConfig {
    /// The realm shown to the user.
    pub realm: String,
    /// Users and their bcrypt or argon2 hashes.
    pub users: Vec<(String, String)>,
    /// An htpasswd file (bcrypt or argon2 lines).
    pub htpasswd: Option<PathBuf>,
    /// Where it is.
    pub at: Pos,
}

/// `rate_limit`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitConfig {
    /// Requests per second (written `"5/s"`, `"100/m"`).
    pub rate: f64,
    /// As written.
    pub rate_text: String,
    /// Requests a client may make at once.
    pub burst: u32,
}

/// A route's action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Serve files.
    Files(FilesConfig),
    /// Forward to upstreams.
    Proxy(ProxyConfig),
    /// Redirect.
    Redirect {
        /// Target, with `{path}` and `{query}` placeholders.
        to: String,
        /// 301, 302, 303, 307 or 308.
        code: u16,
    },
    /// A fixed answer.
    Respond {
        /// Status.
        status: u16,
        /// Body.
        body: String,
        /// Content-Type.
        content_type: String,
    },
}

/// `files`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FilesConfig {
    /// The directory.
    pub root: PathBuf,
    /// Index file of a directory (`""`: none).
    pub index: String,
    /// Directory listings.
    pub listing: bool,
    /// Candidates in order (`{path}`, `{path}/`, `/index.html`); the last is the fallback.
    pub try_files: Vec<String>,
    /// Cache-Control of file responses.
    pub cache_control: Option<String>,
    /// On-the-fly compression (with `[server.compression]` on).
    pub compress: bool,
    /// Serve names starting with a dot.
    pub allow_hidden: bool,
    /// Follow symlinks out of the root.
    pub follow_symlinks: bool,
    /// Strip the route's prefix before looking the file up (nginx's `alias`). Default
    /// false (nginx's `root`: the whole path is looked up under the root).
    pub strip_prefix: bool,
}

/// Active health checks of a proxy route.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthConfig {
    /// Path to GET.
    pub path: String,
    /// How often.
    pub interval: Duration,
    /// How long a check may take.
    pub timeout: Duration,
}

/// `proxy`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// Upstream URLs (`http[s]://HOST:PORT[/PATH]`; a path replaces the route's prefix).
    pub upstreams: Vec<String>,
    /// `round_robin`, `least_conn`, `ip_hash`, `first`.
    pub policy: String,
    /// Active health checks.
    pub health: Option<HealthConfig>,
    /// Passive health: failures that mark an upstream down...
    pub max_fails: u32,
    /// ...within this time, and for this time.
    pub fail_timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read/write timeout.
    pub timeout: Duration,
    /// Idle keep-alive connections per upstream and worker.
    pub keepalive: usize,
    /// CA bundle for https upstreams.
    pub ca: Option<PathBuf>,
    /// Header rules for the request sent up.
    pub headers_up: HeaderRules,
    /// Where it is.
    pub at: Pos,
}

impl ProxyConfig {
    /// A proxy to `upstreams` with the defaults: round robin, no active health checks, an
    /// upstream down for 10 s after 1 failure, connect timeout 10 s, timeout 60 s, 64 idle
    /// connections per upstream and worker.
    pub fn new(upstreams: Vec<String>) -> ProxyConfig {
        super::route_schema::proxy_default(upstreams)
    }
}

/// `[[site.route]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteConfig {
    /// What it matches.
    pub path: PathMatch,
    /// What it does (`None`: only the checks and headers, then 404).
    pub action: Option<Action>,
    /// Response header rules.
    pub headers: HeaderRules,
    /// Basic authentication.
    pub basic_auth: Option<BasicAuthConfig>,
    /// Allowed client networks (non-empty: everyone else gets 403).
    pub allow: Vec<IpNet>,
    /// Refused client networks.
    pub deny: Vec<IpNet>,
    /// Rate limit per client address.
    pub rate_limit: Option<RateLimitConfig>,
    /// Largest request body.
    pub max_body: Option<u64>,
    /// Status -> file, for error answers.
    pub error_pages: Vec<(u16, PathBuf)>,
    /// Where the route is.
    pub at: Pos,
    /// Its key path.
    pub key: String,
}
