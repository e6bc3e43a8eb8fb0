//! Helpers shared by the integration tests: a bound on every test, a self-signed certificate
//! with configurations that trust it, and endpoints on loopback.
#![allow(dead_code)]

pub mod nat;
pub mod wire;

use fibra::net::UdpSocket;
use fibra_quic::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use fibra_quic::rustls::RootCertStore;
use fibra_quic::{Config, Connection, Endpoint};
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// A generous bound for anything a test waits on (the machine may be loaded).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The application protocol the tests agree on.
pub const ALPN: &[u8] = b"h3";

/// Runs `f` on its own thread and fails the test if it takes longer than [`PATIENCE`]
/// (a lost wake-up would otherwise hang the suite).
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(Ok(v)) => v,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("{what}: no progress within {PATIENCE:?} (a lost wake-up?)"),
    }
}

/// Runs `f` as the root fiber of a two-worker runtime, within [`PATIENCE`].
pub fn run<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    within(what, move || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(f)
    })
}

/// A self-signed certificate for "localhost", its key, and roots that trust it.
pub struct Certificate {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    pub roots: RootCertStore,
}

pub fn certificate() -> Certificate {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    Certificate {
        chain: vec![cert],
        key,
        roots,
    }
}

/// A server endpoint on loopback with `config` and a fresh certificate; returns it and a
/// client configuration that trusts the certificate.
pub fn server_with(config: &Config) -> (Endpoint, fibra_quic::proto::ClientConfig) {
    let cert = certificate();
    let tls = Config::server_tls(cert.chain, cert.key, &[ALPN]).unwrap();
    let server = Endpoint::with_config(
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        config,
        Some(config.server(tls).unwrap()),
    )
    .unwrap();
    let client_tls = Config::client_tls(cert.roots, &[ALPN]).unwrap();
    (server, config.client(client_tls).unwrap())
}

/// A client configuration that trusts nothing and offers X25519 alone, so that its
/// ClientHello fits the first datagram and a server answers it with its whole first flight:
/// for Initial packets a test captures and replays (the handshake never gets as far as the
/// certificate check).
pub fn one_datagram_hello(config: &Config) -> fibra_quic::proto::ClientConfig {
    use fibra_quic::rustls;
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.kx_groups = vec![rustls::crypto::aws_lc_rs::kx_group::X25519];
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    config.client(tls).unwrap()
}

/// A client endpoint on loopback.
pub fn client() -> Endpoint {
    Endpoint::client(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap()
}

/// Everything for a test of one connection: both endpoints and both ends.
pub struct Pair {
    pub server: Endpoint,
    pub client: Endpoint,
    /// The client's end.
    pub conn: Connection,
    /// The server's end.
    pub accepted: Connection,
}

/// A connection over loopback with `config` on both sides.
pub fn pair_with(config: &Config) -> Pair {
    let (server, client_config) = server_with(config);
    let addr: SocketAddr = server.local_addr().unwrap();
    let s = server.clone();
    let acceptor = fibra::spawn(move || s.accept().expect("a connection"));
    let client = client();
    let conn = client.connect(addr, "localhost", client_config).unwrap();
    let accepted = acceptor.join().unwrap();
    Pair {
        server,
        client,
        conn,
        accepted,
    }
}

/// A connection over loopback with the default configuration.
pub fn pair() -> Pair {
    pair_with(&Config::default())
}

/// `len` bytes that differ from position to position and from `seed` to `seed`.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + i / 251) as u8).wrapping_add(seed))
        .collect()
}

/// Serves `server` in the background: every connection accepted gets a fiber per stream
/// that echoes the stream back, until the connection ends. Returns the count of connections
/// accepted so far.
pub fn serve_echo(server: &Endpoint) -> Arc<AtomicUsize> {
    let server = server.clone();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    fibra::spawn(move || {
        while let Some(conn) = server.accept() {
            count.fetch_add(1, Relaxed);
            fibra::spawn(move || {
                while let Ok((mut send, mut recv)) = conn.accept_bi() {
                    fibra::spawn(move || {
                        let mut all = Vec::new();
                        if recv.read_to_end(&mut all).is_ok() && send.write_all(&all).is_ok() {
                            let _ = send.finish();
                        }
                    });
                }
            });
        }
    });
    accepted
}

/// Dials `addr` from a fresh client endpoint and has one stream echoed; returns whether the
/// echo came back whole.
pub fn echo_once(addr: SocketAddr, config: fibra_quic::proto::ClientConfig) -> bool {
    let client = client();
    let conn = match client.connect(addr, "localhost", config) {
        Ok(conn) => conn,
        Err(e) => panic!("a well-behaved client: {e}"),
    };
    let (mut send, mut recv) = conn.open_bi().unwrap();
    let data = pattern(10_000, 7);
    send.write_all(&data).unwrap();
    send.finish().unwrap();
    let mut back = Vec::new();
    recv.read_to_end(&mut back).unwrap();
    conn.close(0, b"done");
    back == data
}

/// Receives on `socket` until `stop`, handing each datagram and its sender to `each`; looks
/// at `stop` between datagrams (a 20 ms read timeout). The loop of every relay in the tests;
/// `what` names the relay in a panic.
pub fn receive_until(
    socket: &UdpSocket,
    stop: &AtomicBool,
    what: &str,
    mut each: impl FnMut(&[u8], SocketAddr),
) {
    socket
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buf = vec![0u8; 65536];
    while !stop.load(Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => each(&buf[..n], from),
            Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {}
            Err(e) => panic!("{what}: {e}"),
        }
    }
}
