//! [`Endpoint`]: a UDP socket speaking QUIC, with its driver fiber; `connect` and `accept`
//! give [`Connection`]s.

use crate::config::Config;
use crate::connection::Connection;
use crate::driver;
use crate::error::Error;
use crate::group::Membership;
use crate::state::{self, park, ConnRef, Shared, State};
use fibra::net::{UdpSocket, QUIC_BUFFER_SIZE};
use quinn_proto::{ClientConfig, EndpointConfig, ServerConfig};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Instant;

/// A QUIC endpoint: one UDP socket, the connections made through it, and the driver fiber
/// that moves their packets.
///
/// Made inside a fiber, its driver is spawned on that fiber's worker and owns the socket;
/// every other call only locks the shared state and parks on a `Notify`, so the handles
/// (cheap clones, `Send`) work from fibers on any worker. Fibers that use its connections are
/// best spawned on the same worker, [`Endpoint::worker`].
///
/// A server accepts with [`accept`](Endpoint::accept); a client (or a server) dials with
/// [`connect`](Endpoint::connect). [`close`](Endpoint::close) stops new connections (the
/// driver goes on refusing them). Dropping the last handle closes the endpoint too, and the
/// driver ends once the connections still open are closed and drained.
///
/// ```no_run
/// use std::io::{Read, Write};
/// # fn tls() -> (rustls::ServerConfig, rustls::ClientConfig) { unimplemented!() }
/// fibra::run(|| {
///     let (server_tls, client_tls) = tls(); // a certificate, and roots that trust it
///     let config = fibra_quic::Config::default();
///     let socket = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///     let server =
///         fibra_quic::Endpoint::server(socket, config.server(server_tls).unwrap()).unwrap();
///     let addr = server.local_addr().unwrap();
///     fibra::spawn(move || {
///         while let Some(conn) = server.accept() {
///             fibra::spawn(move || {
///                 while let Ok((mut send, mut recv)) = conn.accept_bi() {
///                     let mut request = Vec::new();
///                     recv.read_to_end(&mut request).unwrap();
///                     send.write_all(&request).unwrap();
///                     send.finish().unwrap();
///                 }
///             });
///         }
///     });
///     let socket = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///     let client = fibra_quic::Endpoint::client(socket).unwrap();
///     let conn = client
///         .connect(addr, "localhost", config.client(client_tls).unwrap())
///         .unwrap();
///     let (mut send, mut recv) = conn.open_bi().unwrap();
///     send.write_all(b"ping").unwrap();
///     send.finish().unwrap();
///     let mut reply = Vec::new();
///     recv.read_to_end(&mut reply).unwrap();
///     assert_eq!(reply, b"ping");
/// });
/// ```
#[derive(Clone)]
pub struct Endpoint {
    inner: Arc<EndpointRef>,
}

/// What every `Endpoint` clone shares; dropping the last one closes the endpoint.
struct EndpointRef {
    shared: Arc<Shared>,
}

impl Drop for EndpointRef {
    fn drop(&mut self) {
        self.shared.lock().released = true;
        close(&self.shared);
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local_addr", &self.inner.shared.local_addr)
            .field("worker", &self.inner.shared.worker)
            .finish()
    }
}

impl Endpoint {
    /// A server endpoint on `socket`, accepting connections with `config` (see
    /// [`Config::server`]), with [`Config::default`]'s endpoint settings. It can dial too.
    pub fn server(socket: UdpSocket, config: ServerConfig) -> io::Result<Endpoint> {
        Endpoint::with_config(socket, &Config::default(), Some(config))
    }

    /// A client endpoint on `socket` (bind it to port 0), with [`Config::default`]'s endpoint
    /// settings: it dials with [`connect`](Endpoint::connect) and accepts nothing.
    pub fn client(socket: UdpSocket) -> io::Result<Endpoint> {
        Endpoint::with_config(socket, &Config::default(), None)
    }

    /// An endpoint with `config`'s endpoint settings ([`Config::endpoint`] and
    /// [`Config::max_handshakes_before_retry`]) and, to accept connections, `server` (made
    /// with [`Config::server`], usually from the same `config`). Otherwise as
    /// [`Endpoint::new`].
    pub fn with_config(
        socket: UdpSocket,
        config: &Config,
        server: Option<ServerConfig>,
    ) -> io::Result<Endpoint> {
        Endpoint::start(
            socket,
            config.endpoint(),
            server,
            config.max_handshakes_before_retry,
        )
    }

