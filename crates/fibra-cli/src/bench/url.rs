//! The target URL of `fibra bench`: `http://host[:port][/path][?query]`.
//!
//! Only plain `http` is spoken. The host may be a name, an IPv4 address or a
//! bracketed IPv6 address; the `Host` header repeats the authority as written.

use std::fmt;

/// A parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host name or address, without brackets for IPv6.
    pub host: String,
    /// TCP port (80 when the URL names none).
    pub port: u16,
    /// Request target: path plus query, always starting with `/`.
    pub path: String,
    /// Value of the `Host` header: the authority as written in the URL.
    pub authority: String,
}

/// Why a URL was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError(String);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(url: &str, why: &str) -> UrlError {
    UrlError(format!("invalid URL {url:?}: {why}"))
}

impl Target {
    /// Parses `http://host[:port][/path][?query]`; a fragment is dropped.
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err(bad(url, "https is not supported, use http://"))
            }
            Some((scheme, _)) => {
                return Err(bad(
                    url,
                    &format!("unsupported scheme {scheme:?}, use http://"),
                ))
            }
            None => return Err(bad(url, "expected http://host[:port]/path")),
        };
        if rest.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad(url, "contains whitespace or control characters"));
        }
        let rest = rest.split('#').next().unwrap_or("");
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.contains('@') {
            return Err(bad(url, "user information is not supported"));
        }
        let (host, port) = split_host_port(authority).map_err(|why| bad(url, why))?;
        let path = match path.as_bytes().first() {
            None => "/".to_string(),
            Some(b'?') => format!("/{path}"),
            Some(_) => path.to_string(),
        };
        Ok(Target {
            host: host.to_string(),
            port,
            path,
            authority: authority.to_string(),
        })
    }

    /// `host:port` in a form `ToSocketAddrs` accepts (IPv6 re-bracketed).
    pub fn socket_addr_string(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

fn split_host_port(authority: &str) -> Result<(&str, u16), &'static str> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or("unclosed '[' in host")?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or("junk after ']'")?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => return Err("IPv6 addresses need [brackets]"),
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("missing host");
    }
    let port = match port {
        None => 80,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err("port must be a number from 1 to 65535"),
            Ok(n) => n,
        },
    };
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.port, 8080);
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.socket_addr_string(), "127.0.0.1:8080");
    }

    #[test]
    fn defaults_port_and_path() {
        let t = Target::parse("HTTP://localhost").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("localhost", 80, "/")
        );
        let t = Target::parse("http://h?q").unwrap();
        assert_eq!(t.path, "/?q");
        let t = Target::parse("http://h/p#frag").unwrap();
        assert_eq!(t.path, "/p");
    }

    #[test]
    fn ipv6() {
        let t = Target::parse("http://[::1]:9000/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9000));
        assert_eq!(t.socket_addr_string(), "[::1]:9000");
        assert_eq!(t.authority, "[::1]:9000");
        assert!(Target::parse("http://[::1]/").unwrap().port == 80);
        assert!(Target::parse("http://::1:80/").is_err());
        assert!(Target::parse("http://[::1/").is_err());
    }

    #[test]
    fn rejects_bad_urls() {
        for url in [
            "127.0.0.1:8080/",
            "https://example.com/",
            "ftp://x/",
            "http:///path",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://h:port/",
            "http://u@h/",
            "http://h/a b",
            "http://[::1]x/",
        ] {
            let err = Target::parse(url).unwrap_err();
            assert!(err.to_string().contains("invalid URL"), "{url}: {err}");
        }
    }
}
