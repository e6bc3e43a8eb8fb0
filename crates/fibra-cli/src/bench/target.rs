//! The target URL of `fibra bench`: `http[s]://host[:port][/path][?query]`, parsed with
//! [`http::Uri`].
//!
//! `https` is spoken with rustls (see [`super::tls`]). The host may be a name, an IPv4 address or a
//! bracketed IPv6 address; the `Host` header repeats the authority as written. User
//! information and port 0 are refused; a fragment is dropped.

use std::fmt;

use http::uri::{Scheme, Uri};

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host name or address, without brackets for IPv6.
    pub host: String,
    /// TCP port (80, or 443 for https, when the URL names none).
    pub port: u16,
    /// `https`: TLS over the connection.
    pub tls: bool,
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

fn bad(url: &str, why: impl fmt::Display) -> UrlError {
    UrlError(format!("invalid URL {url:?}: {why}"))
}

impl Target {
    /// Parses `http[s]://host[:port][/path][?query]`; a fragment is dropped.
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        let uri: Uri = url.parse().map_err(|e| match url.contains("://") {
            true => bad(url, e),
            false => bad(url, "expected http://host[:port]/path"),
        })?;
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => false,
            Some(s) if *s == Scheme::HTTPS => true,
            Some(s) => {
                return Err(bad(
                    url,
                    format_args!(
                        "unsupported scheme {:?}, use http:// or https://",
                        s.as_str()
                    ),
                ))
            }
            None => return Err(bad(url, "expected http://host[:port]/path")),
        };
        let Some(authority) = uri.authority() else {
            return Err(bad(url, "missing host"));
        };
        if authority.as_str().contains('@') {
            return Err(bad(url, "user information is not supported"));
        }
        // `Authority::port` is `None` for a port that is not a valid u16 (and `host` stops at
        // `]`), so the text after the host is checked here: nothing, or `:` and the port.
        let (bracketed, after) = authority.as_str().split_at(authority.host().len());
        let host = bracketed
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(bracketed);
        if host.is_empty() {
            return Err(bad(url, "missing host"));
        }
        let port = match after.strip_prefix(':') {
            None if after.is_empty() && tls => 443,
            None if after.is_empty() => 80,
            None => return Err(bad(url, "junk after the host")),
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => return Err(bad(url, "port must be a number from 1 to 65535")),
            },
        };
        let path = match uri.query() {
            Some(q) => format!("{}?{q}", uri.path()),
            None => uri.path().to_string(),
        };
        Ok(Target {
            host: host.to_string(),
            port,
            tls,
            path,
            authority: authority.as_str().to_string(),
        })
    }

    /// The URL's scheme: `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
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
        let t = Target::parse("http://h/p?a=1&b=2#frag").unwrap();
        assert_eq!(t.path, "/p?a=1&b=2");
    }

    #[test]
    fn https() {
        let t = Target::parse("https://localhost/x").unwrap();
        assert_eq!((t.port, t.tls, t.scheme()), (443, true, "https"));
        let t = Target::parse("https://127.0.0.1:8443/").unwrap();
        assert_eq!((t.port, t.tls), (8443, true));
        assert!(!Target::parse("http://h/").unwrap().tls);
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
        for (url, why) in [
            ("127.0.0.1:8080/", "expected http://"),
            ("localhost:80", "expected http://"),
            ("ftp://x/", "unsupported scheme \"ftp\""),
            ("http:///path", ""),
            ("http://:80/", ""),
            ("http://h:0/", "port must be"),
            ("http://h:99999/", "port must be"),
            ("http://h:port/", "port must be"),
            ("http://h:/", "port must be"),
            ("http://h:+80/", "port must be"),
            ("http://u@h/", "user information"),
            ("http://h/a b", ""),
            ("http://[::1]x/", ""),
            ("http://[::1]:x/", ""),
            ("/just/a/path", "expected http://"),
            ("", ""),
        ] {
            let err = Target::parse(url).unwrap_err().to_string();
            assert!(err.contains("invalid URL"), "{url}: {err}");
            assert!(err.contains(why), "{url}: {err} lacks {why:?}");
        }
    }
}
