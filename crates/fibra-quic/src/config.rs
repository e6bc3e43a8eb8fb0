//! [`Config`]: the transport settings of a QUIC server or client, turned into quinn-proto's
//! configuration types, and the rustls configurations QUIC needs.
//!
//! Every knob has its default in one place ([`Config::default`]). The defaults suit a server
//! on the open Internet: datagrams of at most 1,452 bytes (the largest that fits a 1,500-byte
//! Ethernet MTU under IPv6 with a little room for tunnels; path MTU discovery stops there),
//! 100 concurrent streams each way, a 30 s idle timeout, and no 0-RTT (early data can be
//! replayed, so it stays off until the application layer says which requests are safe).

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    AckFrequencyConfig, ClientConfig, EndpointConfig, IdleTimeout, MtuDiscoveryConfig,
    ServerConfig, TransportConfig, VarInt,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// The largest UDP payload sent by default: 1,500 (Ethernet MTU) − 40 (IPv6 header) − 8 (UDP
/// header). Over IPv4 it leaves 20 bytes spare.
pub const DEFAULT_MAX_UDP_PAYLOAD_SIZE: u16 = 1452;

/// Transport settings for an endpoint and its connections. Build one with
/// `Config::default()`, change the fields you need, then make quinn-proto's types with
/// [`server`](Config::server), [`client`](Config::client) and [`endpoint`](Config::endpoint).
///
/// ```
/// let config = fibra_quic::Config {
///     max_concurrent_bidi_streams: 200,
///     ..fibra_quic::Config::default()
/// };
/// assert_eq!(config.endpoint().get_max_udp_payload_size(), 1452);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// The largest UDP payload this side sends, and tells the peer it accepts (the
    /// `max_udp_payload_size` transport parameter). Path MTU discovery probes up to it and
    /// no further. Default [`DEFAULT_MAX_UDP_PAYLOAD_SIZE`] (1,452); at least 1,200.
    pub max_udp_payload_size: u16,
    /// Whether to look for a path MTU above 1,200 bytes (RFC 9000 §14.3), up to
    /// `max_udp_payload_size`. Default true. It takes effect only where the socket can be set
    /// not to fragment (`UdpSocket::set_dont_fragment`), which the endpoint does.
    pub mtu_discovery: bool,
    /// How many bidirectional streams the peer may have open at once. Default 100.
    pub max_concurrent_bidi_streams: u32,
    /// How many unidirectional streams the peer may have open at once. Default 100 (HTTP/3
    /// needs at least 3: control and the two QPACK streams).
    pub max_concurrent_uni_streams: u32,
    /// How long a connection may go without hearing from the peer before it is dropped
    /// (the smaller of both sides' values applies). Default 30 s.
    pub max_idle_timeout: Duration,
    /// How often to send a PING when nothing else is sent, to keep an idle connection (and
    /// NAT bindings) alive. Default `None`: idle connections time out.
    pub keep_alive_interval: Option<Duration>,
    /// How many bytes the peer may send on one stream before this side reads them (stream
    /// flow control). Default 1,250,000, quinn's (100 Mbit/s at 100 ms).
    pub stream_receive_window: u32,
    /// How many handshakes a server endpoint runs at once before it answers a new client
    /// whose address is not yet validated with a Retry packet (RFC 9000 §8.1.2) instead of
    /// starting a handshake: the client must come back with the token, proving it receives
    /// at the address it claims, before the server spends a handshake's work (and sends up
    /// to 3× what it received) on it. A handshake is in progress from the client's first
    /// packet until it completes or the connection is lost. Default 64; 0: every new client
    /// is sent a Retry first (one more round trip each). Used by [`Endpoint::with_config`].
    ///
    /// [`Endpoint::with_config`]: crate::Endpoint::with_config
    pub max_handshakes_before_retry: usize,
    /// For a group of endpoints on one port ([`Endpoint::server_group`]): whether to ask the
    /// kernel to deliver each datagram to the member that owns its connection (a classic
    /// BPF program on the port's `SO_REUSEPORT` group). Default true. Off, or where the
    /// kernel refuses it, datagrams are spread by the kernel's hash of the addresses and a
    /// member forwards those that are not its own, which costs a hand-over between workers
    /// for every datagram of a client whose address changed.
    ///
    /// [`Endpoint::server_group`]: crate::Endpoint::server_group
    pub steering: bool,
    /// 0-RTT (RFC 9001 §4.6): a client resuming a session may send its first requests with
    /// its first packet, a round trip earlier. Default false. On a server, the TLS
    /// configuration then accepts early data (`max_early_data_size`), a connection is
    /// offered to `accept` as soon as its early data may arrive, and a stream it opens so
    /// says [`RecvStream::is_0rtt`]: early data may be replayed by an attacker, so act on it
    /// only where that does no harm. On a client, `Endpoint::connect_early` may send 0-RTT
    /// data where it holds a session ticket.
    ///
    /// [`RecvStream::is_0rtt`]: crate::RecvStream::is_0rtt
    pub zero_rtt: bool,
    /// How many ack-eliciting packets the peer should receive before it must send an ACK,
    /// asked of it with the ACK frequency extension (draft-ietf-quic-ack-frequency; sent
    /// only to a peer that supports it, as quinn does). Default 10, the ACK decimation
    /// Chrome's QUIC stack uses in a transfer: a client fetching many small responses sends
    /// fewer ACK-only datagrams, which the server need not receive and decrypt. 2 is QUIC's
    /// own rule (RFC 9000 §13.2.2), and no request is sent; 1 asks for an ACK per packet.
    /// A peer still acknowledges within its maximum ACK delay, and at once when packets
    /// arrive out of order. At least 1.
    pub ack_frequency: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_udp_payload_size: DEFAULT_MAX_UDP_PAYLOAD_SIZE,
            mtu_discovery: true,
            max_concurrent_bidi_streams: 100,
            max_concurrent_uni_streams: 100,
            max_idle_timeout: Duration::from_secs(30),
            keep_alive_interval: None,
            stream_receive_window: 1_250_000,
            max_handshakes_before_retry: 64,
            steering: true,
            zero_rtt: false,
            ack_frequency: 10,
        }
    }
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

