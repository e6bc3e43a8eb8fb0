//! `--http3`: HTTP/3 on the UDP twin of the HTTPS port, with the same certificates (a
//! SIGHUP reload reaches it: both read the one `CertResolver`), the same settings and the
//! same handler (shared, `Server::serve_shared`); and the `Alt-Svc` value that tells
//! clients where to find it (added by `Endpoints`, in front of the handler).
//!
//! The QUIC endpoints run on a runtime of their own with as many workers as the server has
//! (threads beside the server's): on each worker a UDP socket on the port (`SO_REUSEPORT`),
//! its driver fiber, and a fiber per connection and per request stream, all on that worker
//! (`fibra_quic::Endpoint::server_group`). A connection stays on its worker when its client's
//! address changes: its connection IDs name the worker, the kernel steers by them where it
//! allows, and a worker forwards what reaches it anyway.
//!
//! Shutdown ([`Http3::stop`], in the server's grace period, beside the TCP listeners): no
//! new connections; each open one sends GOAWAY, answers what it took and closes with
//! H3_NO_ERROR (`fibra_http::Http3Drain`); what is still open when the grace period ends is
//! closed then.

use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::http3_handover::{self, Incoming, Link};
use fibra_http::{serve_http3_connection_draining, Http3Drain, Request, Response, Settings};
use fibra_quic::rustls::server::ResolvesServerCert;
use fibra_quic::{Config, Endpoint};
use http::header::HeaderValue;

/// How long [`Http3::stop`] waits, past its grace period, for connections it closed.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// How often a closed endpoint looks whether its connections are gone.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// The running HTTP/3 endpoints: [`Http3::stop`] drains them and waits for their thread.
pub struct Http3 {
    /// One per worker, on one port.
    endpoints: Vec<Endpoint>,
    /// The link to the other process of a binary upgrade (`http3_handover`): the old one,
    /// while this process is the new one and it lives; the new one, once this one began
    /// handing over.
    link: Option<Link>,
    drain: Http3Drain,
    thread: Option<JoinHandle<()>>,
    /// Receives once the endpoint's thread is done.
    finished: mpsc::Receiver<()>,
    addr: SocketAddr,
}

