//! Command-line flags of `fibra bench` and their validation into a [`Config`].
//!
//! The flags follow weighttp (`-n -c -t -k -H`) with wrk's `-d` and a few
//! extras. Validation is a pure function (apart from reading `--body`), so
//! every contradiction has a unit test and a one-line message.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::http2::H2Load;
use super::http3::H3Load;
use super::paths;
use super::request::{self, RequestSpec};
use super::target::Target;
use super::tls::{self, Verify};

/// `fibra bench [OPTIONS] URL`: load an HTTP/1.x server and report what it did.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Number of requests to send in total (weighttp's -n).
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,

    /// Run for this long instead of a fixed count: 10s, 500ms, 2m, or plain seconds.
    #[arg(short = 'd', long = "duration", value_name = "DURATION")]
    pub duration: Option<String>,

    /// Number of concurrent connections (one fiber each).
    #[arg(
        short = 'c',
        long = "connections",
        value_name = "N",
        default_value_t = 1
    )]
    pub connections: usize,

    /// Number of worker threads (fibra workers) the connections are spread over.
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = 1)]
    pub threads: usize,

    /// Keep connections alive; without it every request opens a new connection.
    #[arg(short = 'k', long = "keep-alive")]
    pub keep_alive: bool,

    /// Extra request header 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Request method [default: GET, or POST with --body].
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,

    /// Send this file as the request body (with a Content-Length).
    #[arg(long, value_name = "FILE")]
    pub body: Option<PathBuf>,

    /// Speak HTTP/1.0 instead of HTTP/1.1.
    #[arg(long = "http1.0")]
    pub http10: bool,

    /// Requests in flight per connection, sent in one write (needs -k).
    #[arg(long, value_name = "N")]
    pub pipeline: Option<usize>,

    /// The Anon pattern: send one request on every connection of a worker, then
    /// read every response, repeat.
    #[arg(long)]
    pub batch: bool,

    /// Timeout in seconds for connecting and for each wait on a response or a send;
    /// a request that times out counts as errored.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// Send at most this many requests per second in all (HTTP/2 streams and WebSocket
    /// messages too), spread evenly over the run, as wrk2's -R: a steady load below the
    /// server's capacity instead of as much as it takes. A request leaves at its turn, or at
    /// once when the run is behind (by at most a second: a stalled server gets no burst of
    /// more than a second's worth when it resumes). Latency runs from the send.
    #[arg(long, value_name = "PER_SEC")]
    pub rate: Option<f64>,

    /// Print a machine-readable JSON summary instead of the text report.
    #[arg(long)]
    pub json: bool,

    /// https: do not verify the server's certificate. For benchmarking only: it accepts an
    /// impostor. (Not -k, which is --keep-alive.)
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,

    /// https: verify the server's certificate against the CA certificates of this PEM file
    /// (the platform's roots are not used).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// WebSocket echo load: every connection upgrades, then sends a binary message and
    /// waits for its echo, again and again; -n counts messages. The URL may say ws://.
    #[arg(long)]
    pub ws: bool,

    /// --ws: the size of each message in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64, requires = "ws")]
    pub size: usize,

    /// HTTP/2 with prior knowledge (cleartext http:// only): each connection keeps -m streams
    /// in flight, as `h2load -m` does; -n counts requests.
    #[arg(long, conflicts_with = "ws")]
    pub h2: bool,

    /// HTTP/3 over QUIC (https:// only, to the URL's port over UDP): each connection has a
    /// UDP socket of its own and keeps -m streams in flight, as with --h2; -n counts requests.
    #[arg(long, conflicts_with_all = ["ws", "h2"])]
    pub h3: bool,

    /// --h2, --h3: streams in flight per connection.
    #[arg(short = 'm', long = "streams", value_name = "N")]
    pub streams: Option<usize>,

    /// Every request asks for a path drawn at random from FILE (one URL path a line), as
    /// wrk with a path-list script does; the URL then gives only the scheme, host and port.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ws", "h2", "h3"])]
    pub paths: Option<PathBuf>,

    /// --paths: seed of the random draw (each connection draws from its own generator
    /// seeded with this and its number, so a run repeats).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "paths")]
    pub seed: u64,

    /// Have the kernel drop response bodies of a known length unread (recv with MSG_TRUNC)
    /// instead of copying them in: the client's cost then stays flat as bodies grow, so large
    /// files load the server, not the client. Bodies are counted, never checked, either way.
    /// Plain http:// only.
    #[arg(long, conflicts_with_all = ["ws", "h2", "h3"])]
    pub drop_bodies: bool,

    /// Target URL: http[s]://host[:port][/path] (ws://host[:port][/path] with --ws)
    #[arg(value_name = "URL")]
    pub url: String,
}

