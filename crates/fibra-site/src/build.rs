//! Building the running form ([`Sites`]) of a checked [`Config`]: what needs the disk
//! (certificates and keys, password files, error pages, file roots, logs) is read here, and
//! every failure is reported with the position of what caused it, as `--check-config` does.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use fibra_files::{FileServer, FileServerConfig};
use fibra_http::access_log::AccessLog;
use fibra_http::http::{HeaderName, HeaderValue, StatusCode};
use fibra_http::tls::{
    certified_key_from_pem, choose_config_with_resolver, server_config_with_resolver, CertResolver,
    ChooseConfig, ALPN_HTTP1,
};

use crate::access::{AccessList, BasicAuth, RateLimit};
use crate::action::{Action, Candidate, FilesAction};
use crate::config::{
    self, Config, ConfigError, ConfigErrors, HeaderRules, Listen, LogFormat, PathMatch, Pos,
    RouteConfig, SiteConfig, Tls,
};
use crate::hosts::HostTable;
use crate::kept::Kept;
use crate::route::{ErrorPage, HeaderOps, Route};
use crate::routes::RouteTable;
use crate::sites::{Group, Mode, Site, Sites};

/// The most bytes of file contents the shared file cache holds in memory.
const FILE_CACHE_BYTES: u64 = 64 << 20;

/// The most client addresses a rate limiter tracks.
const RATE_LIMIT_CLIENTS: usize = 100_000;

struct Errors(Vec<ConfigError>);

/// A site's serving form and its redirect-to-HTTPS form.
type SiteForms = (Option<Arc<Site>>, Option<Arc<Site>>);

impl Errors {
    fn add(&mut self, at: &Pos, key: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigError {
            at: at.clone(),
            key: key.into(),
            message: message.into(),
        });
    }
}

/// What a build is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Serving: logs opened, ACME certificates managed.
    Serve,
    /// `--check-config`: everything read and checked, nothing created (no log file, no ACME
    /// storage or order).
    Check,
}

/// Builds `config` for the listening addresses `slots` (each of its addresses has one),
/// reusing what `kept` has for unchanged settings; the new set of kept objects.
pub(crate) fn build(
    config: Config,
    slots: &[Listen],
    kept: &Kept,
    purpose: Purpose,
) -> Result<(Sites, Kept), ConfigErrors> {
    let mut errors = Errors(Vec::new());
    let mut now = Kept {
        checking: purpose == Purpose::Check,
        ..Kept::default()
    };
    // One file cache for every root (entries and bytes bounded for all sites together).
    let cache = &config.server.cache;
    now.file_cache = match &kept.file_cache {
        Some((c, shared)) if c == cache => Some((c.clone(), shared.clone())),
        _ => Some((
            cache.clone(),
            Arc::new(fibra_files::cache::FileCache::new(
                cache.ttl,
                cache.entries,
                FILE_CACHE_BYTES,
            )),
        )),
    };
    let acme_wanted = config
        .sites
        .iter()
        .any(|s| matches!(s.tls, Some(Tls::Acme)));
    if let (Some(table), true, Purpose::Serve) = (&config.acme, acme_wanted, purpose) {
        match crate::acme_sites::client(table, kept.acme.as_ref()) {
            Ok(c) => now.acme = Some(c),
            Err(e) => errors.add(&table.at, "acme", e.to_string()),
        }
    }
    // Per site: its serving form, and its redirect form (for `redirect_http`).
    let mut built: Vec<SiteForms> = Vec::new();
    for site in &config.sites {
        let serve = build_site(&config, site, kept, &mut now, &mut errors);
        let redirect = match (&serve, site.redirect_http.is_empty()) {
            (Some(s), false) => Some(Arc::new(Site {
                name: site_name(site),
                counters: s.counters.clone(),
                mode: Mode::RedirectHttps {
                    port: https_port(site),
                },
                table: RouteTable::default(),
                routes: Vec::new(),
                certs: None,
                tls: None,
                // Its redirects go to the site's log.
                log: s.log.clone(),
                http3: false,
            })),
            _ => None,
        };
        built.push((serve.map(Arc::new), redirect));
    }
    if !errors.0.is_empty() {
        errors.0.sort_by_key(|e| (e.at.line, e.at.col));
        return Err(ConfigErrors(errors.0));
    }
    let mut groups: Vec<Option<Group>> = (0..slots.len()).map(|_| None).collect();
    for (i, site) in config.sites.iter().enumerate() {
        let (serve, redirect) = &built[i];
        let entries = site
            .listen
            .iter()
            .map(|l| (l, serve, site.tls.is_some()))
            .chain(site.redirect_http.iter().map(|l| (l, redirect, false)));
        for (l, s, tls) in entries {
            let Some(s) = s else { continue };
            let slot = slots
                .iter()
                .position(|x| x == l)
                .expect("every address has a slot");
            let group = groups[slot].get_or_insert_with(|| Group {
                listen: l.clone(),
                hosts: HostTable::default(),
                sites: Vec::new(),
                tls,
            });
            group
                .hosts
                .add(group.sites.len(), &site.hosts, site.default);
            group.sites.push(s.clone());
        }
    }
    let acme = now.acme.as_ref().map(|c| c.acme.clone());
    let acme_tls = now.acme.as_ref().map(|c| c.challenge.clone());
    Ok((
        Sites {
            groups,
            config,
            acme,
            acme_tls,
        },
        now,
    ))
}

