//! Routes: which requests go to which upstream, and the target the upstream sees.
//!
//! A route is a path prefix and an upstream URL, `http://HOST:PORT[/PATH]` (or several, one of
//! which the `balance` module picks per request; each rewrites the target by its own URL).
//! The longest matching prefix wins. The target is rewritten as nginx's `proxy_pass` does:
//!
//! * the URL has a path (even just `/`): the matched prefix is replaced by it, so with
//!   `/api/` → `http://127.0.0.1:9000/` the request `/api/users?id=1` goes up as
//!   `/users?id=1`, and with `/api/` → `http://b/v2/` as `/v2/users?id=1`;
//! * the URL has no path (`http://127.0.0.1:9000`): the target goes up unchanged.
//!
//! A prefix ending in `/` also catches the same path without the slash, answered `301` to the
//! slash form (as nginx does for such a location), so `/api` reaches `/api/`.
//!
//! Paths are matched as received, so a request whose path has a dot segment (`.` or `..`,
//! also spelled `%2e`, between `/`, `\`, `%2f` or `%5c`) is refused with `400` rather than
//! forwarded: the upstream would resolve it to a path outside the prefix the route maps.
//! Clients remove dot segments before sending (RFC 3986 §5.2.4), so only crafted requests
//! are refused.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fibra::net::RedialBackoff;

/// An upstream server: where to connect and what to call it.
#[derive(Debug)]
pub(crate) struct Upstream {
    /// Identifies its connections in the per-worker pool (unique in the process).
    pub(crate) id: u64,
    /// The addresses `HOST` resolved to when the route was made, tried in order.
    pub(crate) addrs: Vec<SocketAddr>,
    /// `HOST:PORT` as written in the URL (for `Host` when the client sent none, and for
    /// messages).
    pub(crate) authority: String,
    /// The URL's path, if it had one: it replaces the matched prefix.
    pub(crate) path: Option<String>,
    /// For `https://`: the name its certificate must have (and the SNI).
    pub(crate) tls: Option<rustls::pki_types::ServerName<'static>>,
    /// After failed connects, when to try again (shared by the workers).
    pub(crate) down: RedialBackoff,
}

/// How long an upstream whose connect failed is not dialled again (then one request probes
/// it), by default; doubled after each further failure in a row, up to [`REDIAL_MAX`].
pub(crate) const REDIAL_FIRST: Duration = Duration::from_millis(25);
/// The longest wait between two connects to a down upstream, by default: one that comes
/// back is used again within this time.
pub(crate) const REDIAL_MAX: Duration = Duration::from_millis(500);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new id, unique in the process (for an upstream's pool, or a group's lines in the error
/// log).
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

fn invalid(url: &str, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("upstream {url:?}: {why}"),
    )
}

impl Upstream {
    /// Parses `http[s]://HOST[:PORT][/PATH]` and resolves `HOST` (once, now: a name lookup would
    /// block a worker if done per connection).
    pub(crate) fn parse(url: &str) -> io::Result<Upstream> {
        let (rest, https) = if let Some(rest) = strip_prefix_ignore_case(url, "http://") {
            (rest, false)
        } else if let Some(rest) = strip_prefix_ignore_case(url, "https://") {
            (rest, true)
        } else {
            return Err(invalid(url, "expected http[s]://HOST:PORT[/PATH]"));
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], Some(&rest[i..])),
            Some(_) => return Err(invalid(url, "no query or fragment allowed")),
            None => (rest, None),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(invalid(url, "expected a host (and no user name)"));
        }
        if let Some(p) = path {
            if p.contains(['?', '#']) || !p.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(invalid(
                    url,
                    "the path may hold no query, fragment or spaces",
                ));
            }
        }
        let with_port = if has_port(authority) {
            authority.to_owned()
        } else if https {
            format!("{authority}:443")
        } else {
            format!("{authority}:80")
        };
        let tls = if https {
            let host = &with_port[..with_port.rfind(':').unwrap_or(with_port.len())];
            Some(crate::tls::server_name(host).map_err(|e| invalid(url, &e.to_string()))?)
        } else {
            None
        };
        let addrs: Vec<SocketAddr> = with_port
            .to_socket_addrs()
            .map_err(|e| invalid(url, &format!("cannot resolve {with_port}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(invalid(url, &format!("{with_port} resolves to no address")));
        }
        Ok(Upstream {
            id: next_id(),
            addrs,
            authority: authority.to_owned(),
            path: path.map(str::to_owned),
            tls,
            down: RedialBackoff::new(REDIAL_FIRST, REDIAL_MAX),
        })
    }

    /// The same upstream (its id, addresses, names), with a backoff of its own: for a thread
    /// that checks its health.
    pub(crate) fn same(&self) -> Upstream {
        Upstream {
            id: self.id,
            addrs: self.addrs.clone(),
            authority: self.authority.clone(),
            path: self.path.clone(),
            tls: self.tls.clone(),
            down: RedialBackoff::new(REDIAL_FIRST, REDIAL_MAX),
        }
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len()
        && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
    .then(|| &s[prefix.len()..])
}

/// Whether an authority ends in `:PORT` (an IPv6 literal's colons are inside brackets).
fn has_port(authority: &str) -> bool {
    match authority.rfind(':') {
        Some(i) => !authority[i..].contains(']'),
        None => false,
    }
}

/// One prefix and where its requests go: `to` is an upstream, or the group of them the
/// proxy balances over (the `balance` module's).
#[derive(Debug)]
pub(crate) struct Route<T> {
    pub(crate) prefix: String,
    pub(crate) to: T,
}

/// What a route answers itself instead of forwarding a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The prefix without its trailing slash: redirect to this location.
    Redirect(String),
    /// A dot segment: refuse.
    DotSegment,
}

