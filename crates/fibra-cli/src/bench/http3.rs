//! `fibra bench --h3`: HTTP/3 load over QUIC, `-m` streams in flight on every connection,
//! like `--h2` (and `h2load -m`).
//!
//! Each connection has a UDP socket of its own (as a browser's would, so a server that
//! spreads connections over workers by address sees them spread), one QUIC endpoint on it,
//! and `-m` fibers on the connection's worker, each sending a request on a new stream and
//! reading its response, again and again. A response counts when its stream has ended; its
//! latency runs from the request's send. The request's HEADERS frame is encoded once.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use fibra::net::UdpSocket;
use fibra_http::http3_client::{EncodedRequest, Http3Client};
use fibra_quic::Endpoint;

use super::driver::{count_broken, FinishGuard, Shared, CONNECT_BACKOFF};
use super::stats::{self, Problem};
use super::target::Target;
use super::tls::{self, Verify};

/// The most body bytes counted per read (they are dropped, not copied: one read takes what
/// has arrived, up to this).
const BODY_CHUNK: usize = 256 * 1024;

/// What every `--h3` connection sends.
#[derive(Debug, Clone)]
pub struct H3Load {
    /// Streams kept open per connection.
    pub streams: usize,
    request: EncodedRequest,
    /// The name the certificate is checked against (the URL's host).
    server_name: String,
    client: fibra_quic::proto::ClientConfig,
}

impl H3Load {
    /// The load for `target` with `method` and the extra `headers` (already checked); the
    /// server's certificate is checked as `verify` says.
    pub fn new(
        target: &Target,
        method: &str,
        headers: &[(String, String)],
        streams: usize,
        verify: Verify<'_>,
    ) -> Result<H3Load, String> {
        let uri: http::Uri = format!("https://{}{}", target.authority, target.path)
            .parse()
            .map_err(|e| format!("{}: {e}", target.authority))?;
        let method: http::Method = method.parse().map_err(|e| format!("{method}: {e}"))?;
        let mut map = http::HeaderMap::new();
        for (name, value) in headers {
            let name: http::HeaderName = name.parse().map_err(|e| format!("{name}: {e}"))?;
            let value = http::HeaderValue::from_str(value).map_err(|e| format!("{value}: {e}"))?;
            map.append(name, value);
        }
        let request = EncodedRequest::new(&method, &uri, &map).map_err(|e| e.to_string())?;
        let tls = tls::quic_client_config(verify)?;
        let client = fibra_quic::Config::default()
            .client(tls)
            .map_err(|e| e.to_string())?;
        Ok(H3Load {
            streams,
            request,
            server_name: target.host.clone(),
            client,
        })
    }
}

/// One connection's fiber: connect, keep `streams` requests open until the budget or the
/// time is spent; a broken connection is opened again.
pub(super) fn connection_fiber(shared: &Arc<Shared>, load: &Arc<H3Load>, _done: FinishGuard) {
    loop {
        match run_connection(shared, load) {
            Ok(()) => return,
            // Its streams counted the requests it lost.
            Err(None) => {
                if shared.deadline.is_some() {
                    fibra::time::sleep(CONNECT_BACKOFF);
                }
            }
            Err(Some((problem, why))) => {
                if !count_broken(shared, problem, why, 0) {
                    return;
                }
            }
        }
    }
}

/// A failure before the connection carried requests, as `run_connection` returns it.
fn before(problem: Problem, what: &'static str) -> impl Fn(io::Error) -> Option<(Problem, String)> {
    move |e| Some((problem, format!("{what}: {e}")))
}

/// Runs one connection until the budget is spent (`Ok`) or it fails: `Some` with the
/// problem and a message when it failed before carrying requests, `None` after its streams
/// counted what they lost.
fn run_connection(
    shared: &Arc<Shared>,
    load: &Arc<H3Load>,
) -> Result<(), Option<(Problem, String)>> {
    let local: SocketAddr = match shared.addr {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).map_err(before(Problem::Connect, "bind"))?;
    let endpoint = Endpoint::client(socket).map_err(before(Problem::Connect, "endpoint"))?;
    let conn = endpoint
        .connect(shared.addr, &load.server_name, load.client.clone())
        .map_err(before(Problem::Connect, "connect"))?;
    stats::with(|w| w.stats.connects += 1);
    let client =
        Arc::new(Http3Client::new(conn).map_err(before(Problem::Write, "control stream"))?);
    let mut streams = Vec::with_capacity(load.streams);
    for _ in 0..load.streams {
        let (shared, load, client) = (shared.clone(), load.clone(), client.clone());
        let mut builder = fibra::fiber::Builder::new();
        if let Some(w) = fibra::current_worker() {
            builder = builder.worker(w);
        }
        match builder.spawn(move || stream_loop(&shared, &load, &client)) {
            Ok(stream) => streams.push(stream),
            Err(e) => {
                log::warn!("fibra bench: cannot start a stream fiber: {e}");
                break;
            }
        }
    }
    let mut broken = streams.is_empty();
    for stream in streams {
        broken |= stream.join().unwrap_or(true);
    }
    drop(client);
    endpoint.close();
    if broken {
        Err(None)
    } else {
        Ok(())
    }
}

/// One stream slot: sends a request, reads its response, and again, until the budget or
/// the time is spent (false) or the connection breaks (true). Every request taken is
/// counted here, answered or lost.
fn stream_loop(shared: &Shared, load: &H3Load, client: &Http3Client) -> bool {
    loop {
        if shared.take(1) == 0 {
            return false;
        }
        let sent = Instant::now();
        let outcome = exchange(load, client);
        let now = Instant::now();
        if let Err((_, id, e)) = &outcome {
            if client.unprocessed(*id, e) {
                // Not processed (the server is going away, RFC 9114 §5.2): sent again on
                // a new connection, as a browser does, not counted as lost.
                stats::with(|w| w.give_back(1));
                return true;
            }
        }
        stats::with(|w| {
            match &outcome {
                Ok(status) => {
                    w.stats.bytes_written += load.request.as_bytes().len() as u64;
                    w.stats.response(*status, now - sent);
                }
                Err((problem, _, e)) => w.stats.problem(*problem, 1, || e.to_string()),
            }
            w.advance(1);
        });
        if outcome.is_err() && client.connection().closed_reason().is_some() {
            return true;
        }
    }
}

/// What went wrong with one request: the problem, the request's stream while none of its
/// answer had arrived (`None` once it had, or if it got no stream), and the error.
type Failed = (Problem, Option<u64>, io::Error);

/// One request and its response: the status, after the body has ended. The body is
/// counted, not copied (`discard_body`).
fn exchange(load: &H3Load, client: &Http3Client) -> Result<u16, Failed> {
    let mut response = client
        .send(&load.request, &[])
        .map_err(|e| (Problem::Write, None, e))?;
    let id = response.id();
    let read = |e: io::Error, id: Option<u64>| {
        let problem = match e.kind() {
            io::ErrorKind::InvalidData => Problem::Malformed,
            _ => Problem::Read,
        };
        (problem, id, e)
    };
    let head = response.read_head().map_err(|e| read(e, Some(id)))?;
    loop {
        let n = response
            .discard_body(BODY_CHUNK)
            .map_err(|e| read(e, None))?;
        if n == 0 {
            return Ok(head.status.as_u16());
        }
        stats::with(|w| w.stats.bytes_read += n as u64);
    }
}
