//! The site file's keys, table by table: reads a parsed document into [`Config`], recording
//! every error (wrong type, out of range, unknown key with the nearest valid one). Here the
//! top level, `[server]`, `[acme]` and `[[site]]`; a site's routes are `route_schema`'s, and
//! the values several tables share are read by `values`.

use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use super::model::*;
use super::reader::{Reader, Table, Val};
use super::route_schema::{route, ROUTE};
use super::values::{item_span, log_path, nets, path_in, positive, set, url_path};

const TOP: &[&str] = &["server", "acme", "site"];
const SERVER: &[&str] = &[
    "workers",
    "header_timeout",
    "idle_timeout",
    "shutdown_timeout",
    "drain_delay",
    "error_log",
    "pid_file",
    "health",
    "metrics",
    "proxy_protocol",
    "proxy_protocol_from",
    "reuse_port",
    "http3_0rtt",
    "cache",
    "compression",
];
const CACHE: &[&str] = &["entries", "ttl"];
const COMPRESSION: &[&str] = &["enabled", "gzip_level"];
const ACME: &[&str] = &[
    "directory",
    "contact",
    "storage",
    "ca",
    "challenges",
    "profile",
];
const SITE: &[&str] = &[
    "hosts",
    "listen",
    "default",
    "tls",
    "redirect_http",
    "http2",
    "http3",
    "access_log",
    "route",
];
const CERT: &[&str] = &["cert", "key"];
const ACCESS_LOG: &[&str] = &["path", "format"];
/// Reads the document `doc` of the file at `base` (relative paths are taken from the file's
/// directory).
pub(crate) fn read(r: &mut Reader<'_>, doc: &DeTable<'_>) -> Config {
    let base = r.file().parent().map(Path::to_path_buf).unwrap_or_default();
    let top = r.entries(doc, "", TOP);
    let mut config = Config::default();
    if let Some((key, v)) = top.get("server") {
        if let Some(t) = r.table(v, &key, SERVER) {
            config.server = server(r, &t, &base);
        }
    }
    if let Some((key, v)) = top.get("acme") {
        if let Some(t) = r.table(v, &key, ACME) {
            config.acme = acme(r, &t, &base, v);
        }
    }
    if let Some((key, v)) = top.get("site") {
        for (key, v) in r.tables(v, &key) {
            if let Some(t) = r.table(v, &key, SITE) {
                config.sites.push(site(r, &t, &base, v));
            }
        }
    }
    config
}

