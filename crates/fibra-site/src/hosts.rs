//! Which site of a listening address answers a host name: exact names first, then
//! `*.example.com` wildcards (one label in front, as certificates match), then the address's
//! default site.

use fibra_http::word_hash::WordMap;

/// The sites of one listening address by name.
#[derive(Debug, Default)]
pub struct HostTable {
    exact: WordMap<Box<str>, usize>,
    /// `*.example.com` as `example.com`.
    wildcard: WordMap<Box<str>, usize>,
    default: Option<usize>,
}

impl HostTable {
    /// Adds site `site`'s names (lower case; `*.` for wildcards).
    pub fn add(&mut self, site: usize, hosts: &[String], default: bool) {
        for h in hosts {
            match h.strip_prefix("*.") {
                Some(suffix) => self.wildcard.insert(suffix.into(), site),
                None => self.exact.insert(h.as_str().into(), site),
            };
        }
        if default {
            self.default = Some(site);
        }
    }

    /// The default site, if any.
    pub fn default_site(&self) -> Option<usize> {
        self.default
    }

    /// The site for `host` as a client wrote it (`Host` or SNI: any case, maybe a port, a
    /// trailing dot), else the default.
    pub fn lookup(&self, host: Option<&str>) -> Option<usize> {
        match host {
            Some(h) => self.find(h).or(self.default),
            None => self.default,
        }
    }

    /// The site named `host` exactly or by a wildcard (no default).
    pub fn find(&self, host: &str) -> Option<usize> {
        let name = strip_port(host);
        let name = name.strip_suffix('.').unwrap_or(name);
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.find_lower(&name.to_ascii_lowercase());
        }
        self.find_lower(name)
    }

    fn find_lower(&self, name: &str) -> Option<usize> {
        if let Some(&s) = self.exact.get(name) {
            return Some(s);
        }
        if self.wildcard.is_empty() {
            return None;
        }
        let (_, parent) = name.split_once('.')?;
        self.wildcard.get(parent).copied()
    }
}

/// `host` without its `:port` (`[::1]:8080` → `[::1]`).
pub fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_wildcard_then_default() {
        let mut t = HostTable::default();
        t.add(0, &["a.test".into(), "*.a.test".into()], false);
        t.add(1, &["www.a.test".into()], false);
        t.add(2, &[], true);
        assert_eq!(t.lookup(Some("a.test")), Some(0));
        assert_eq!(t.lookup(Some("A.Test:8080")), Some(0));
        assert_eq!(t.lookup(Some("a.test.")), Some(0));
        assert_eq!(t.lookup(Some("www.a.test")), Some(1), "an exact name wins");
        assert_eq!(t.lookup(Some("img.a.test")), Some(0));
        assert_eq!(t.lookup(Some("x.img.a.test")), Some(2), "one label only");
        assert_eq!(t.lookup(Some("b.test")), Some(2));
        assert_eq!(t.lookup(None), Some(2));
        assert_eq!(t.find("b.test"), None);
    }

    #[test]
    fn ports_are_stripped() {
        assert_eq!(strip_port("a.test:80"), "a.test");
        assert_eq!(strip_port("[::1]:8080"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("a.test"), "a.test");
    }
}