impl Config {
    /// The per-connection transport settings.
    pub fn transport(&self) -> io::Result<TransportConfig> {
        if self.max_udp_payload_size < 1200 {
            return Err(invalid(format_args!(
                "max_udp_payload_size {} is below QUIC's minimum of 1200",
                self.max_udp_payload_size
            )));
        }
        let idle = IdleTimeout::try_from(self.max_idle_timeout)
            .map_err(|_| invalid("max_idle_timeout is too long"))?;
        let mut t = TransportConfig::default();
        t.max_concurrent_bidi_streams(self.max_concurrent_bidi_streams.into())
            .max_concurrent_uni_streams(self.max_concurrent_uni_streams.into())
            .max_idle_timeout(Some(idle))
            .keep_alive_interval(self.keep_alive_interval)
            .stream_receive_window(self.stream_receive_window.into())
            // Start at QUIC's guaranteed minimum; discovery finds what the path allows.
            .initial_mtu(1200)
            .min_mtu(1200)
            // No application datagrams (RFC 9221): the API has none.
            .datagram_receive_buffer_size(None);
        match self.ack_frequency {
            0 => return Err(invalid("ack_frequency must be at least 1")),
            2 => {}
            n => {
                let mut ack = AckFrequencyConfig::default();
                // quinn-proto's threshold is the packets a peer may receive without
                // acknowledging them: one fewer than the packets per ACK.
                ack.ack_eliciting_threshold((n - 1).into());
                t.ack_frequency_config(Some(ack));
            }
        }
        if self.mtu_discovery {
            let mut mtu = MtuDiscoveryConfig::default();
            mtu.upper_bound(self.max_udp_payload_size);
            t.mtu_discovery_config(Some(mtu));
        } else {
            t.mtu_discovery_config(None);
        }
        Ok(t)
    }