fn site_name(site: &SiteConfig) -> String {
    match site.hosts.first() {
        Some(h) => format!("{} ({h})", site.key),
        None => format!("{} (default)", site.key),
    }
}

/// The port of the site's first TCP address (443 if it has none).
fn https_port(site: &SiteConfig) -> u16 {
    site.listen
        .iter()
        .find_map(|l| match l {
            Listen::Tcp(a) => a.rsplit_once(':').and_then(|(_, p)| p.parse().ok()),
            Listen::Unix(_) => None,
        })
        .unwrap_or(443)
}

fn build_site(
    config: &Config,
    site: &SiteConfig,
    kept: &Kept,
    now: &mut Kept,
    errors: &mut Errors,
) -> Option<Site> {
    let before = errors.0.len();
    let (certs, tls) = match &site.tls {
        Some(Tls::Files(pairs)) => {
            let mut keys = Vec::new();
            for p in pairs {
                if !now.checking {
                    // Served anyway, as nginx does; clients will refuse it.
                    if let Some(w) = fibra_http::tls::validity_warning(&p.cert) {
                        log::warn!("{}: {w} (serving it anyway)", site_name(site));
                    }
                }
                match certified_key_from_pem(&p.cert, &p.key) {
                    Ok(k) => keys.push(k),
                    Err(e) => errors.add(&site.tls_at, format!("{}.tls", site.key), e.to_string()),
                }
            }
            match CertResolver::new(keys).and_then(|r| Ok((r.clone(), tls_config(r, site.http2)?)))
            {
                Ok((r, c)) => (Some(r), Some(c)),
                Err(e) => {
                    if errors.0.len() == before {
                        errors.add(&site.tls_at, format!("{}.tls", site.key), e.to_string());
                    }
                    (None, None)
                }
            }
        }
        // Checking: the [acme] table was checked as read; nothing is ordered.
        Some(Tls::Acme) if now.checking => (None, None),
        Some(Tls::Acme) => match acme_cert(site, kept, now) {
            Ok(r) => match tls_config(r.clone(), site.http2) {
                Ok(c) => (Some(r), Some(c)),
                Err(e) => {
                    errors.add(&site.tls_at, format!("{}.tls", site.key), e.to_string());
                    (None, None)
                }
            },
            Err(e) => {
                errors.add(&site.tls_at, format!("{}.tls", site.key), e.to_string());
                (None, None)
            }
        },
        None => (None, None),
    };
    let log = match &site.access_log {
        None => None,
        Some(l) if now.checking => {
            if let Err(e) = log_writable(&l.path) {
                errors.add(&site.at, format!("{}.access_log", site.key), e);
            }
            None
        }
        Some(l) => {
            let opened = match l.format {
                LogFormat::Combined => AccessLog::open(&l.path),
                LogFormat::Json => AccessLog::open_json(&l.path),
            };
            match opened {
                Ok(log) => Some(log),
                Err(e) => {
                    errors.add(&site.at, format!("{}.access_log", site.key), e.to_string());
                    None
                }
            }
        }
    };
    let https = site.tls.is_some();
    let mut table = RouteTable::default();
    let mut routes = Vec::new();
    for r in &site.routes {
        if let Some(route) = build_route(config, site, r, https, kept, now, errors) {
            table.add(routes.len(), &r.path);
            routes.push(route);
        }
    }
    let name = site_name(site);
    let counters = kept.counters.get(&name).cloned().unwrap_or_default();
    now.counters.insert(name.clone(), counters.clone());
    (errors.0.len() == before).then(|| Site {
        counters,
        name,
        mode: Mode::Serve,
        table,
        routes,
        certs,
        tls,
        log,
        http3: site.http3,
    })
}

