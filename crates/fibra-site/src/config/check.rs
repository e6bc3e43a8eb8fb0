//! Checks across sites that need no file or socket: names unique per address, one default per
//! address, TLS agreed per address, ACME names, routes given once.

use std::collections::HashMap;

use super::model::{Config, Listen, Tls};
use super::reader::{ConfigError, Pos};

fn error(at: &Pos, key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        at: at.clone(),
        key: key.into(),
        message: message.into(),
    }
}

/// The errors of `config` as a whole.
pub(crate) fn check(config: &Config) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    // Per listening address: who has which name, who is the default, TLS or not.
    let mut names: HashMap<(&Listen, &str), usize> = HashMap::new();
    let mut defaults: HashMap<&Listen, usize> = HashMap::new();
    let mut tls: HashMap<&Listen, (usize, bool)> = HashMap::new();
    for (i, site) in config.sites.iter().enumerate() {
        // A `redirect_http` address holds the site's names (and default) too, as plain HTTP.
        let entries = site
            .listen
            .iter()
            .map(|l| (l, site.tls.is_some()))
            .chain(site.redirect_http.iter().map(|l| (l, false)));
        for (l, is_tls) in entries {
            for h in &site.hosts {
                if let Some(&other) = names.get(&(l, h.as_str())) {
                    if other != i {
                        errors.push(error(
                            &site.at,
                            format!("{}.hosts", site.key),
                            format!(
                                "host {h:?} on {l} is already {}'s (line {})",
                                config.sites[other].key, config.sites[other].at.line
                            ),
                        ));
                    }
                } else {
                    names.insert((l, h.as_str()), i);
                }
            }
            if site.default {
                match defaults.get(l) {
                    Some(&other) if other != i => errors.push(error(
                        &site.at,
                        format!("{}.default", site.key),
                        format!(
                            "{l} already has a default site: {} (line {})",
                            config.sites[other].key, config.sites[other].at.line
                        ),
                    )),
                    _ => {
                        defaults.insert(l, i);
                    }
                }
            }
            match tls.get(l) {
                Some(&(other, other_tls)) if other_tls != is_tls => errors.push(error(
                    &site.at,
                    format!("{}.tls", site.key),
                    format!(
                        "sites sharing {l} must agree on TLS: {} (line {}) is {}, this one is {}",
                        config.sites[other].key,
                        config.sites[other].at.line,
                        if other_tls { "HTTPS" } else { "plain HTTP" },
                        if is_tls { "HTTPS" } else { "plain HTTP" }
                    ),
                )),
                _ => {
                    tls.insert(l, (i, is_tls));
                }
            }
        }
        if matches!(site.tls, Some(Tls::Acme)) {
            if config.acme.is_none() {
                errors.push(error(
                    &site.tls_at,
                    format!("{}.tls", site.key),
                    "tls = \"acme\" needs an [acme] table (directory, contact, storage)",
                ));
            }
            for h in &site.hosts {
                let name = h.trim_start_matches("*.");
                let ip = name.parse::<std::net::IpAddr>().is_ok();
                if ip || !name.contains('.') {
                    errors.push(error(
                        &site.tls_at,
                        format!("{}.hosts", site.key),
                        format!("{h:?}: an ACME certificate needs a fully qualified domain name (such as \"example.com\")"),
                    ));
                }
                if h.starts_with("*.") {
                    errors.push(error(
                        &site.tls_at,
                        format!("{}.hosts", site.key),
                        format!("{h:?}: a wildcard name needs ACME's dns-01 challenge, which is not offered; use certificate files for it"),
                    ));
                }
            }
            if site.hosts.is_empty() {
                errors.push(error(
                    &site.tls_at,
                    format!("{}.hosts", site.key),
                    "tls = \"acme\" needs the site's host names",
                ));
            }
        }
        let mut paths = HashMap::new();
        for route in &site.routes {
            if let Some(first) = paths.insert(route.path.clone(), route.at.line) {
                errors.push(error(
                    &route.at,
                    format!("{}.path", route.key),
                    format!(
                        "route {} is given twice (first on line {first})",
                        route.path
                    ),
                ));
            }
        }
    }
    errors
}