impl<T> Route<T> {
    /// Whether this route takes `path` (the prefix, or the prefix without its final `/`).
    pub(crate) fn matches(&self, path: &str) -> bool {
        path.starts_with(&self.prefix)
            || (self.prefix.len() > 1
                && self.prefix.ends_with('/')
                && path == &self.prefix[..self.prefix.len() - 1])
    }

    /// What a request to `path` with `query` (which must match) gets instead of being
    /// forwarded, if anything: a redirect to the prefix's slash form, or a refusal.
    pub(crate) fn refusal(&self, path: &str, query: Option<&str>) -> Option<Refusal> {
        if !path.starts_with(&self.prefix) {
            let mut to = self.prefix.clone();
            if let Some(q) = query {
                to.push('?');
                to.push_str(q);
            }
            return Some(Refusal::Redirect(to));
        }
        if has_dot_segment(path) {
            return Some(Refusal::DotSegment);
        }
        None
    }

    /// The target an upstream whose URL has the path `base` sees for `path` and `query`
    /// (which [`refusal`](Self::refusal) let through): `base` replaces the prefix, or, without
    /// one, the target goes up unchanged.
    // Always inline: it has two callers (a request's first upstream, and the one a request
    // is retried on), and out of line it cost a `route` request ~40 more instructions
    // (cachegrind, `fibra serve --proxy` to `fibra hello`).
    #[inline(always)]
    pub(crate) fn rewrite(&self, base: Option<&str>, path: &str, query: Option<&str>) -> String {
        let mut target = match base {
            Some(base) => {
                let rest = &path[self.prefix.len()..];
                let mut t = String::with_capacity(base.len() + rest.len() + 1);
                t.push_str(base);
                t.push_str(rest);
                t
            }
            None => path.to_owned(),
        };
        if let Some(q) = query {
            target.push('?');
            target.push_str(q);
        }
        target
    }
}

/// Whether `path` has a segment `.` or `..`, counting `%2e` as a dot and `\`, `%2f` and `%5c`
/// as separators (as some upstreams decode them).
pub(crate) fn has_dot_segment(path: &str) -> bool {
    let b = path.as_bytes();
    if !b.contains(&b'.') && !b.contains(&b'%') {
        return false;
    }
    let mut i = 0;
    let mut dots = 0; // dots in the current segment; -1 once it holds anything else
    let mut plain = true;
    while i <= b.len() {
        let (sep, len, dot) = match b.get(i) {
            None => (true, 1, false),
            Some(b'/') | Some(b'\\') => (true, 1, false),
            Some(b'%') if b.len() >= i + 3 => {
                let hex = [b[i + 1].to_ascii_lowercase(), b[i + 2].to_ascii_lowercase()];
                match &hex {
                    b"2f" | b"5c" => (true, 3, false),
                    b"2e" => (false, 3, true),
                    _ => (false, 3, false),
                }
            }
            Some(b'.') => (false, 1, true),
            Some(_) => (false, 1, false),
        };
        if sep {
            if plain && (dots == 1 || dots == 2) {
                return true;
            }
            dots = 0;
            plain = true;
        } else if dot {
            dots += 1;
        } else {
            plain = false;
        }
        i += len;
    }
    false
}