    /// An endpoint with explicit settings: `endpoint` (see [`Config::endpoint`]) and, to
    /// accept connections, `server`; it sends Retry packets as [`Config::default`] says
    /// ([`Config::max_handshakes_before_retry`]).
    ///
    /// The socket is set up for QUIC: "don't fragment" (so that path MTU discovery may run),
    /// 2 MiB buffers asked for each way ([`QUIC_BUFFER_SIZE`], as far as the kernel allows),
    /// and GRO where the kernel has it. Must be called in a fiber: the driver is spawned on
    /// the caller's worker.
    pub fn new(
        socket: UdpSocket,
        endpoint: EndpointConfig,
        server: Option<ServerConfig>,
    ) -> io::Result<Endpoint> {
        let retry_bound = Config::default().max_handshakes_before_retry;
        Endpoint::start(socket, endpoint, server, retry_bound)
    }

    /// [`Endpoint::new`], with the Retry bound given.
    fn start(
        socket: UdpSocket,
        endpoint: EndpointConfig,
        server: Option<ServerConfig>,
        retry_bound: usize,
    ) -> io::Result<Endpoint> {
        let Some(worker) = fibra::current_worker() else {
            return Err(io::Error::other(
                "fibra_quic::Endpoint must be made in a fiber of a fibra runtime",
            ));
        };
        Prepared::new(socket, worker, endpoint, server, retry_bound, None)?.spawn()
    }

    /// Dials `addr`, checking its certificate against `server_name`, and waits until the
    /// handshake is done. A failure says why ([`Error::HandshakeFailed`]: the certificate did
    /// not verify, the server refused, no ALPN protocol in common, the handshake timed out).
    pub fn connect(
        &self,
        addr: SocketAddr,
        server_name: &str,
        config: ClientConfig,
    ) -> io::Result<Connection> {
        let (conn, _) = self.dial(addr, server_name, config)?;
        conn.wait_connected()?;
        Ok(conn)
    }

    /// Dials `addr` as [`connect`](Endpoint::connect) does, but returns at once where the
    /// client may send 0-RTT data (`config` made with [`Config::zero_rtt`], holding a
    /// session ticket from an earlier connection to this server): streams opened then carry
    /// their data in the first packets, a round trip before the handshake is done. Whether
    /// the server took it shows once the handshake is done
    /// ([`Connection::accepted_0rtt`]); if it did not, the streams opened early fail, and
    /// must be opened again. Without a ticket, waits for the handshake as `connect` does.
    pub fn connect_early(
        &self,
        addr: SocketAddr,
        server_name: &str,
        config: ClientConfig,
    ) -> io::Result<Connection> {
        let (conn, early) = self.dial(addr, server_name, config)?;
        if !early {
            conn.wait_connected()?;
        }
        Ok(conn)
    }

    /// Starts a connection to `addr`; returns it and whether it may send 0-RTT data.
    fn dial(
        &self,
        addr: SocketAddr,
        server_name: &str,
        config: ClientConfig,
    ) -> io::Result<(Connection, bool)> {
        let shared = &self.inner.shared;
        let (id, early) = {
            let mut st = shared.lock();
            if let Some(e) = st.failed() {
                return Err(e);
            }
            if st.closed {
                return Err(Error::EndpointClosed("the endpoint is closed".into()).into());
            }
            let (handle, conn) = st
                .endpoint
                .connect(Instant::now(), config, addr, server_name)
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("QUIC connect to {addr} ({server_name:?}): {e}"),
                    )
                })?;
            let early = conn.has_0rtt();
            (
                st.insert(handle, conn, Some(server_name.to_string()), true),
                early,
            )
        };
        shared.driver.notify_one();
        Ok((self.handle(id), early))
    }

    /// Waits for a client's connection and returns it once its handshake is done (with
    /// [`Config::zero_rtt`], once the client's early data may arrive); `None`
    /// once the endpoint is closed (or its driver has stopped). Several fibers may wait at
    /// once; each connection goes to one of them.
    pub fn accept(&self) -> Option<Connection> {
        let shared = &self.inner.shared;
        loop {
            {
                let mut st = shared.lock();
                if let Some(id) = st.incoming.pop_front() {
                    if let Some(c) = st.conns.get_mut(&id) {
                        c.queued = false;
                        c.held = true;
                    }
                    let more = !st.incoming.is_empty();
                    drop(st);
                    if more {
                        shared.accept.notify_one();
                    }
                    return Some(self.handle(id));
                }
                if st.closed || st.failure.is_some() {
                    drop(st);
                    // Pass it on: every waiter returns `None`.
                    shared.accept.notify_one();
                    return None;
                }
            }
            if park(&shared.accept).is_err() {
                return None;
            }
        }
    }

    /// A handle to connection `id`, which the caller has just marked held.
    fn handle(&self, id: u64) -> Connection {
        let shared = self.inner.shared.clone();
        let waiters = shared
            .lock()
            .conns
            .get(&id)
            .map(|c| c.waiters.clone())
            .unwrap_or_default();
        Connection::new(ConnRef {
            shared,
            id,
            waiters,
        })
    }

    /// Stops accepting: new connection attempts are refused, `accept` returns `None` (at
    /// once, for those waiting), `connect` fails, and connections whose handshake finished
    /// but that nobody accepted yet are closed. Connections already accepted or dialled go
    /// on until they close. The driver runs on (refusing) until the last handle is dropped
    /// and no connection is left. Closing twice does nothing.
    pub fn close(&self) {
        close(&self.inner.shared);
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.inner.shared.local_addr)
    }

    /// The worker the driver runs on: spawn the fibers that use this endpoint's connections
    /// there (`fibra::fiber::Builder::new().worker(endpoint.worker())`) and the shared state
    /// is never contended across threads.
    pub fn worker(&self) -> usize {
        self.inner.shared.worker
    }

    /// How many connections the endpoint holds: open, closing, or waiting to be accepted.
    pub fn open_connections(&self) -> usize {
        self.inner.shared.lock().conns.len()
    }

    /// How many server handshakes are in progress: connections started by a client's first
    /// packet that have neither completed their handshake nor been lost. Compared with
    /// [`Config::max_handshakes_before_retry`] for each new client.
    pub fn handshakes_in_progress(&self) -> usize {
        self.inner.shared.lock().handshakes
    }

    /// How many Retry packets this endpoint has sent (for metrics and tests): one per new
    /// client answered with a Retry while the handshake bound was reached.
    pub fn retries_sent(&self) -> u64 {
        self.inner.shared.lock().retries_sent
    }

    /// How many packets (or GSO trains of them) the socket refused outright, which were
    /// dropped as a network would drop them: a path MTU probe too big for the route, an
    /// unreachable address, a train larger than the kernel takes. QUIC repairs the loss; a
    /// count that keeps growing says something is wrong.
    pub fn packets_refused(&self) -> u64 {
        self.inner
            .shared
            .refused
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The state this endpoint's handles share with its driver.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }
}

