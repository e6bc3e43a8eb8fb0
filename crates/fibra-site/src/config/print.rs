//! The site file equivalent to a [`Config`] (`fibra serve --print-config`): every value
//! written out, defaults included, so the output documents what the server runs with and reads
//! back to the same configuration.

use toml::{Table, Value};

use super::model::*;
use super::reader::format_duration;

fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

fn strings<I: IntoIterator<Item = String>>(v: I) -> Value {
    Value::Array(v.into_iter().map(Value::String).collect())
}

fn dur(d: std::time::Duration) -> Value {
    s(format_duration(d))
}

fn path(p: &std::path::Path) -> Value {
    s(p.display().to_string())
}

/// The site file for `config`, with a first comment line.
pub fn print(config: &Config) -> String {
    let mut top = Table::new();
    top.insert("server".into(), Value::Table(server(&config.server)));
    if let Some(a) = &config.acme {
        let mut t = Table::new();
        t.insert("directory".into(), s(&a.directory));
        t.insert("contact".into(), strings(a.contact.clone()));
        t.insert("storage".into(), path(&a.storage));
        if let Some(ca) = &a.ca {
            t.insert("ca".into(), path(ca));
        }
        t.insert("challenges".into(), strings(a.challenges.clone()));
        if let Some(p) = &a.profile {
            t.insert("profile".into(), s(p));
        }
        top.insert("acme".into(), Value::Table(t));
    }
    let sites = config.sites.iter().map(|x| Value::Table(site(x))).collect();
    top.insert("site".into(), Value::Array(sites));
    format!(
        "# fibra site file (docs/CONFIG.md): `fibra serve --config FILE`\n\n{}",
        toml::to_string(&top).unwrap_or_default()
    )
}

fn server(c: &ServerConfig) -> Table {
    let mut t = Table::new();
    if let Some(w) = c.workers {
        t.insert("workers".into(), Value::Integer(w as i64));
    }
    t.insert("header_timeout".into(), dur(c.header_timeout));
    t.insert("idle_timeout".into(), dur(c.idle_timeout));
    t.insert("shutdown_timeout".into(), dur(c.shutdown_timeout));
    t.insert("drain_delay".into(), dur(c.drain_delay));
    t.insert("error_log".into(), s(&c.error_log));
    if let Some(p) = &c.pid_file {
        t.insert("pid_file".into(), path(p));
    }
    if let Some(h) = &c.health {
        t.insert("health".into(), s(h));
    }
    if let Some(m) = &c.metrics {
        t.insert("metrics".into(), s(m));
    }
    t.insert("proxy_protocol".into(), Value::Boolean(c.proxy_protocol));
    if !c.proxy_protocol_from.is_empty() {
        t.insert(
            "proxy_protocol_from".into(),
            strings(c.proxy_protocol_from.iter().map(|n| n.to_string())),
        );
    }
    t.insert("reuse_port".into(), Value::Boolean(c.reuse_port));
    if c.http3_0rtt {
        t.insert("http3_0rtt".into(), Value::Boolean(true));
    }
    let mut cache = Table::new();
    cache.insert("entries".into(), Value::Integer(c.cache.entries as i64));
    cache.insert("ttl".into(), dur(c.cache.ttl));
    t.insert("cache".into(), Value::Table(cache));
    let mut comp = Table::new();
    comp.insert("enabled".into(), Value::Boolean(c.compression.enabled));
    comp.insert(
        "gzip_level".into(),
        Value::Integer(i64::from(c.compression.gzip_level)),
    );
    t.insert("compression".into(), Value::Table(comp));
    t
}

fn listen(l: &[Listen]) -> Value {
    strings(l.iter().map(|l| l.to_string()))
}

fn site(c: &SiteConfig) -> Table {
    let mut t = Table::new();
    t.insert("hosts".into(), strings(c.hosts.clone()));
    t.insert("listen".into(), listen(&c.listen));
    t.insert("default".into(), Value::Boolean(c.default));
    match &c.tls {
        None => {}
        Some(Tls::Acme) => {
            t.insert("tls".into(), s("acme"));
        }
        Some(Tls::Files(pairs)) => {
            let list = pairs
                .iter()
                .map(|p| {
                    let mut pt = Table::new();
                    pt.insert("cert".into(), path(&p.cert));
                    pt.insert("key".into(), path(&p.key));
                    Value::Table(pt)
                })
                .collect();
            t.insert("tls".into(), Value::Array(list));
        }
    }
    if !c.redirect_http.is_empty() {
        t.insert("redirect_http".into(), listen(&c.redirect_http));
    }
    t.insert("http2".into(), Value::Boolean(c.http2));
    if c.http3 {
        t.insert("http3".into(), Value::Boolean(true));
    }
    if let Some(log) = &c.access_log {
        let mut lt = Table::new();
        lt.insert("path".into(), s(&log.path));
        let format = match log.format {
            LogFormat::Combined => "combined",
            LogFormat::Json => "json",
        };
        lt.insert("format".into(), s(format));
        t.insert("access_log".into(), Value::Table(lt));
    }
    let routes = c.routes.iter().map(|r| Value::Table(route(r))).collect();
    t.insert("route".into(), Value::Array(routes));
    t
}

