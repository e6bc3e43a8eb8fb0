//! `fibra bench --h2`: HTTP/2 load with prior knowledge (cleartext), `-m` streams in flight
//! on every connection, like `h2load -m`.
//!
//! One fiber per connection drives the `h2` crate's client through
//! [`super::h2_io::wire`] (an `AsyncRead + AsyncWrite` adapter over a fiber's transport): it keeps `-m`
//! requests open, polls the connection and every response, and between polls waits for
//! input or a wake-up. A response counts when its body has ended; its latency runs from
//! the request's submission.

use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use super::h2_io::park::Parker;
use super::h2_io::wire::{H2Io, Link};
use bytes::Bytes;
use fibra_http::{Tcp, Transport};
use h2::client::{ResponseFuture, SendRequest};
use h2::RecvStream;

use super::driver::{count_broken, FinishGuard, Shared};
use super::stats::{self, Problem};
use super::target::Target;

/// What every `--h2` connection sends.
#[derive(Debug, Clone)]
pub struct H2Load {
    /// Streams kept open per connection.
    pub streams: usize,
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
}

impl H2Load {
    /// The load for `target` with `method` and the extra `headers` (already checked).
    pub fn new(
        target: &Target,
        method: &str,
        headers: &[(String, String)],
        streams: usize,
    ) -> Result<H2Load, String> {
        let uri = format!("http://{}{}", target.authority, target.path)
            .parse()
            .map_err(|e| format!("{}: {e}", target.authority))?;
        let method = method.parse().map_err(|e| format!("{method}: {e}"))?;
        let mut map = http::HeaderMap::new();
        for (name, value) in headers {
            let name: http::HeaderName = name.parse().map_err(|e| format!("{name}: {e}"))?;
            let value = http::HeaderValue::from_str(value).map_err(|e| format!("{value}: {e}"))?;
            map.append(name, value);
        }
        Ok(H2Load {
            streams,
            method,
            uri,
            headers: map,
        })
    }

    fn request(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// A request in flight: its response head, then its body.
enum InFlight {
    Head(ResponseFuture, Instant),
    Body(RecvStream, u16, Instant),
}

/// One connection's fiber: connect, handshake, keep `streams` requests open until the budget
/// or the time is spent; a broken connection is opened again.
pub(super) fn connection_fiber(shared: &Shared, load: &H2Load, _done: FinishGuard) {
    loop {
        let Err((problem, why, lost)) = run_connection(shared, load) else {
            return;
        };
        if !count_broken(shared, problem, why, lost) {
            return;
        }
    }
}

type Failure = (Problem, String, u64);

/// Runs one connection until the budget is spent (`Ok`) or it fails (the problem, a message
/// and how many requests it took with it).
fn run_connection(shared: &Shared, load: &H2Load) -> Result<(), Failure> {
    let tcp = fibra::net::TcpStream::connect(shared.addr)
        .map_err(|e| (Problem::Connect, format!("connect: {e}"), 0))?;
    let _ = tcp.set_nodelay(true);
    stats::with(|w| w.stats.connects += 1);
    let link: Rc<Link<Tcp>> = Link::new(Tcp::new(tcp), Vec::new());
    let _ = link.transport().set_read_timeout(shared.timeout);
    let parker = Parker::new();
    let mut cx = Context::from_waker(parker.waker());
    let handshake = h2::client::handshake(H2Io(link.clone()));
    let (mut send, mut conn) = match link.block_on(&parker, handshake) {
        Some(Ok(pair)) => pair,
        Some(Err(e)) => return Err((Problem::Read, format!("handshake: {e}"), 0)),
        None => return Err((Problem::Timeout, "handshake timed out".into(), 0)),
    };
    let mut flight: Vec<InFlight> = Vec::with_capacity(load.streams);
    let mut exhausted = false;
    loop {
        let mut progress = fill(
            shared,
            load,
            &mut send,
            &mut cx,
            &mut flight,
            &mut exhausted,
        )
        .map_err(|e| (Problem::Write, format!("request: {e}"), flight.len() as u64))?;
        if exhausted && flight.is_empty() {
            return Ok(());
        }
        match std::future::Future::poll(std::pin::Pin::new(&mut conn), &mut cx) {
            Poll::Ready(Ok(())) => {
                return Err((
                    Problem::Closed,
                    "connection closed".into(),
                    flight.len() as u64,
                ))
            }
            Poll::Ready(Err(e)) => {
                return Err((
                    Problem::Read,
                    format!("connection: {e}"),
                    flight.len() as u64,
                ))
            }
            Poll::Pending => {}
        }
        progress |= poll_responses(&mut flight, &mut cx);
        if !progress && !link.wait(&parker) {
            let lost = flight.len() as u64;
            return Err((Problem::Timeout, "response timed out".into(), lost));
        }
    }
}

/// Opens streams while fewer than `load.streams` are in flight and budget is left; true if
/// it opened any.
fn fill(
    shared: &Shared,
    load: &H2Load,
    send: &mut SendRequest<Bytes>,
    cx: &mut Context<'_>,
    flight: &mut Vec<InFlight>,
    exhausted: &mut bool,
) -> Result<bool, h2::Error> {
    let mut opened = false;
    while !*exhausted && flight.len() < load.streams {
        match send.poll_ready(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => break,
        }
        if shared.take(1) == 0 {
            *exhausted = true;
            break;
        }
        let (response, _) = send.send_request(load.request(), true)?;
        flight.push(InFlight::Head(response, Instant::now()));
        opened = true;
    }
    Ok(opened)
}

/// Polls every request in flight; records and removes the finished ones. True if any moved.
fn poll_responses(flight: &mut Vec<InFlight>, cx: &mut Context<'_>) -> bool {
    let mut progress = false;
    let mut i = 0;
    while i < flight.len() {
        let done = match &mut flight[i] {
            InFlight::Head(response, sent) => {
                match std::future::Future::poll(std::pin::Pin::new(response), cx) {
                    Poll::Ready(Ok(resp)) => {
                        progress = true;
                        let status = resp.status().as_u16();
                        let sent = *sent;
                        flight[i] = InFlight::Body(resp.into_body(), status, sent);
                        continue;
                    }
                    Poll::Ready(Err(e)) => Some(Err(e.to_string())),
                    Poll::Pending => None,
                }
            }
            InFlight::Body(body, status, sent) => loop {
                match body.poll_data(cx) {
                    Poll::Ready(Some(Ok(chunk))) => {
                        progress = true;
                        let _ = body.flow_control().release_capacity(chunk.len());
                        stats::with(|w| w.stats.bytes_read += chunk.len() as u64);
                    }
                    Poll::Ready(Some(Err(e))) => break Some(Err(e.to_string())),
                    Poll::Ready(None) => break Some(Ok((*status, *sent))),
                    Poll::Pending => break None,
                }
            },
        };
        match done {
            None => i += 1,
            Some(result) => {
                progress = true;
                let now = Instant::now();
                stats::with(|w| {
                    match result {
                        Ok((status, sent)) => w.stats.response(status, now - sent),
                        Err(why) => w.stats.problem(Problem::Read, 1, || why),
                    }
                    w.advance(1);
                });
                flight.swap_remove(i);
            }
        }
    }
    progress
}