/// Whether a log at `path` could be written, without creating it: an existing file opens
/// for appending, else its directory exists (`-`: a standard stream).
pub fn log_writable(path: &str) -> Result<(), String> {
    if path == "-" {
        return Ok(());
    }
    let p = std::path::Path::new(path);
    if p.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(p)
            .map(drop)
            .map_err(|e| format!("{path}: {e}"));
    }
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
    match dir.map(std::path::Path::is_dir) {
        Some(false) => Err(format!("{path}: its directory does not exist")),
        _ => Ok(()),
    }
}

/// The certificate resolver of an ACME site: the one kept for its names, else a newly
/// managed certificate (stored, or a self-signed fallback while the first is ordered).
fn acme_cert(site: &SiteConfig, kept: &Kept, now: &mut Kept) -> io::Result<Arc<CertResolver>> {
    let key = site.hosts.join(" ");
    if let Some(c) = kept.certs.get(&key).or_else(|| now.certs.get(&key)) {
        if now.acme.is_some()
            && kept.acme.as_ref().map(Arc::as_ptr) == now.acme.as_ref().map(Arc::as_ptr)
        {
            let c = c.clone();
            now.certs.insert(key, c.clone());
            return Ok(c.resolver.clone());
        }
    }
    let client = now
        .acme
        .clone()
        .ok_or_else(|| io::Error::other("no [acme] client (see the [acme] table's error)"))?;
    let cert = Arc::new(crate::acme_sites::manage(&client, site.hosts.clone())?);
    now.certs.insert(key, cert.clone());
    Ok(cert.resolver.clone())
}

/// The TLS configuration of a site's certificates: Go's suite order, ALPN `h2` and
/// `http/1.1` (only `http/1.1` with `http2 = false`).
fn tls_config(resolver: Arc<CertResolver>, http2: bool) -> io::Result<Arc<ChooseConfig>> {
    if http2 {
        return choose_config_with_resolver(resolver);
    }
    let mut config = (*server_config_with_resolver(resolver)?).clone();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    let config = Arc::new(config);
    Ok(Arc::new(move |_: &rustls::server::ClientHello<'_>| {
        Some(config.clone())
    }))
}

fn header_ops(rules: &HeaderRules) -> Option<HeaderOps> {
    if rules.is_empty() {
        return None;
    }
    let pair = |(n, v): &(String, String)| {
        Some((
            HeaderName::from_bytes(n.as_bytes()).ok()?,
            HeaderValue::from_str(v).ok()?,
        ))
    };
    Some(HeaderOps {
        set: rules.set.iter().filter_map(pair).collect(),
        add: rules.add.iter().filter_map(pair).collect(),
        remove: rules
            .remove
            .iter()
            .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
            .collect(),
    })
}

/// The prefix a route's action sees (`=/x` → `/x`).
fn prefix_of(path: &PathMatch) -> &str {
    match path {
        PathMatch::Exact(p) | PathMatch::Prefix(p) => p,
    }
}