fn header_rules(h: &HeaderRules) -> Table {
    let mut t = Table::new();
    let pairs = |v: &[(String, String)]| {
        let mut pt = Table::new();
        for (k, val) in v {
            pt.insert(k.clone(), s(val));
        }
        Value::Table(pt)
    };
    if !h.set.is_empty() {
        t.insert("set".into(), pairs(&h.set));
    }
    if !h.add.is_empty() {
        t.insert("add".into(), pairs(&h.add));
    }
    if !h.remove.is_empty() {
        t.insert("remove".into(), strings(h.remove.clone()));
    }
    t
}

fn route(r: &RouteConfig) -> Table {
    let mut t = Table::new();
    t.insert("path".into(), s(r.path.to_string()));
    match &r.action {
        None => {}
        Some(Action::Files(f)) => {
            let mut ft = Table::new();
            ft.insert("root".into(), path(&f.root));
            ft.insert("index".into(), s(&f.index));
            ft.insert("listing".into(), Value::Boolean(f.listing));
            if !f.try_files.is_empty() {
                ft.insert("try_files".into(), strings(f.try_files.clone()));
            }
            if let Some(cc) = &f.cache_control {
                ft.insert("cache_control".into(), s(cc));
            }
            ft.insert("compress".into(), Value::Boolean(f.compress));
            ft.insert("allow_hidden".into(), Value::Boolean(f.allow_hidden));
            ft.insert("follow_symlinks".into(), Value::Boolean(f.follow_symlinks));
            ft.insert("strip_prefix".into(), Value::Boolean(f.strip_prefix));
            t.insert("files".into(), Value::Table(ft));
        }
        Some(Action::Proxy(p)) => {
            let mut pt = Table::new();
            pt.insert("upstreams".into(), strings(p.upstreams.clone()));
            pt.insert("policy".into(), s(&p.policy));
            if let Some(h) = &p.health {
                let mut ht = Table::new();
                ht.insert("path".into(), s(&h.path));
                ht.insert("interval".into(), dur(h.interval));
                ht.insert("timeout".into(), dur(h.timeout));
                pt.insert("health".into(), Value::Table(ht));
            }
            pt.insert("max_fails".into(), Value::Integer(i64::from(p.max_fails)));
            pt.insert("fail_timeout".into(), dur(p.fail_timeout));
            pt.insert("connect_timeout".into(), dur(p.connect_timeout));
            pt.insert("timeout".into(), dur(p.timeout));
            pt.insert("keepalive".into(), Value::Integer(p.keepalive as i64));
            if let Some(ca) = &p.ca {
                pt.insert("ca".into(), path(ca));
            }
            if !p.headers_up.is_empty() {
                pt.insert(
                    "headers_up".into(),
                    Value::Table(header_rules(&p.headers_up)),
                );
            }
            t.insert("proxy".into(), Value::Table(pt));
        }
        Some(Action::Redirect { to, code }) => {
            let mut rt = Table::new();
            rt.insert("to".into(), s(to));
            rt.insert("code".into(), Value::Integer(i64::from(*code)));
            t.insert("redirect".into(), Value::Table(rt));
        }
        Some(Action::Respond {
            status,
            body,
            content_type,
        }) => {
            let mut rt = Table::new();
            rt.insert("status".into(), Value::Integer(i64::from(*status)));
            rt.insert("body".into(), s(body));
            rt.insert("type".into(), s(content_type));
            t.insert("respond".into(), Value::Table(rt));
        }
    }
    if !r.headers.is_empty() {
        t.insert("headers".into(), Value::Table(header_rules(&r.headers)));
    }
    if let Some(b) = &r.basic_auth {
        let mut bt = Table::new();
        bt.insert("realm".into(), s(&b.realm));
        if !b.users.is_empty() {
            let mut ut = Table::new();
            for (u, h) in &b.users {
                ut.insert(u.clone(), s(h));
            }
            bt.insert("users".into(), Value::Table(ut));
        }
        if let Some(h) = &b.htpasswd {
            bt.insert("htpasswd".into(), path(h));
        }
        t.insert("basic_auth".into(), Value::Table(bt));
    }
    if !r.allow.is_empty() {
        t.insert(
            "allow".into(),
            strings(r.allow.iter().map(|n| n.to_string())),
        );
    }
    if !r.deny.is_empty() {
        t.insert("deny".into(), strings(r.deny.iter().map(|n| n.to_string())));
    }
    if let Some(rl) = &r.rate_limit {
        let mut rt = Table::new();
        rt.insert("rate".into(), s(&rl.rate_text));
        rt.insert("burst".into(), Value::Integer(i64::from(rl.burst)));
        t.insert("rate_limit".into(), Value::Table(rt));
    }
    if let Some(m) = r.max_body {
        t.insert(
            "max_body".into(),
            Value::Integer(m.min(i64::MAX as u64) as i64),
        );
    }
    if !r.error_pages.is_empty() {
        let mut et = Table::new();
        for (code, p) in &r.error_pages {
            et.insert(code.to_string(), path(p));
        }
        t.insert("error_pages".into(), Value::Table(et));
    }
    t
}