/// When the run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// After exactly this many requests are done.
    Requests(u64),
    /// When this much time has passed (requests in flight then are dropped).
    Duration(Duration),
}

/// A validated benchmark configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to send requests.
    pub target: Target,
    /// When to stop.
    pub limit: Limit,
    /// Concurrent connections.
    pub connections: usize,
    /// Worker threads.
    pub workers: usize,
    /// Reuse connections.
    pub keep_alive: bool,
    /// Requests per write on one connection (1 = ping-pong).
    pub pipeline: usize,
    /// Drive all connections of a worker in rounds (the Anon pattern).
    pub batch: bool,
    /// Per-request timeout.
    pub timeout: Option<Duration>,
    /// `--rate`: requests per second in all (`None`: as fast as the server answers).
    pub rate: Option<f64>,
    /// JSON output.
    pub json: bool,
    /// The method is HEAD, so responses carry no body.
    pub head_request: bool,
    /// Method, for the report.
    pub method: String,
    /// One rendered request.
    pub request: Vec<u8>,
    /// `--paths`: one rendered request per listed path (empty: every request is `request`).
    pub path_requests: Vec<Vec<u8>>,
    /// `--seed`: of the draw over `path_requests`.
    pub seed: u64,
    /// `--drop-bodies`: bodies dropped by the kernel unread.
    pub drop_bodies: bool,
    /// The TLS client configuration, for an `https://` target over TCP (`--h3` has its own,
    /// in `h3`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// `--ws`: the size of each echoed message (`None`: HTTP requests).
    pub ws_message: Option<usize>,
    /// `--h2`: the HTTP/2 load (`None`: HTTP/1.x).
    pub h2: Option<H2Load>,
    /// `--h3`: the HTTP/3 load (`None`: HTTP/1.x or `--h2`).
    pub h3: Option<H3Load>,
}

/// A flag or combination of flags that cannot work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ArgError> {
    Err(ArgError(msg.into()))
}

/// Parses `10s`, `500ms`, `2m`, `1h`, `1.5s` or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, ArgError> {
    let text = text.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" => 60.0,
        "h" => 3600.0,
        _ => {
            return err(format!(
                "invalid duration {text:?}: unknown unit {unit:?} (use ms, s, m or h)"
            ))
        }
    };
    match number.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n * scale < 1e9 => {
            Ok(Duration::from_secs_f64(n * scale))
        }
        _ => err(format!(
            "invalid duration {text:?}: expected a positive number, e.g. 10s"
        )),
    }
}

fn is_token(s: &str) -> bool {
    const SPECIAL: &[u8] = b"!#$%&'*+-.^_`|~";
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || SPECIAL.contains(&b))
}