/// An endpoint whose socket is set up and whose state is made, before its driver starts.
pub(crate) struct Prepared {
    pub(crate) shared: Arc<Shared>,
    socket: UdpSocket,
    gro: bool,
}

impl Prepared {
    /// Sets `socket` up for QUIC: "don't fragment" (so that path MTU discovery may run), 2
    /// MiB buffers asked for each way ([`QUIC_BUFFER_SIZE`], as far as the kernel allows),
    /// and GRO where the kernel has it; and makes the state for a driver on `worker`.
    pub(crate) fn new(
        socket: UdpSocket,
        worker: usize,
        endpoint: EndpointConfig,
        server: Option<ServerConfig>,
        retry_bound: usize,
        membership: Option<Membership>,
    ) -> io::Result<Prepared> {
        let local_addr = socket.local_addr()?;
        let socket_copy = match membership {
            Some(_) => Some(socket.as_fd().try_clone_to_owned()?),
            None => None,
        };
        // Without "don't fragment", quinn-proto keeps to 1,200-byte datagrams.
        let allow_mtud = socket.set_dont_fragment(true).is_ok();
        // The kernel caps both at its limits; what it grants is enough to work with.
        let _ = socket.set_recv_buffer_size(QUIC_BUFFER_SIZE);
        let _ = socket.set_send_buffer_size(QUIC_BUFFER_SIZE);
        let gro = socket.set_gro(true).unwrap_or(false);
        let proto =
            quinn_proto::Endpoint::new(Arc::new(endpoint), server.map(Arc::new), allow_mtud, None);
        let shared = Arc::new(Shared::new(
            State::new(proto, retry_bound),
            worker,
            local_addr,
            membership,
            socket_copy,
        ));
        Ok(Prepared {
            shared,
            socket,
            gro,
        })
    }

    /// Spawns the driver on its worker.
    pub(crate) fn spawn(self) -> io::Result<Endpoint> {
        let Prepared {
            shared,
            socket,
            gro,
        } = self;
        let driven = shared.clone();
        fibra::fiber::Builder::new()
            .name(format!("quic endpoint {}", shared.local_addr))
            .worker(shared.worker)
            .spawn(move || driver::run(driven, socket, gro))?;
        Ok(Endpoint {
            inner: Arc::new(EndpointRef { shared }),
        })
    }
}

/// [`Endpoint::close`].
fn close(shared: &Shared) {
    let mut wake = Vec::new();
    {
        let mut st = shared.lock();
        if std::mem::replace(&mut st.closed, true) {
            // Closed before: nothing to do but let a released endpoint's driver look.
            drop(st);
            shared.driver.notify_one();
            return;
        }
        let queued: Vec<u64> = st.incoming.drain(..).collect();
        for id in queued {
            if let Some(c) = st.conns.get_mut(&id) {
                c.queued = false;
            }
            st.close_conn(id, 0, b"endpoint closed", &mut wake);
        }
    }
    state::wake(&mut wake);
    shared.accept.notify_one();
    shared.driver.notify_one();
}