fn server(r: &mut Reader<'_>, t: &Table<'_, '_>, base: &Path) -> ServerConfig {
    let mut s = ServerConfig::default();
    for (name, key, v) in t.iter() {
        match name {
            "workers" => s.workers = r.integer(v, &key, 1, 4096).map(|n| n as usize),
            "header_timeout" => set(&mut s.header_timeout, positive(r, v, &key)),
            "idle_timeout" => set(&mut s.idle_timeout, positive(r, v, &key)),
            "shutdown_timeout" => set(&mut s.shutdown_timeout, r.duration(v, &key)),
            "drain_delay" => set(&mut s.drain_delay, r.duration(v, &key)),
            "error_log" => set(
                &mut s.error_log,
                r.string(v, &key).map(|p| log_path(base, &p)),
            ),
            "pid_file" => s.pid_file = r.string(v, &key).map(|p| path_in(base, &p)),
            "health" => s.health = url_path(r, v, &key),
            "metrics" => s.metrics = url_path(r, v, &key),
            "proxy_protocol" => set(&mut s.proxy_protocol, r.boolean(v, &key)),
            "proxy_protocol_from" => s.proxy_protocol_from = nets(r, v, &key),
            "reuse_port" => set(&mut s.reuse_port, r.boolean(v, &key)),
            "http3_0rtt" => set(&mut s.http3_0rtt, r.boolean(v, &key)),
            "cache" => {
                if let Some(t) = r.table(v, &key, CACHE) {
                    for (name, key, v) in t.iter() {
                        match name {
                            "entries" => {
                                if let Some(n) = r.integer(v, &key, 0, 10_000_000) {
                                    s.cache.entries = n as usize;
                                }
                            }
                            "ttl" => set(&mut s.cache.ttl, r.duration(v, &key)),
                            _ => {}
                        }
                    }
                }
            }
            "compression" => {
                if let Some(t) = r.table(v, &key, COMPRESSION) {
                    for (name, key, v) in t.iter() {
                        match name {
                            "enabled" => set(&mut s.compression.enabled, r.boolean(v, &key)),
                            "gzip_level" => {
                                if let Some(n) = r.integer(v, &key, 1, 9) {
                                    s.compression.gzip_level = n as u32;
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    s
}

fn acme(r: &mut Reader<'_>, t: &Table<'_, '_>, base: &Path, v: &Val<'_>) -> Option<AcmeConfig> {
    let mut a = AcmeConfig {
        directory: String::new(),
        contact: Vec::new(),
        storage: PathBuf::new(),
        ca: None,
        challenges: vec!["tls-alpn-01".into(), "http-01".into()],
        profile: None,
        at: r.pos(v.span().start),
    };
    let mut ok = true;
    for (name, key, v) in t.iter() {
        match name {
            "directory" => match r.string(v, &key) {
                Some(d) if d.starts_with("https://") || d.starts_with("http://") => a.directory = d,
                Some(d) => {
                    r.error(v.span(), &key, format!("{d:?}: expected an https:// URL"));
                    ok = false;
                }
                None => ok = false,
            },
            "contact" => set(&mut a.contact, r.strings(v, &key)),
            "storage" => {
                if let Some(p) = r.string(v, &key) {
                    a.storage = path_in(base, &p);
                }
            }
            "ca" => a.ca = r.string(v, &key).map(|p| path_in(base, &p)),
            "profile" => a.profile = r.string(v, &key),
            "challenges" => {
                if let Some(list) = r.strings(v, &key) {
                    for (i, c) in list.iter().enumerate() {
                        if c != "tls-alpn-01" && c != "http-01" {
                            r.error(
                                item_span(v, i),
                                &format!("{key}[{i}]"),
                                format!("{c:?}: expected \"tls-alpn-01\" or \"http-01\" (dns-01 is not offered)"),
                            );
                        }
                    }
                    if list.is_empty() {
                        r.error(v.span(), &key, "at least one challenge is needed");
                    }
                    a.challenges = list;
                }
            }
            _ => {}
        }
    }
    for (name, missing) in [
        ("directory", a.directory.is_empty()),
        ("storage", a.storage.as_os_str().is_empty()),
    ] {
        if missing && ok {
            r.error(v.span(), &format!("{}.{name}", t.key), "required");
        }
    }
    Some(a)
}

fn listen(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Vec<Listen> {
    let Some(list) = r.strings(v, key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        if let Some(p) = s.strip_prefix("unix:") {
            out.push(Listen::Unix(path_in(base, p)));
        } else if s.starts_with('/') {
            out.push(Listen::Unix(PathBuf::from(s)));
        } else if let Some((host, port)) = s.rsplit_once(':') {
            if host.is_empty() || port.parse::<u16>().is_err() {
                r.error(
                    item_span(v, i),
                    &format!("{key}[{i}]"),
                    format!("{s:?}: expected HOST:PORT (e.g. \"0.0.0.0:443\", \"[::]:80\") or a Unix socket path"),
                );
            } else {
                out.push(Listen::Tcp(s.clone()));
            }
        } else {
            r.error(
                item_span(v, i),
                &format!("{key}[{i}]"),
                format!("{s:?}: expected HOST:PORT or a Unix socket path"),
            );
        }
    }
    out
}

fn site(r: &mut Reader<'_>, t: &Table<'_, '_>, base: &Path, v: &Val<'_>) -> SiteConfig {
    let mut s = SiteConfig {
        hosts: Vec::new(),
        listen: Vec::new(),
        default: false,
        tls: None,
        redirect_http: Vec::new(),
        http2: true,
        http3: false,
        access_log: None,
        routes: Vec::new(),
        at: r.pos(v.span().start),
        tls_at: r.pos(v.span().start),
        key: t.key.clone(),
    };
    for (name, key, v) in t.iter() {
        match name {
            "hosts" => {
                if let Some(hosts) = r.strings(v, &key) {
                    for (i, h) in hosts.iter().enumerate() {
                        match check_host(h) {
                            Ok(h) => s.hosts.push(h),
                            Err(e) => r.error(item_span(v, i), &format!("{key}[{i}]"), e),
                        }
                    }
                }
            }
            "listen" => s.listen = listen(r, v, &key, base),
            "default" => set(&mut s.default, r.boolean(v, &key)),
            "http2" => set(&mut s.http2, r.boolean(v, &key)),
            "http3" => set(&mut s.http3, r.boolean(v, &key)),
            "redirect_http" => s.redirect_http = listen(r, v, &key, base),
            "tls" => {
                s.tls_at = r.pos(v.span().start);
                s.tls = tls(r, v, &key, base);
            }
            "access_log" => s.access_log = access_log(r, v, &key, base),
            "route" => {
                for (key, v) in r.tables(v, &key) {
                    if let Some(t) = r.table(v, &key, ROUTE) {
                        if let Some(route) = route(r, &t, base, v) {
                            s.routes.push(route);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if s.listen.is_empty() {
        r.error(
            v.span(),
            &format!("{}.listen", t.key),
            "required: where the site is served (e.g. listen = [\"0.0.0.0:80\"])",
        );
    }
    if s.hosts.is_empty() && !s.default {
        r.error(
            v.span(),
            &format!("{}.hosts", t.key),
            "a site without hosts must be the default (default = true)",
        );
    }
    if s.http3 && s.tls.is_none() {
        r.error(
            v.span(),
            &format!("{}.http3", t.key),
            "HTTP/3 needs tls on the site (QUIC is always encrypted)",
        );
    }
    if s.http3 && s.listen.iter().any(|l| matches!(l, Listen::Unix(_))) {
        r.error(
            v.span(),
            &format!("{}.http3", t.key),
            "HTTP/3 is served on UDP: a unix: address cannot have it",
        );
    }
    if !s.redirect_http.is_empty() && s.tls.is_none() {
        r.error(
            v.span(),
            &format!("{}.redirect_http", t.key),
            "redirecting to HTTPS needs tls on the site",
        );
    }
    s
}

/// A host name as matched: lower case, no port, `*.` only in front.
fn check_host(h: &str) -> Result<String, String> {
    let lower = h.trim_end_matches('.').to_ascii_lowercase();
    let name = lower.strip_prefix("*.").unwrap_or(&lower);
    let valid = !name.is_empty()
        && name
            .split('.')
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if !valid {
        return Err(format!(
            "{h:?}: expected a host name (\"example.com\") or a wildcard (\"*.example.com\")"
        ));
    }
    Ok(lower)
}

fn tls(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Option<Tls> {
    match v.get_ref() {
        DeValue::String(s) if s == "acme" => Some(Tls::Acme),
        DeValue::String(s) => {
            r.error(
                v.span(),
                key,
                format!("{s:?}: expected \"acme\" or {{ cert = \"FILE\", key = \"FILE\" }}"),
            );
            None
        }
        DeValue::Table(_) | DeValue::Array(_) => {
            let mut pairs = Vec::new();
            for (key, v) in r.tables(v, key) {
                let Some(t) = r.table(v, &key, CERT) else {
                    continue;
                };
                let cert = t.get("cert").and_then(|(k, v)| r.string(v, &k));
                let private = t.get("key").and_then(|(k, v)| r.string(v, &k));
                match (cert, private) {
                    (Some(c), Some(k)) => pairs.push(CertFiles {
                        cert: path_in(base, &c),
                        key: path_in(base, &k),
                    }),
                    _ => r.error(v.span(), &key, "needs both cert and key"),
                }
            }
            (!pairs.is_empty()).then_some(Tls::Files(pairs))
        }
        _ => {
            r.error(
                v.span(),
                key,
                "expected \"acme\" or { cert = \"FILE\", key = \"FILE\" }",
            );
            None
        }
    }
}

fn access_log(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Option<AccessLogConfig> {
    if let DeValue::String(s) = v.get_ref() {
        return Some(AccessLogConfig {
            path: log_path(base, s),
            format: LogFormat::Combined,
        });
    }
    let t = r.table(v, key, ACCESS_LOG)?;
    let path = t.get("path").and_then(|(k, v)| r.string(v, &k));
    let format = match t.get("format") {
        None => Some(LogFormat::Combined),
        Some((k, v)) => match r.string(v, &k).as_deref() {
            Some("combined") => Some(LogFormat::Combined),
            Some("json") => Some(LogFormat::Json),
            Some(other) => {
                r.error(
                    v.span(),
                    &k,
                    format!("{other:?}: expected \"combined\" or \"json\""),
                );
                None
            }
            None => None,
        },
    };
    if path.is_none() && t.get("path").is_none() {
        r.error(v.span(), &format!("{key}.path"), "required");
    }
    Some(AccessLogConfig {
        path: log_path(base, &path?),
        format: format?,
    })
}
