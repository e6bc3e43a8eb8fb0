//! Connection settings: [`Config`], read from a `postgres://` URL and adjusted with setters.

use crate::error::{Error, ErrorKind};
use std::time::Duration;

/// Where and how to connect, and the pool's and queries' limits.
///
/// ```
/// use fibra_postgres::Config;
/// use std::time::Duration;
///
/// let c = Config::from_url("postgres://app:s%40cret@127.0.0.1:5433/shop?connect_timeout=2")?
///     .pool_size(8)
///     .query_timeout(Duration::from_secs(5));
/// assert_eq!(c.get_user(), "app");
/// assert_eq!(c.get_password(), Some("s@cret"));
/// assert_eq!(c.get_port(), 5433);
/// assert_eq!(c.get_dbname(), "shop");
/// assert_eq!(c.get_connect_timeout(), Duration::from_secs(2));
/// # Ok::<(), fibra_postgres::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    dbname: String,
    connect_timeout: Duration,
    query_timeout: Duration,
    pool_size: usize,
    redial_first: Duration,
    redial_max: Duration,
}

/// `connect_timeout` when the URL gives none.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// `query_timeout` when none is set.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections per worker thread when none is set.
pub const DEFAULT_POOL_SIZE: usize = 4;
/// How long a pool whose connect failed waits before it dials again, by default (see
/// [`Config::redial_backoff`]).
pub const DEFAULT_REDIAL_FIRST: Duration = Duration::from_millis(25);
/// The longest wait between two connects to a server that is down, by default.
pub const DEFAULT_REDIAL_MAX: Duration = Duration::from_millis(500);

impl Config {
    /// Reads `postgres://[user[:password]@][host][:port][/dbname][?param=value&...]`
    /// (`postgresql://` too). User and password are percent-decoded. `host` may be a Unix
    /// socket directory (`?host=/run/postgresql`, or `%2F...` in the host part). Parameters:
    /// `host`, `port`, `user`, `password`, `dbname`, `connect_timeout` (seconds); others
    /// are refused, so a typo is not silently ignored. Defaults: host `localhost`, port
    /// 5432, user `postgres`, dbname the user.
    pub fn from_url(url: &str) -> Result<Config, Error> {
        let bad = |why: &str| Error::new(ErrorKind::Config, format!("database URL: {why}"));
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| bad("must start with postgres:// or postgresql://"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a, p),
            None => (rest, ""),
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let mut c = Config {
            host: "localhost".into(),
            port: 5432,
            user: "postgres".into(),
            password: None,
            dbname: String::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            query_timeout: DEFAULT_QUERY_TIMEOUT,
            pool_size: DEFAULT_POOL_SIZE,
            redial_first: DEFAULT_REDIAL_FIRST,
            redial_max: DEFAULT_REDIAL_MAX,
        };
        if let Some(u) = userinfo {
            let (user, password) = match u.split_once(':') {
                Some((user, pw)) => (user, Some(pw)),
                None => (u, None),
            };
            if !user.is_empty() {
                c.user = decode(user).ok_or_else(|| bad("bad percent-encoding in the user"))?;
            }
            if let Some(pw) = password {
                c.password =
                    Some(decode(pw).ok_or_else(|| bad("bad percent-encoding in the password"))?);
            }
        }
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            // [v6]:port
            let (h, rest) = h
                .split_once(']')
                .ok_or_else(|| bad("unclosed '[' in the host"))?;
            (h, rest.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if !host.is_empty() {
            c.host = decode(host).ok_or_else(|| bad("bad percent-encoding in the host"))?;
        }
        if let Some(p) = port {
            c.port = p.parse().map_err(|_| bad("the port is not a number"))?;
        }
        if !path.is_empty() {
            c.dbname = decode(path).ok_or_else(|| bad("bad percent-encoding in the dbname"))?;
        }
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v).ok_or_else(|| bad("bad percent-encoding in a parameter"))?;
            match k {
                "host" => c.host = v,
                "port" => c.port = v.parse().map_err(|_| bad("the port is not a number"))?,
                "user" => c.user = v,
                "password" => c.password = Some(v),
                "dbname" => c.dbname = v,
                "connect_timeout" => {
                    let s: u64 = v
                        .parse()
                        .map_err(|_| bad("connect_timeout is not a number of seconds"))?;
                    c.connect_timeout = Duration::from_secs(s.max(1));
                }
                other => return Err(bad(&format!("unknown parameter {other:?}"))),
            }
        }
        if c.dbname.is_empty() {
            c.dbname = c.user.clone();
        }
        Ok(c)
    }

    /// Connections each worker thread keeps (at least 1). Concurrent queries from one
    /// worker's fibers share them, pipelined.
    pub fn pool_size(mut self, n: usize) -> Config {
        self.pool_size = n.max(1);
        self
    }

    /// How long a query may wait for its answer; past it the caller gets
    /// [`ErrorKind::Timeout`], the query is cancelled and its connection retired.
    pub fn query_timeout(mut self, t: Duration) -> Config {
        self.query_timeout = t;
        self
    }

    /// How long connecting and authenticating may take.
    pub fn connect_timeout(mut self, t: Duration) -> Config {
        self.connect_timeout = t;
        self
    }

    /// How a pool dials a server that cannot be reached: after a failed connect it waits
    /// `first` before one call tries again, twice as long after each further failure in a
    /// row, at most `max`; the calls in between fail at once ([`ErrorKind::Connect`], or
    /// [`ErrorKind::Auth`] while the last failure was one). Defaults
    /// [`DEFAULT_REDIAL_FIRST`] and [`DEFAULT_REDIAL_MAX`]: a server that is back is used
    /// again within half a second.
    ///
    /// [`ErrorKind::Connect`]: crate::ErrorKind::Connect
    /// [`ErrorKind::Auth`]: crate::ErrorKind::Auth
    pub fn redial_backoff(mut self, first: Duration, max: Duration) -> Config {
        self.redial_first = first;
        self.redial_max = max.max(first);
        self
    }

    /// The password (replaces one from the URL).
    pub fn password(mut self, p: impl Into<String>) -> Config {
        self.password = Some(p.into());
        self
    }

    /// The host name or address, or a Unix socket directory (starts with `/`).
    pub fn get_host(&self) -> &str {
        &self.host
    }
    /// The port (also names the Unix socket, `.s.PGSQL.PORT`).
    pub fn get_port(&self) -> u16 {
        self.port
    }
    /// The user name.
    pub fn get_user(&self) -> &str {
        &self.user
    }
    /// The password, if any.
    pub fn get_password(&self) -> Option<&str> {
        self.password.as_deref()
    }
    /// The database name.
    pub fn get_dbname(&self) -> &str {
        &self.dbname
    }
    /// See [`Config::connect_timeout`].
    pub fn get_connect_timeout(&self) -> Duration {
        self.connect_timeout
    }
    /// See [`Config::query_timeout`].
    pub fn get_query_timeout(&self) -> Duration {
        self.query_timeout
    }
    /// See [`Config::pool_size`].
    pub fn get_pool_size(&self) -> usize {
        self.pool_size
    }
    /// See [`Config::redial_backoff`]: the first wait and the longest.
    pub fn get_redial_backoff(&self) -> (Duration, Duration) {
        (self.redial_first, self.redial_max)
    }
}

