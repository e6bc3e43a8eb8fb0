//! The keys of a `[[site.route]]` table and of its actions and rules (files, proxy,
//! redirect, respond, headers, basic auth, rate limit, error pages), read into a
//! [`RouteConfig`] with every error recorded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::DeValue;

use super::model::*;
use super::reader::{Reader, Table, Val};
use super::values::{item_span, nets, path_in, positive, set, url_path};

pub(super) const ROUTE: &[&str] = &[
    "path",
    "files",
    "proxy",
    "redirect",
    "respond",
    "headers",
    "basic_auth",
    "allow",
    "deny",
    "rate_limit",
    "max_body",
    "error_pages",
];
const ACTIONS: &[&str] = &["files", "proxy", "redirect", "respond"];
const FILES: &[&str] = &[
    "root",
    "index",
    "listing",
    "try_files",
    "cache_control",
    "compress",
    "allow_hidden",
    "follow_symlinks",
    "strip_prefix",
];
const PROXY: &[&str] = &[
    "upstreams",
    "policy",
    "health",
    "max_fails",
    "fail_timeout",
    "connect_timeout",
    "timeout",
    "keepalive",
    "ca",
    "headers_up",
];
const POLICIES: &[&str] = &["round_robin", "least_conn", "ip_hash", "first"];
const HEALTH: &[&str] = &["path", "interval", "timeout"];
const HEADERS: &[&str] = &["set", "add", "remove"];
const BASIC_AUTH: &[&str] = &["realm", "users", "htpasswd"];
const RATE_LIMIT: &[&str] = &["rate", "burst"];
const REDIRECT: &[&str] = &["to", "code"];
const RESPOND: &[&str] = &["status", "body", "type"];

/// One `[[site.route]]` table.
pub(super) fn route(
    r: &mut Reader<'_>,
    t: &Table<'_, '_>,
    base: &Path,
    v: &Val<'_>,
) -> Option<RouteConfig> {
    let at = r.pos(v.span().start);
    let path = match t.get("path") {
        None => {
            r.error(
                v.span(),
                &format!("{}.path", t.key),
                "required (\"/prefix/\" or \"=/exact\")",
            );
            None
        }
        Some((k, pv)) => {
            let p = r.string(pv, &k)?;
            match p.strip_prefix('=') {
                Some(exact) if exact.starts_with('/') => Some(PathMatch::Exact(exact.to_owned())),
                None if p.starts_with('/') => Some(PathMatch::Prefix(p)),
                _ => {
                    r.error(
                        pv.span(),
                        &k,
                        format!("{p:?}: a route path starts with / (or =/ for an exact match)"),
                    );
                    None
                }
            }
        }
    };
    let mut route = RouteConfig {
        path: PathMatch::Prefix("/".into()),
        action: None,
        headers: HeaderRules::default(),
        basic_auth: None,
        allow: Vec::new(),
        deny: Vec::new(),
        rate_limit: None,
        max_body: None,
        error_pages: Vec::new(),
        at,
        key: t.key.clone(),
    };
    let actions: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|a| t.get(a).is_some())
        .collect();
    if actions.len() > 1 {
        let (k, av) = t.get(actions[1]).expect("present");
        r.error(
            av.span(),
            &k,
            format!(
                "a route has one action, this one has {}",
                actions.join(" and ")
            ),
        );
    }
    for (name, key, v) in t.iter() {
        match name {
            "files" => route.action = files(r, v, &key, base).map(Action::Files),
            "proxy" => route.action = proxy(r, v, &key, base).map(Action::Proxy),
            "redirect" => route.action = redirect(r, v, &key),
            "respond" => route.action = respond(r, v, &key),
            "headers" => route.headers = headers(r, v, &key),
            "basic_auth" => route.basic_auth = basic_auth(r, v, &key, base),
            "allow" => route.allow = nets(r, v, &key),
            "deny" => route.deny = nets(r, v, &key),
            "rate_limit" => route.rate_limit = rate_limit(r, v, &key),
            "max_body" => route.max_body = r.bytes(v, &key),
            "error_pages" => route.error_pages = error_pages(r, v, &key, base),
            _ => {}
        }
    }
    route.path = path?;
    Some(route)
}