#[allow(clippy::too_many_arguments)]
fn build_route(
    config: &Config,
    site: &SiteConfig,
    r: &RouteConfig,
    https: bool,
    kept: &Kept,
    now: &mut Kept,
    errors: &mut Errors,
) -> Option<Route> {
    let before = errors.0.len();
    let action = match &r.action {
        None => Some(Action::NotFound),
        Some(config::Action::Files(f)) => {
            let prefix = if f.strip_prefix {
                prefix_of(&r.path).trim_end_matches('/').to_owned()
            } else {
                String::new()
            };
            // The route's response header rules are rendered into the files' heads.
            let key = format!(
                "{f:?}|{prefix}|{:?}|{:?}|{:?}",
                config.server.cache, config.server.compression, r.headers
            );
            let server = match kept.files.get(&key).or_else(|| now.files.get(&key)) {
                Some(s) => Some(s.clone()),
                None => {
                    let mut fc = FileServerConfig::new(f.root.clone());
                    fc.prefix = prefix;
                    fc.index = Some(f.index.clone()).filter(|i| !i.is_empty());
                    fc.listing = f.listing;
                    fc.cache_control = f.cache_control.clone();
                    fc.allow_hidden = f.allow_hidden;
                    fc.follow_symlinks = f.follow_symlinks;
                    fc.cache_ttl = config.server.cache.ttl;
                    fc.cache_capacity = config.server.cache.entries;
                    fc.headers = header_ops(&r.headers).unwrap_or_default();
                    fc.shared_cache = now.file_cache.as_ref().map(|(_, c)| c.clone());
                    fc.compress = (f.compress && config.server.compression.enabled).then(|| {
                        fibra_files::compress::CompressConfig {
                            level: config.server.compression.gzip_level,
                            ..Default::default()
                        }
                    });
                    match FileServer::new(fc) {
                        Ok(s) => Some(Arc::new(s)),
                        Err(e) => {
                            errors.add(&r.at, format!("{}.files.root", r.key), e.to_string());
                            None
                        }
                    }
                }
            };
            server.map(|server| {
                now.files.insert(key, server.clone());
                Action::Files(FilesAction {
                    server,
                    try_files: f.try_files.iter().map(|c| Candidate::parse(c)).collect(),
                })
            })
        }
        Some(config::Action::Proxy(p)) => {
            let prefix = prefix_of(&r.path);
            let mut p_key = p.clone();
            p_key.at = Pos::default();
            let key = format!("{p_key:?}|{prefix}|{https}");
            let proxy = match kept.proxies.get(&key).or_else(|| now.proxies.get(&key)) {
                Some(proxy) => Ok(proxy.clone()),
                None => crate::upstreams::proxy(p, prefix, https, !now.checking).map(Arc::new),
            };
            match proxy {
                Ok(proxy) => {
                    now.proxies.insert(key, proxy.clone());
                    Some(Action::Proxy(proxy))
                }
                Err(e) => {
                    errors.add(&p.at, format!("{}.proxy", r.key), e.to_string());
                    None
                }
            }
        }
        Some(config::Action::Redirect { to, code }) => Some(Action::Redirect {
            to: to.clone(),
            code: StatusCode::from_u16(*code).unwrap_or(StatusCode::FOUND),
        }),
        Some(config::Action::Respond {
            status,
            body,
            content_type,
        }) => match HeaderValue::from_str(content_type) {
            Ok(ct) => Some(Action::Respond {
                status: StatusCode::from_u16(*status).unwrap_or(StatusCode::OK),
                body: Bytes::from(body.clone().into_bytes()),
                content_type: ct,
            }),
            Err(_) => {
                errors.add(
                    &r.at,
                    format!("{}.respond.type", r.key),
                    "not a header value",
                );
                None
            }
        },
    };
    let basic_auth = match &r.basic_auth {
        None => None,
        Some(b) => {
            let made = match &b.htpasswd {
                Some(file) => BasicAuth::from_htpasswd(&b.realm, file).map_err(|e| e.to_string()),
                None => BasicAuth::new(&b.realm, b.users.clone()),
            };
            match made {
                Ok(a) => Some(Arc::new(a)),
                Err(e) => {
                    errors.add(&b.at, format!("{}.basic_auth", r.key), e);
                    None
                }
            }
        }
    };
    let rate_limit = r.rate_limit.as_ref().map(|rl| {
        let key = format!("{}|{}|{}|{}", site.key, r.path, rl.rate_text, rl.burst);
        let limit = kept
            .limits
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Arc::new(RateLimit::new(rl.rate, rl.burst, RATE_LIMIT_CLIENTS)));
        now.limits.insert(key, limit.clone());
        limit
    });
    let mut error_pages = Vec::new();
    for (code, file) in &r.error_pages {
        match std::fs::read(file) {
            Ok(body) => error_pages.push(ErrorPage {
                status: StatusCode::from_u16(*code).unwrap_or(StatusCode::NOT_FOUND),
                body: Bytes::from(body),
                content_type: HeaderValue::from_str(&fibra_files::meta::content_type(file))
                    .unwrap_or(HeaderValue::from_static("text/html; charset=utf-8")),
            }),
            Err(e) => errors.add(
                &r.at,
                format!("{}.error_pages.{code}", r.key),
                format!("{}: {e}", file.display()),
            ),
        }
    }
    let access = (!r.allow.is_empty() || !r.deny.is_empty()).then(|| AccessList {
        allow: r.allow.clone(),
        deny: r.deny.clone(),
    });
    let headers_up = match &r.action {
        Some(config::Action::Proxy(p)) => header_ops(&p.headers_up),
        _ => None,
    };
    if errors.0.len() != before {
        return None;
    }
    Some(Route {
        action: action?,
        headers: header_ops(&r.headers),
        headers_up,
        access,
        rate_limit,
        basic_auth,
        max_body: r.max_body,
        error_pages,
    })
}

/// Every error of `config`'s files (for `--check-config`): [`build`] on fresh state.
pub fn check_files(config: &Config) -> Result<(), ConfigErrors> {
    let mut slots: Vec<Listen> = Vec::new();
    for site in &config.sites {
        for l in site.listen.iter().chain(&site.redirect_http) {
            if !slots.contains(l) {
                slots.push(l.clone());
            }
        }
    }
    build(config.clone(), &slots, &Kept::default(), Purpose::Check).map(|_| ())
}