impl Http3 {
    /// Starts HTTP/3 on UDP `addr` (the HTTPS listener's address) on `workers` workers (the
    /// server's count; at most 256) with the certificates `resolver` picks, serving `handler`
    /// with `settings`, accepting 0-RTT if `zero_rtt` (`fibra_quic::Config::zero_rtt`). With
    /// `handed`, what an upgrading process handed over, on its sockets instead (and linked to
    /// it).
    pub fn start<H>(
        addr: SocketAddr,
        handed: Option<Incoming>,
        workers: usize,
        zero_rtt: bool,
        resolver: Arc<dyn ResolvesServerCert>,
        settings: Arc<Settings>,
        handler: Arc<H>,
    ) -> io::Result<Http3>
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        let tls = Config::server_tls_resolving(resolver, &[b"h3"])?;
        let config = Config {
            zero_rtt,
            ..Config::default()
        };
        let server_config = config.server(tls)?;
        let (tx, rx) = mpsc::channel();
        let (done_tx, finished) = mpsc::channel();
        let drain = Http3Drain::new();
        let draining = drain.clone();
        let thread = std::thread::Builder::new()
            .name("fibra-http3".into())
            .spawn(move || {
                let rt = match fibra::Runtime::builder().workers(workers).build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(move || {
                    let started = start_group(addr, handed, workers, &config, server_config)
                        .map_err(|e| {
                            io::Error::new(e.kind(), format!("HTTP/3 on UDP {addr}: {e}"))
                        });
                    let group = match started {
                        Ok((group, link)) => {
                            let _ = tx.send(Ok((group.clone(), link)));
                            group
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    let acceptors: Vec<_> = group
                        .iter()
                        .map(|endpoint| {
                            let endpoint = endpoint.clone();
                            let (settings, handler) = (settings.clone(), handler.clone());
                            let drain = draining.clone();
                            fibra::fiber::Builder::new()
                                .worker(endpoint.worker())
                                .spawn(move || accept_all(&endpoint, &settings, &handler, &drain))
                        })
                        .collect();
                    for a in acceptors.into_iter().flatten() {
                        let _ = a.join();
                    }
                    // Closed: the connections drain (`stop` closes what is left when its
                    // grace period is spent); the runtime would cancel their fibers.
                    while group.iter().any(|e| e.open_connections() > 0) {
                        fibra::time::sleep(DRAIN_POLL);
                    }
                });
                let _ = done_tx.send(());
            })?;
        let (endpoints, link) = rx.recv().map_err(|_| {
            io::Error::other(format!("HTTP/3 on UDP {addr}: its thread ended at start"))
        })??;
        let addr = endpoints[0].local_addr()?;
        Ok(Http3 {
            endpoints,
            link,
            drain,
            thread: Some(thread),
            finished,
            addr,
        })
    }

    /// The UDP address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A binary upgrade begins: links the endpoints to the new process and returns the
    /// descriptors to hand it, each with its name (prefixed with `prefix`). See
    /// `http3_handover`.
    fn begin_handover(&mut self, prefix: &str) -> io::Result<Vec<(OwnedFd, String)>> {
        // A link to a process before this one is over by now; its reader's end clears the
        // peer, which must not happen after the new one is set.
        self.link = None;
        let out = http3_handover::begin(&self.endpoints, prefix)?;
        self.link = Some(out.link);
        Ok(out.fds)
    }

    /// The new process serves: from now on it reads the sockets, and hands this one its
    /// connections' datagrams.
    fn commit_handover(&self) {
        for e in &self.endpoints {
            e.set_receiving(false);
        }
    }

    /// The upgrade failed: unlinks the endpoints (they kept reading the sockets throughout).
    fn cancel_handover(&mut self) {
        self.link = None;
    }

    /// [`Http3::stop`] in a thread of its own, so that it drains beside other servers.
    pub fn stop_in_background(self, grace: Duration) -> JoinHandle<()> {
        std::thread::spawn(move || self.stop(grace))
    }

    /// Stops taking connections and drains the open ones: each sends GOAWAY, answers the
    /// requests it took and closes. Those still open after `grace` are closed then; waits
    /// for them at most a few seconds more.
    pub fn stop(mut self, grace: Duration) {
        self.drain.begin();
        for e in &self.endpoints {
            e.close();
        }
        if self.finished.recv_timeout(grace).is_err() {
            self.drain.close_all();
            if self.finished.recv_timeout(CLOSE_WAIT).is_err() {
                stderr_line!("HTTP/3 on {}: connections still open at exit", self.addr);
                return;
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The endpoint group: on the sockets `handed` over, linked to the process that handed them,
/// or on new ones bound to `addr`.
fn start_group(
    addr: SocketAddr,
    handed: Option<Incoming>,
    workers: usize,
    config: &Config,
    server: fibra_quic::proto::ServerConfig,
) -> io::Result<(Vec<Endpoint>, Option<Link>)> {
    let Some(mut handed) = handed else {
        return Ok((Endpoint::server_group(addr, workers, config, server)?, None));
    };
    let sockets = std::mem::take(&mut handed.sockets);
    let group = Endpoint::server_group_on(sockets, handed.generation, config, server)?;
    let link = handed.link(&group[0])?;
    Ok((group, Some(link)))
}

/// Accepts `endpoint`'s connections until it closes, each served in a fiber on its worker.
fn accept_all<H>(
    endpoint: &Endpoint,
    settings: &Arc<Settings>,
    handler: &Arc<H>,
    drain: &Http3Drain,
) where
    H: Fn(Request) -> Response + Send + Sync + 'static,
{
    while let Some(conn) = endpoint.accept() {
        let (settings, handler) = (settings.clone(), handler.clone());
        let drain = drain.clone();
        let spawned = fibra::fiber::Builder::new()
            .worker(endpoint.worker())
            .spawn(move || serve_http3_connection_draining(conn, settings, handler, &drain));
        if let Err(e) = spawned {
            stderr_line!("HTTP/3: a connection's fiber: {e}");
        }
    }
}

/// The `Alt-Svc` value for HTTP/3 on UDP `port` (RFC 7838, RFC 9114 §3.1.1):
/// `h3=":PORT"; ma=86400`.
pub fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400"))
        .expect("digits and ASCII punctuation make a valid field value")
}

/// The HTTP/3 part of a binary upgrade, over every HTTP/3 server of the process: begun on
/// each (its descriptors named with its prefix, see `http3_handover`), then ended on all of
/// them once it is known whether the new binary started.
pub struct Handover<'a> {
    servers: Vec<&'a mut Http3>,
    /// The descriptors to hand the new process, each with its `LISTEN_FDNAMES` name.
    pub fds: Vec<(OwnedFd, String)>,
}

impl<'a> Handover<'a> {
    /// Begins the hand-over on each server, with the prefix for its descriptors' names. If
    /// one fails, those begun are cancelled and the error names the failed one's address.
    pub fn begin(
        servers: impl IntoIterator<Item = (&'a mut Http3, String)>,
    ) -> Result<Handover<'a>, String> {
        let mut begun = Handover {
            servers: Vec::new(),
            fds: Vec::new(),
        };
        for (server, prefix) in servers {
            match server.begin_handover(&prefix) {
                Ok(fds) => {
                    begun.fds.extend(fds);
                    begun.servers.push(server);
                }
                Err(e) => {
                    let addr = server.local_addr();
                    begun.end(false);
                    return Err(format!("HTTP/3 on udp://{addr}: {e}"));
                }
            }
        }
        Ok(begun)
    }

    /// Ends the hand-over: closes this process's copies of the descriptors, then, if the new
    /// binary `started`, lets it read the sockets alone (`Http3::commit_handover`), else
    /// unlinks every server from it (`Http3::cancel_handover`).
    pub fn end(self, started: bool) {
        let Handover { servers, fds } = self;
        drop(fds);
        for server in servers {
            if started {
                server.commit_handover();
            } else {
                server.cancel_handover();
            }
        }
    }
}