/// Splits `Name: value`, checking the name is a token and the value has no
/// control characters.
fn parse_header(text: &str) -> Result<(String, String), ArgError> {
    let Some((name, value)) = text.split_once(':') else {
        return err(format!("invalid header {text:?}: expected 'Name: value'"));
    };
    if !is_token(name) {
        return err(format!("invalid header {text:?}: bad header name {name:?}"));
    }
    let value = value.trim_matches([' ', '\t']);
    if value.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
        return err(format!(
            "invalid header {text:?}: control character in value"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

impl BenchArgs {
    /// Checks the flags against each other and renders the request.
    pub fn validate(&self) -> Result<Config, ArgError> {
        let url = match self.url.split_once("://") {
            Some((scheme, rest)) if self.ws && scheme.eq_ignore_ascii_case("ws") => {
                format!("http://{rest}")
            }
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("wss") => {
                return err("wss:// is not supported: --ws speaks plain ws://")
            }
            _ => self.url.clone(),
        };
        let target = Target::parse(&url).map_err(|e| ArgError(e.to_string()))?;
        if self.ws {
            self.check_ws(&target)?;
        }
        if self.h2 {
            self.check_h2(&target)?;
        }
        if self.h3 {
            self.check_h3(&target)?;
        }
        if self.streams.is_some() && !self.h2 && !self.h3 {
            return err("-m is for --h2 and --h3 (streams per connection)");
        }
        let limit = match (self.requests, &self.duration) {
            (Some(_), Some(_)) => return err("-n and -d contradict each other: give one of them"),
            (None, None) => {
                return err("give the number of requests (-n N) or a duration (-d 10s)")
            }
            (Some(0), None) => return err("-n must be at least 1"),
            (Some(n), None) => Limit::Requests(n),
            (None, Some(d)) => Limit::Duration(parse_duration(d)?),
        };
        if self.connections == 0 {
            return err("-c must be at least 1");
        }
        if self.threads == 0 {
            return err("-t must be at least 1");
        }
        if self.connections < self.threads {
            return err(format!(
                "-c {} is less than -t {}: every worker needs at least one connection",
                self.connections, self.threads
            ));
        }
        if let Limit::Requests(n) = limit {
            if n < self.connections as u64 {
                return err(format!(
                    "-n {n} is less than -c {}: some connections would idle",
                    self.connections
                ));
            }
        }
        let pipeline = match (self.pipeline, self.batch) {
            (Some(_), true) => return err("--pipeline and --batch contradict each other: give one of them"),
            (Some(0), _) => return err("--pipeline must be at least 1"),
            (Some(p), _) if p > 1 && !self.keep_alive => {
                return err("--pipeline needs -k: a connection that closes after one response cannot carry a pipeline")
            }
            (Some(p), _) => p,
            (None, _) => 1,
        };
        let timeout = match self.timeout {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 && t < 1e9 => Some(Duration::from_secs_f64(t)),
            Some(t) => {
                return err(format!(
                    "--timeout {t}: expected a positive number of seconds"
                ))
            }
        };
        let rate = match self.rate {
            None => None,
            Some(r) if (0.001..1e9).contains(&r) => Some(r),
            Some(r) => {
                return err(format!(
                    "--rate {r}: expected a positive number of requests per second"
                ))
            }
        };
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        let body = match &self.body {
            None => None,
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| ArgError(format!("--body {}: {e}", path.display())))?,
            ),
        };
        let method = match &self.method {
            Some(m) if !is_token(m) => return err(format!("invalid method {m:?}")),
            Some(m) => m.clone(),
            None if body.is_some() => "POST".to_string(),
            None => "GET".to_string(),
        };
        let verify = match (target.tls, self.insecure, &self.cacert) {
            (false, false, None) => None,
            (false, _, _) => return err("--insecure and --cacert need an https:// URL"),
            (true, false, None) => {
                return err("https needs --cacert FILE to verify the server, or --insecure not to")
            }
            (true, _, _) if self.drop_bodies => {
                return err("--drop-bodies is for plain http://: TLS records must be decrypted")
            }
            (true, true, _) => Some(Verify::Nothing),
            (true, false, Some(ca)) => Some(Verify::CaFile(ca)),
        };
        // `--h3` makes a QUIC configuration of its own (below).
        let tls = match verify.filter(|_| !self.h3) {
            Some(v) => Some(tls::client_config(v).map_err(ArgError)?),
            None => None,
        };
        let render = |target: &Target| {
            request::render(&RequestSpec {
                method: &method,
                target,
                headers: &headers,
                body: body.as_deref(),
                http10: self.http10,
                keep_alive: self.keep_alive,
            })
        };
        let request = render(&target);
        let path_requests = match &self.paths {
            None => Vec::new(),
            Some(file) => paths::read_list(file)
                .map_err(ArgError)?
                .into_iter()
                .map(|path| {
                    render(&Target {
                        path,
                        ..target.clone()
                    })
                })
                .collect(),
        };
        let streams = self.streams.unwrap_or(1);
        let h2 = match self.h2 {
            true => Some(H2Load::new(&target, &method, &headers, streams).map_err(ArgError)?),
            false => None,
        };
        let h3 = match verify.filter(|_| self.h3) {
            Some(v) => Some(H3Load::new(&target, &method, &headers, streams, v).map_err(ArgError)?),
            None => None,
        };
        Ok(Config {
            target,
            limit,
            connections: self.connections,
            workers: self.threads,
            keep_alive: self.keep_alive,
            pipeline,
            batch: self.batch,
            timeout,
            rate,
            json: self.json,
            head_request: method == "HEAD",
            method,
            request,
            path_requests,
            seed: self.seed,
            drop_bodies: self.drop_bodies,
            tls,
            ws_message: self.ws.then_some(self.size),
            h2,
            h3,
        })
    }

    /// The flags `--h2` cannot go with.
    fn check_h2(&self, target: &Target) -> Result<(), ArgError> {
        if target.tls {
            return err("--h2 speaks HTTP/2 with prior knowledge over plain http://, not https");
        }
        self.check_streams()?;
        self.check_h1_only("--h2")
    }

    /// The flags `--h3` cannot go with.
    fn check_h3(&self, target: &Target) -> Result<(), ArgError> {
        if !target.tls {
            return err(
                "--h3 speaks HTTP/3 over QUIC, which is always encrypted: give an https:// URL",
            );
        }
        self.check_streams()?;
        if self.timeout.is_some() {
            return err("--timeout is not supported with --h3 (a dead connection ends at QUIC's idle timeout, 30 s)");
        }
        self.check_h1_only("--h3")
    }

    /// The HTTP/1.x flags, refused with `mode` (`--h2`, `--h3`).
    fn check_h1_only(&self, mode: &str) -> Result<(), ArgError> {
        let h1_only = [
            (self.pipeline.is_some(), "--pipeline"),
            (self.batch, "--batch"),
            (self.body.is_some(), "--body"),
            (self.http10, "--http1.0"),
        ];
        match h1_only.iter().find(|(given, _)| *given) {
            Some((_, flag)) => err(format!("{flag} is for HTTP/1.x, not {mode}")),
            None => Ok(()),
        }
    }

    /// `-m` within its bounds.
    fn check_streams(&self) -> Result<(), ArgError> {
        match self.streams {
            Some(n) if !(1..=1024).contains(&n) => {
                err("-m: between 1 and 1024 streams per connection")
            }
            _ => Ok(()),
        }
    }

    /// The flags `--ws` cannot go with.
    fn check_ws(&self, target: &Target) -> Result<(), ArgError> {
        if target.tls {
            return err("--ws speaks plain ws://, not https");
        }
        if self.size > 64 << 20 {
            return err("--size: at most 64 MiB");
        }
        let http_only = [
            (self.pipeline.is_some(), "--pipeline"),
            (self.batch, "--batch"),
            (self.method.is_some(), "--method"),
            (self.body.is_some(), "--body"),
            (self.http10, "--http1.0"),
        ];
        match http_only.iter().find(|(given, _)| *given) {
            Some((_, flag)) => err(format!("{flag} is for HTTP requests, not --ws")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