    /// The endpoint's settings: the `max_udp_payload_size` it advertises, and a fresh random
    /// stateless-reset key.
    pub fn endpoint(&self) -> EndpointConfig {
        let mut e = EndpointConfig::default();
        // Out of bounds only below 1200, which `transport` refuses; keep the default then.
        let _ = e.max_udp_payload_size(self.max_udp_payload_size);
        e
    }

    /// A server configuration from a rustls one (see [`Config::server_tls`]), with 0-RTT
    /// as [`Config::zero_rtt`] says (`max_early_data_size` 0, or `u32::MAX` as QUIC
    /// requires) and this config's transport settings. Fails if `tls` lacks TLS 1.3 or the
    /// cipher suite QUIC's Initial packets use (`TLS13_AES_128_GCM_SHA256`).
    pub fn server(&self, mut tls: rustls::ServerConfig) -> io::Result<ServerConfig> {
        tls.max_early_data_size = if self.zero_rtt { u32::MAX } else { 0 };
        let crypto = QuicServerConfig::try_from(tls).map_err(invalid)?;
        let mut config = ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(Arc::new(self.transport()?));
        Ok(config)
    }

    /// A client configuration from a rustls one (see [`Config::client_tls`]), with 0-RTT
    /// as [`Config::zero_rtt`] says (`enable_early_data`) and this config's transport
    /// settings. Sessions resume (and 0-RTT needs a session) across the connections made
    /// with one configuration and its clones: they share rustls's session cache.
    pub fn client(&self, mut tls: rustls::ClientConfig) -> io::Result<ClientConfig> {
        tls.enable_early_data = self.zero_rtt;
        let crypto = QuicClientConfig::try_from(tls).map_err(invalid)?;
        let mut config = ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(self.transport()?));
        Ok(config)
    }

    /// A rustls server configuration for QUIC: TLS 1.3 only, the aws-lc-rs provider (as the
    /// rest of fibra), no client authentication, one certificate chain, and the application
    /// protocols offered in ALPN (QUIC requires one to be agreed, e.g. `b"h3"`).
    pub fn server_tls(
        cert_chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        alpn: &[&[u8]],
    ) -> io::Result<rustls::ServerConfig> {
        let mut tls = tls13_server()?
            .with_single_cert(cert_chain, key)
            .map_err(invalid)?;
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(tls)
    }

    /// As [`Config::server_tls`], with the certificate chosen per handshake by `resolver`
    /// (e.g. by server name, or one a reload replaces while the endpoint runs).
    pub fn server_tls_resolving(
        resolver: Arc<dyn rustls::server::ResolvesServerCert>,
        alpn: &[&[u8]],
    ) -> io::Result<rustls::ServerConfig> {
        let mut tls = tls13_server()?.with_cert_resolver(resolver);
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(tls)
    }

    /// A rustls client configuration for QUIC: TLS 1.3 only, the aws-lc-rs provider, servers
    /// verified against `roots`, and the application protocols to offer in ALPN.
    pub fn client_tls(
        roots: rustls::RootCertStore,
        alpn: &[&[u8]],
    ) -> io::Result<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(invalid)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(tls)
    }
}

/// A rustls server configuration on the aws-lc-rs provider with TLS 1.3 only and no client
/// authentication, waiting for its certificates.
fn tls13_server(
) -> io::Result<rustls::ConfigBuilder<rustls::ServerConfig, rustls::server::WantsServerCert>> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(invalid)?
        .with_no_client_auth())
}

/// A `u64` as a QUIC variable-length integer, saturating at 2⁶² − 1 (the largest it holds).
pub(crate) fn varint(v: u64) -> VarInt {
    VarInt::from_u64(v).unwrap_or(VarInt::MAX)
}
