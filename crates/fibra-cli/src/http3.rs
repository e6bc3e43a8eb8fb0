//! `--http3`: HTTP/3 on the UDP twin of the HTTPS port, with the same certificates (a
//! SIGHUP reload reaches it: both read the one `CertResolver`), the same settings and the
//! same handler (shared, `Server::serve_shared`); and the `Alt-Svc` value that tells
//! clients where to find it (added by `Endpoints`, in front of the handler).
//!
//! For now the QUIC endpoint runs on a runtime of its own with one worker (a thread beside
//! the server's workers): one UDP socket, one driver fiber, a fiber per connection and per
//! request stream. Several workers sharing the UDP port come later.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use fibra::net::UdpSocket;
use fibra_http::tls::CertResolver;
use fibra_http::{serve_http3_connection, Request, Response, Settings};
use fibra_quic::{Config, Endpoint};
use http::header::HeaderValue;

/// The running HTTP/3 endpoint: [`Http3::stop`] closes it and waits for its thread.
pub struct Http3 {
    endpoint: Endpoint,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Http3 {
    /// Starts HTTP/3 on UDP `addr` (the HTTPS listener's address) with the certificates of
    /// `resolver`, serving `handler` with `settings`.
    pub fn start<H>(
        addr: SocketAddr,
        resolver: Arc<CertResolver>,
        settings: Arc<Settings>,
        handler: Arc<H>,
    ) -> io::Result<Http3>
    where
        H: Fn(Request) -> Response + Send + Sync + 'static,
    {
        let tls = Config::server_tls_resolving(resolver, &[b"h3"])?;
        let server_config = Config::default().server(tls)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("fibra-http3".into())
            .spawn(move || {
                let rt = match fibra::Runtime::builder().workers(1).build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(move || {
                    let endpoint = UdpSocket::bind(addr)
                        .and_then(|s| Endpoint::server(s, server_config))
                        .map_err(|e| {
                            io::Error::new(e.kind(), format!("HTTP/3 on UDP {addr}: {e}"))
                        });
                    let endpoint = match endpoint {
                        Ok(ep) => ep,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = tx.send(Ok(endpoint.clone()));
                    while let Some(conn) = endpoint.accept() {
                        let (settings, handler) = (settings.clone(), handler.clone());
                        fibra::spawn(move || serve_http3_connection(conn, settings, handler));
                    }
                });
            })?;
        let endpoint = rx.recv().map_err(|_| {
            io::Error::other(format!("HTTP/3 on UDP {addr}: its thread ended at start"))
        })??;
        let addr = endpoint.local_addr()?;
        Ok(Http3 {
            endpoint,
            thread: Some(thread),
            addr,
        })
    }

    /// The UDP address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops taking connections, and waits for the ones open to end (their clients close
    /// them, or they idle out).
    pub fn stop(mut self) {
        self.endpoint.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The `Alt-Svc` value for HTTP/3 on UDP `port` (RFC 7838, RFC 9114 §3.1.1):
/// `h3=":PORT"; ma=86400`.
pub fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400"))
        .expect("digits and ASCII punctuation make a valid field value")
}