fn files(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Option<FilesConfig> {
    // `files = "/srv/a"`: the root alone.
    if let DeValue::String(root) = v.get_ref() {
        return Some(files_default(path_in(base, root)));
    }
    let t = r.table(v, key, FILES)?;
    let Some((k, rv)) = t.get("root") else {
        r.error(
            v.span(),
            &format!("{key}.root"),
            "required: the directory to serve",
        );
        return None;
    };
    let mut f = files_default(path_in(base, &r.string(rv, &k)?));
    for (name, key, v) in t.iter() {
        match name {
            "index" => set(&mut f.index, r.string(v, &key)),
            "listing" => set(&mut f.listing, r.boolean(v, &key)),
            "try_files" => {
                if let Some(list) = r.strings(v, &key) {
                    for (i, c) in list.iter().enumerate() {
                        if let Some(code) = c.strip_prefix('=') {
                            if !code.parse::<u16>().is_ok_and(|n| (200..=599).contains(&n)) {
                                r.error(
                                    item_span(v, i),
                                    &format!("{key}[{i}]"),
                                    format!("{c:?}: an answer status is =200 to =599"),
                                );
                            }
                            continue;
                        }
                        if !c.starts_with('/') && !c.starts_with("{path}") {
                            r.error(
                                item_span(v, i),
                                &format!("{key}[{i}]"),
                                format!("{c:?}: a candidate is \"{{path}}…\" or starts with / (the last may be \"=404\")"),
                            );
                        }
                    }
                    f.try_files = list;
                }
            }
            "cache_control" => f.cache_control = r.string(v, &key),
            "compress" => set(&mut f.compress, r.boolean(v, &key)),
            "allow_hidden" => set(&mut f.allow_hidden, r.boolean(v, &key)),
            "follow_symlinks" => set(&mut f.follow_symlinks, r.boolean(v, &key)),
            "strip_prefix" => set(&mut f.strip_prefix, r.boolean(v, &key)),
            _ => {}
        }
    }
    Some(f)
}

fn files_default(root: PathBuf) -> FilesConfig {
    FilesConfig {
        root,
        index: "index.html".into(),
        listing: false,
        try_files: Vec::new(),
        cache_control: None,
        compress: true,
        allow_hidden: false,
        follow_symlinks: false,
        strip_prefix: false,
    }
}

/// The defaults of a proxy route's settings.
pub(crate) fn proxy_default(upstreams: Vec<String>) -> ProxyConfig {
    ProxyConfig {
        upstreams,
        policy: "round_robin".into(),
        health: None,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        timeout: Duration::from_secs(60),
        keepalive: 64,
        ca: None,
        headers_up: HeaderRules::default(),
        at: Default::default(),
    }
}

fn proxy(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Option<ProxyConfig> {
    if let DeValue::String(u) = v.get_ref() {
        let mut p = proxy_default(vec![u.to_string()]);
        p.at = r.pos(v.span().start);
        return Some(p);
    }
    let t = r.table(v, key, PROXY)?;
    let mut p = proxy_default(Vec::new());
    p.at = r.pos(v.span().start);
    for (name, key, v) in t.iter() {
        match name {
            "upstreams" => {
                if let Some(list) = r.strings(v, &key) {
                    for (i, u) in list.iter().enumerate() {
                        let lower = u.to_ascii_lowercase();
                        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                            r.error(
                                item_span(v, i),
                                &format!("{key}[{i}]"),
                                format!("{u:?}: expected http[s]://HOST:PORT[/PATH]"),
                            );
                        }
                    }
                    if list.is_empty() {
                        r.error(v.span(), &key, "at least one upstream is needed");
                    }
                    p.upstreams = list;
                }
            }
            "policy" => {
                if let Some(s) = r.string(v, &key) {
                    if POLICIES.contains(&s.as_str()) {
                        p.policy = s;
                    } else {
                        let hint = super::reader::nearest(&s, POLICIES)
                            .map(|n| format!(" (did you mean {n:?}?)"))
                            .unwrap_or_default();
                        r.error(
                            v.span(),
                            &key,
                            format!("{s:?}: expected one of {}{hint}", POLICIES.join(", ")),
                        );
                    }
                }
            }
            "health" => {
                if let Some(t) = r.table(v, &key, HEALTH) {
                    let path = match t.get("path") {
                        Some((k, pv)) => url_path(r, pv, &k).filter(|p| {
                            let ok = p.bytes().all(|b| b.is_ascii_graphic());
                            if !ok {
                                r.error(
                                    pv.span(),
                                    &k,
                                    format!(
                                        "{p:?}: a health path has no spaces or control characters"
                                    ),
                                );
                            }
                            ok
                        }),
                        None => {
                            r.error(v.span(), &format!("{key}.path"), "required");
                            None
                        }
                    };
                    let interval = match t.get("interval") {
                        Some((k, iv)) => positive(r, iv, &k),
                        None => Some(Duration::from_secs(5)),
                    };
                    let timeout = match t.get("timeout") {
                        Some((k, tv)) => positive(r, tv, &k),
                        None => Some(Duration::from_secs(2)),
                    };
                    if let (Some(path), Some(interval), Some(timeout)) = (path, interval, timeout) {
                        p.health = Some(HealthConfig {
                            path,
                            interval,
                            timeout,
                        });
                    }
                }
            }
            "max_fails" => set(
                &mut p.max_fails,
                r.integer(v, &key, 0, 1000).map(|n| n as u32),
            ),
            "fail_timeout" => set(&mut p.fail_timeout, positive(r, v, &key)),
            "connect_timeout" => set(&mut p.connect_timeout, positive(r, v, &key)),
            "timeout" => set(&mut p.timeout, positive(r, v, &key)),
            "keepalive" => set(
                &mut p.keepalive,
                r.integer(v, &key, 0, 100_000).map(|n| n as usize),
            ),
            "ca" => p.ca = r.string(v, &key).map(|c| path_in(base, &c)),
            "headers_up" => p.headers_up = headers(r, v, &key),
            _ => {}
        }
    }
    if t.get("upstreams").is_none() {
        r.error(
            v.span(),
            &format!("{key}.upstreams"),
            "required: the upstream URLs",
        );
        return None;
    }
    Some(p)
}

fn redirect(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> Option<Action> {
    let t = r.table(v, key, REDIRECT)?;
    let to = match t.get("to") {
        Some((k, tv)) => r.string(tv, &k),
        None => {
            r.error(
                v.span(),
                &format!("{key}.to"),
                "required: where to redirect",
            );
            None
        }
    };
    let code = match t.get("code") {
        Some((k, cv)) => {
            let c = r.integer(cv, &k, 300, 399)? as u16;
            if ![301, 302, 303, 307, 308].contains(&c) {
                r.error(
                    cv.span(),
                    &k,
                    format!("{c}: expected 301, 302, 303, 307 or 308"),
                );
                return None;
            }
            c
        }
        None => 302,
    };
    Some(Action::Redirect { to: to?, code })
}

fn respond(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> Option<Action> {
    let t = r.table(v, key, RESPOND)?;
    let mut status = 200u16;
    let mut body = String::new();
    let mut content_type = "text/plain; charset=utf-8".to_owned();
    for (name, key, v) in t.iter() {
        match name {
            "status" => set(&mut status, r.integer(v, &key, 200, 599).map(|n| n as u16)),
            "body" => set(&mut body, r.string(v, &key)),
            "type" => set(&mut content_type, r.string(v, &key)),
            _ => {}
        }
    }
    Some(Action::Respond {
        status,
        body,
        content_type,
    })
}

fn headers(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> HeaderRules {
    let mut h = HeaderRules::default();
    let Some(t) = r.table(v, key, HEADERS) else {
        return h;
    };
    for (name, key, v) in t.iter() {
        match name {
            "set" | "add" => {
                let DeValue::Table(ft) = v.get_ref() else {
                    r.error(
                        v.span(),
                        &key,
                        "expected a table of \"Field-Name\" = \"value\"",
                    );
                    continue;
                };
                for (fk, fv) in ft.iter() {
                    let fname: &str = fk.get_ref();
                    let fkey = format!("{key}.{fname}");
                    let Some(value) = r.string(fv, &fkey) else {
                        continue;
                    };
                    if http::HeaderName::from_bytes(fname.as_bytes()).is_err() {
                        r.error(
                            fk.span(),
                            &fkey,
                            format!("{fname:?}: not a header field name"),
                        );
                        continue;
                    }
                    if http::HeaderValue::from_str(&value).is_err() {
                        r.error(
                            fv.span(),
                            &fkey,
                            "not a header field value (control characters?)",
                        );
                        continue;
                    }
                    let pair = (fname.to_owned(), value);
                    match name {
                        "set" => h.set.push(pair),
                        _ => h.add.push(pair),
                    }
                }
            }
            "remove" => {
                if let Some(list) = r.strings(v, &key) {
                    for (i, n) in list.into_iter().enumerate() {
                        if http::HeaderName::from_bytes(n.as_bytes()).is_err() {
                            r.error(
                                item_span(v, i),
                                &format!("{key}[{i}]"),
                                format!("{n:?}: not a header field name"),
                            );
                        } else {
                            h.remove.push(n);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    h
}

fn basic_auth(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Option<BasicAuthConfig> {
    let t = r.table(v, key, BASIC_AUTH)?;
    let mut b = BasicAuthConfig {
        realm: "restricted".into(),
        users: Vec::new(),
        htpasswd: None,
        at: r.pos(v.span().start),
    };
    for (name, key, v) in t.iter() {
        match name {
            "realm" => set(&mut b.realm, r.string(v, &key)),
            "htpasswd" => b.htpasswd = r.string(v, &key).map(|p| path_in(base, &p)),
            "users" => {
                let DeValue::Table(ut) = v.get_ref() else {
                    r.error(v.span(), &key, "expected a table of user = \"hash\"");
                    continue;
                };
                for (uk, uv) in ut.iter() {
                    let user: &str = uk.get_ref();
                    if let Some(hash) = r.string(uv, &format!("{key}.{user}")) {
                        b.users.push((user.to_owned(), hash));
                    }
                }
            }
            _ => {}
        }
    }
    if b.users.is_empty() && b.htpasswd.is_none() {
        r.error(v.span(), key, "needs users or an htpasswd file");
        return None;
    }
    if !b.users.is_empty() && b.htpasswd.is_some() {
        r.error(v.span(), key, "give users or an htpasswd file, not both");
        return None;
    }
    Some(b)
}

fn rate_limit(r: &mut Reader<'_>, v: &Val<'_>, key: &str) -> Option<RateLimitConfig> {
    let t = r.table(v, key, RATE_LIMIT)?;
    let (rate, rate_text) = match t.get("rate") {
        Some((k, rv)) => {
            let s = r.string(rv, &k)?;
            match crate::access::parse_rate(&s) {
                Ok(n) => (n, s),
                Err(e) => {
                    r.error(rv.span(), &k, e);
                    return None;
                }
            }
        }
        None => {
            r.error(
                v.span(),
                &format!("{key}.rate"),
                "required (\"5/s\", \"100/m\")",
            );
            return None;
        }
    };
    let burst = match t.get("burst") {
        Some((k, bv)) => r.integer(bv, &k, 1, 1_000_000)? as u32,
        None => (rate.ceil() as u32).max(1),
    };
    Some(RateLimitConfig {
        rate,
        rate_text,
        burst,
    })
}

fn error_pages(r: &mut Reader<'_>, v: &Val<'_>, key: &str, base: &Path) -> Vec<(u16, PathBuf)> {
    let DeValue::Table(t) = v.get_ref() else {
        r.error(v.span(), key, "expected a table of status = \"file\"");
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, fv) in t.iter() {
        let code: &str = k.get_ref();
        let ekey = format!("{key}.{code}");
        match code.parse::<u16>() {
            Ok(c) if (400..=599).contains(&c) => {
                if let Some(p) = r.string(fv, &ekey) {
                    out.push((c, path_in(base, &p)));
                }
            }
            _ => r.error(
                k.span(),
                &ekey,
                format!("{code:?}: expected a status from 400 to 599"),
            ),
        }
    }
    out
}
