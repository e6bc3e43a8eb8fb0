//! Which site of a listening address answers a host name: exact names first, then
//! `*.example.com` wildcards (one label in front, as certificates match), then the address's
//! default site.

use crate::name_table::NameTable;

/// The sites of one listening address by name.
#[derive(Debug, Default)]
pub struct HostTable {
    exact: NameTable,
    /// `*.example.com` as `example.com`.
    wildcard: NameTable,
    default: Option<usize>,
}

impl HostTable {
    /// Adds site `site`'s names (lower case; `*.` for wildcards).
    pub fn add(&mut self, site: usize, hosts: &[String], default: bool) {
        for h in hosts {
            match h.strip_prefix("*.") {
                Some(suffix) => self.wildcard.insert(suffix.as_bytes(), site),
                None => self.exact.insert(h.as_bytes(), site),
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
    #[inline(always)]
    pub fn lookup(&self, host: Option<&[u8]>) -> Option<usize> {
        match host {
            Some(h) => self.find(h).or(self.default),
            None => self.default,
        }
    }

    /// The site named `host` exactly or by a wildcard (no default). Bytes that are not ASCII
    /// name no site (the names are checked when the file is read).
    #[inline(always)]
    pub fn find(&self, host: &[u8]) -> Option<usize> {
        let name = strip_port(host);
        let name = name.strip_suffix(b".").unwrap_or(name);
        if let Some(s) = self.exact.get(name, true) {
            return Some(s);
        }
        if self.wildcard.is_empty() {
            return None;
        }
        let dot = name.iter().position(|&b| b == b'.')?;
        self.wildcard.get(&name[dot + 1..], true)
    }
}

/// `host` without its `:port` (`[::1]:8080` → `[::1]`). Looks only at the digits at the end
/// (a port has at most five): no search through the name.
#[inline]
pub fn strip_port(host: &[u8]) -> &[u8] {
    if host.first() == Some(&b'[') {
        return match host.iter().position(|&b| b == b']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    let mut i = host.len();
    while i > 0 && host.len() - i < 5 && host[i - 1].is_ascii_digit() {
        i -= 1;
    }
    match i > 0 && i < host.len() && host[i - 1] == b':' {
        true => &host[..i - 1],
        false => host,
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
        assert_eq!(t.lookup(Some(&b"a.test"[..])), Some(0));
        assert_eq!(t.lookup(Some(&b"A.Test:8080"[..])), Some(0));
        assert_eq!(t.lookup(Some(&b"a.test."[..])), Some(0));
        assert_eq!(
            t.lookup(Some(&b"www.a.test"[..])),
            Some(1),
            "an exact name wins"
        );
        assert_eq!(t.lookup(Some(&b"img.a.test"[..])), Some(0));
        assert_eq!(
            t.lookup(Some(&b"x.img.a.test"[..])),
            Some(2),
            "one label only"
        );
        assert_eq!(t.lookup(Some(&b"b.test"[..])), Some(2));
        assert_eq!(t.lookup(None), Some(2));
        assert_eq!(t.find(b"b.test"), None);
    }

    #[test]
    fn ports_are_stripped() {
        assert_eq!(strip_port(b"a.test:80"), b"a.test");
        assert_eq!(strip_port(b"[::1]:8080"), b"[::1]");
        assert_eq!(strip_port(b"[::1]"), b"[::1]");
        assert_eq!(strip_port(b"a.test"), b"a.test");
        assert_eq!(strip_port(b"a.test:"), b"a.test:");
        assert_eq!(strip_port(b"a.test:65535"), b"a.test");
        assert_eq!(strip_port(b"10.0.0.1:80"), b"10.0.0.1");
        assert_eq!(strip_port(b"a.test:123456"), b"a.test:123456");
    }
}