/// The route with the longest prefix matching `path`.
pub(crate) fn longest<'a, T>(routes: &'a [Route<T>], path: &str) -> Option<&'a Route<T>> {
    routes
        .iter()
        .filter(|r| r.matches(path))
        .max_by_key(|r| r.prefix.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(prefix: &str, url: &str) -> Route<Upstream> {
        Route {
            prefix: prefix.into(),
            to: Upstream::parse(url).unwrap(),
        }
    }

    /// What a route makes of a request path.
    #[derive(Debug, PartialEq, Eq)]
    enum Target {
        Forward(String),
        Redirect(String),
        DotSegment,
    }

    impl Route<Upstream> {
        /// The target for the route's one upstream.
        fn target_of(&self, path: &str, query: Option<&str>) -> Target {
            match self.refusal(path, query) {
                Some(Refusal::Redirect(to)) => Target::Redirect(to),
                Some(Refusal::DotSegment) => Target::DotSegment,
                None => Target::Forward(self.rewrite(self.to.path.as_deref(), path, query)),
            }
        }
    }

    #[test]
    fn parses_upstream_urls() {
        let u = Upstream::parse("http://127.0.0.1:9000/").unwrap();
        assert_eq!(u.addrs, vec!["127.0.0.1:9000".parse().unwrap()]);
        assert_eq!(
            (u.authority.as_str(), u.path.as_deref()),
            ("127.0.0.1:9000", Some("/"))
        );
        let u = Upstream::parse("HTTP://[::1]:81").unwrap();
        assert_eq!(u.addrs, vec!["[::1]:81".parse().unwrap()]);
        assert_eq!(u.path, None);
        let u = Upstream::parse("http://127.0.0.1/v2").unwrap();
        assert_eq!(u.addrs[0].port(), 80);
        let u = Upstream::parse("https://localhost:8443/x").unwrap();
        assert_eq!(u.addrs[0].port(), 8443);
        assert_eq!(u.tls.unwrap().to_str(), "localhost");
        let u = Upstream::parse("https://127.0.0.1").unwrap();
        assert_eq!(u.addrs[0].port(), 443);
        assert_eq!(u.tls.unwrap().to_str(), "127.0.0.1");
        assert!(Upstream::parse("http://127.0.0.1").unwrap().tls.is_none());
        for bad in [
            "ftp://x/",
            "127.0.0.1:80",
            "http://",
            "http:///x",
            "http://u@127.0.0.1/",
            "http://127.0.0.1/?q",
            "http://127.0.0.1:99999/",
        ] {
            let e = Upstream::parse(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn rewrites_targets_as_proxy_pass() {
        let strip = route("/api/", "http://127.0.0.1:9000/");
        assert_eq!(
            strip.target_of("/api/users", Some("id=1")),
            Target::Forward("/users?id=1".into())
        );
        assert_eq!(strip.target_of("/api/", None), Target::Forward("/".into()));
        let keep = route("/api/", "http://127.0.0.1:9000");
        assert_eq!(
            keep.target_of("/api/users", None),
            Target::Forward("/api/users".into())
        );
        let base = route("/api/", "http://127.0.0.1:9000/v2/");
        assert_eq!(
            base.target_of("/api/a/b", None),
            Target::Forward("/v2/a/b".into())
        );
        let bare = route("/api", "http://127.0.0.1:9000/v2");
        assert_eq!(
            bare.target_of("/api/x", None),
            Target::Forward("/v2/x".into())
        );
        assert_eq!(bare.target_of("/api", None), Target::Forward("/v2".into()));
        // Replaced literally, as nginx does: a prefix without its slash makes `/v2x`.
        assert_eq!(
            bare.target_of("/apix", None),
            Target::Forward("/v2x".into())
        );
        assert!(strip.matches("/api"));
        assert_eq!(
            strip.target_of("/api", Some("q=1")),
            Target::Redirect("/api/?q=1".into())
        );
        assert!(!strip.matches("/apis"));
        assert_eq!(strip.target_of("/api/../etc", None), Target::DotSegment);
    }

    #[test]
    fn longest_prefix_wins() {
        let routes = vec![
            route("/", "http://127.0.0.1:1"),
            route("/api/", "http://127.0.0.1:2"),
            route("/api/v2/", "http://127.0.0.1:3"),
        ];
        let port = |p| longest(&routes, p).map(|r| r.to.addrs[0].port());
        assert_eq!(port("/api/v2/x"), Some(3));
        assert_eq!(port("/api/v1/x"), Some(2));
        assert_eq!(port("/index.html"), Some(1));
        assert!(longest(&routes[1..], "/other").is_none());
    }

    #[test]
    fn finds_dot_segments_in_every_spelling() {
        for p in [
            "/..",
            "/.",
            "/a/../b",
            "/a/./b",
            "/a/%2e%2e/b",
            "/a/%2E./b",
            "/a%2f..%2fb",
            "/a\\..\\b",
            "/a/..%5cb",
            "/a/.%2e",
        ] {
            assert!(has_dot_segment(p), "{p}");
        }
        for p in [
            "/",
            "/a.b",
            "/...",
            "/a/..b",
            "/.well-known/x",
            "/a%20b",
            "/%2e%2e%2e",
            "/a/b.",
        ] {
            assert!(!has_dot_segment(p), "{p}");
        }
    }
}