/// Percent-decodes `s`; None on a bad escape or bytes that are not UTF-8.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url() {
        let c = Config::from_url(
            "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world",
        )
        .unwrap();
        assert_eq!(c.host, "127.0.0.1");
        assert_eq!(c.port, 5432);
        assert_eq!(c.user, "benchmarkdbuser");
        assert_eq!(c.password.as_deref(), Some("benchmarkdbpass"));
        assert_eq!(c.dbname, "hello_world");
    }

    #[test]
    fn defaults_and_unix_socket_host() {
        let c = Config::from_url("postgresql://?host=%2Ftmp%2Fpg&port=6000").unwrap();
        assert_eq!(c.host, "/tmp/pg");
        assert_eq!(c.port, 6000);
        assert_eq!(c.user, "postgres");
        assert_eq!(c.dbname, "postgres");
        assert_eq!(c.password, None);
        let c = Config::from_url("postgres://%2Ftmp%2Fpg/db").unwrap();
        assert_eq!(c.host, "/tmp/pg");
        assert_eq!(c.dbname, "db");
    }

    #[test]
    fn ipv6_and_percent_decoding() {
        let c = Config::from_url("postgres://u%3Ax:p%2Fw@[::1]:7000/d").unwrap();
        assert_eq!(c.host, "::1");
        assert_eq!(c.port, 7000);
        assert_eq!(c.user, "u:x");
        assert_eq!(c.password.as_deref(), Some("p/w"));
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for url in [
            "mysql://x",
            "postgres://h:port/db",
            "postgres://h/db?sslmode=require",
            "postgres://u%zz@h/db",
            "postgres://[::1/db",
            "postgres://h/db?connect_timeout=abc",
        ] {
            let e = Config::from_url(url).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{url}: {e}");
        }
    }
}
