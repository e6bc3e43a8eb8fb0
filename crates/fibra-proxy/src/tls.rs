//! `https://` upstreams: the rustls client side of an upstream connection.
//!
//! The upstream's certificate is verified (the chain up to a trusted root, the name in the
//! URL, the validity dates), always: there is no switch to turn that off. The name in the
//! URL is also the SNI sent (none for an IP address, which is checked against the
//! certificate's IP addresses). Only `http/1.1` is offered in ALPN.
//!
//! The trusted roots are, by default, the system's (`rustls-native-certs`: on Linux the
//! distribution's bundle, such as `/etc/ssl/certs/ca-certificates.crt`, or what `SSL_CERT_FILE`
//! and `SSL_CERT_DIR` name). The system's roots rather than a compiled-in copy of Mozilla's
//! (`webpki-roots`): upstreams are most often internal services whose CA the administrator
//! has added to the system's store, and the store follows the distribution's updates without
//! a rebuild. [`crate::Proxy::upstream_ca`] replaces them with the certificates of a PEM
//! file (an internal CA), as `curl --cacert` does.
//!
//! The handshake runs when the connection is made, within the connect timeout for the
//! socket and the read and write timeouts for the exchange; a certificate that does not
//! verify fails the connection (`502`, with rustls's reason in the error).
//!
//! The end of a session, both ways: an upstream that closes the TCP connection without
//! `close_notify` has possibly been cut short (by a crash, or by an attacker who can reset
//! connections), and for a response body delimited by the close that is the only sign. So
//! it is an error, as in curl and hyper-rustls: such a body reaches the client as an
//! incomplete one (HTTP/1.1: the connection closes before the last chunk; HTTP/2:
//! `RST_STREAM`), and the proxy logs it. A body with a length or chunked framing is complete
//! before the close, so what comes after does not matter. The other way, the proxy sends
//! `close_notify` whenever it closes a session: an evicted or unusable pooled connection,
//! the pool of a worker at shutdown, the end of a tunnel ([`TlsStream`]'s `Drop`).

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

use fibra::net::TcpStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// The client configuration over `roots`, offering HTTP/1.1 only.
fn config(roots: RootCertStore) -> Arc<ClientConfig> {
    let mut config = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// The configuration trusting the system's roots. Fails if none can be loaded.
pub(crate) fn system_roots() -> io::Result<Arc<ClientConfig>> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map_or_else(|| "none found".to_owned(), |e| e.to_string());
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no system root certificates for https upstreams ({why}); name a CA file"),
        ));
    }
    Ok(config(roots))
}

/// The configuration trusting the certificates of the PEM file `path`. Fails (naming the
/// file) if it cannot be read or holds no usable certificate.
pub(crate) fn ca_file(path: &Path) -> io::Result<Arc<ClientConfig>> {
    let named = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {why}", path.display()),
        )
    };
    let pem = std::fs::read(path).map_err(|e| io::Error::new(e.kind(), named(e.to_string())))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| named(format!("not a PEM certificate file: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| named(format!("unusable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(named("no certificate in the file".into()));
    }
    Ok(config(roots))
}

/// The server name to verify (and send as SNI) for the host of an upstream URL.
pub(crate) fn server_name(host: &str) -> io::Result<ServerName<'static>> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(bare.to_owned()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{host:?} is not a TLS server name: {e}"),
        )
    })
}

/// An upstream connection: plain TCP or TLS over it.
pub(crate) enum UpStream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`.
    Tls(Box<TlsStream>),
}

/// The TCP stream under a TLS session, shared with the fiber that watches it for input
/// while the session is a tunnel's (see `tunnel_tls`); only the session's owner reads and
/// writes it.
pub(crate) struct SharedTcp(pub(crate) Arc<TcpStream>);

impl Read for SharedTcp {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl Write for SharedTcp {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        (&*self.0).write(data)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        (&*self.0).write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A TLS session to an upstream. Dropping it (pool eviction, an unusable connection, the
/// worker's pool at shutdown) sends `close_notify` first, as far as it fits in the socket's
/// send buffer without waiting: the upstream then sees a clean end, not a truncation.
pub(crate) struct TlsStream(pub(crate) StreamOwned<ClientConnection, SharedTcp>);

impl TlsStream {
    /// Queues `close_notify` (once) and sends what rustls has queued, without waiting.
    pub(crate) fn close_notify(&mut self) {
        let StreamOwned { conn, sock } = &mut self.0;
        conn.send_close_notify();
        while conn.wants_write() {
            match conn.write_tls(&mut TryWrite(&sock.0)) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
    }
}

impl Drop for TlsStream {
    fn drop(&mut self) {
        self.close_notify();
    }
}

/// Reads only what has arrived (`WouldBlock` otherwise).
pub(crate) struct TryRead<'a>(pub(crate) &'a TcpStream);

impl Read for TryRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

/// Writes only what fits now (`WouldBlock` otherwise).
pub(crate) struct TryWrite<'a>(pub(crate) &'a TcpStream);

impl Write for TryWrite<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.try_write(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The error of a TLS upstream that closed its TCP connection without `close_notify`.
pub(crate) fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the upstream closed the TLS connection without close_notify (truncated)",
    )
}

impl UpStream {
    /// Runs the TLS handshake over `tcp` with `config`, verifying the certificate for `name`.
    pub(crate) fn handshake(
        tcp: TcpStream,
        config: &Arc<ClientConfig>,
        name: &ServerName<'static>,
    ) -> io::Result<UpStream> {
        let mut conn = ClientConnection::new(config.clone(), name.clone())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let mut tcp = SharedTcp(Arc::new(tcp));
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp)?;
        }
        Ok(UpStream::Tls(Box::new(TlsStream(StreamOwned::new(
            conn, tcp,
        )))))
    }

    /// Whether an idle connection is still usable: no end of stream, no stray bytes (for
    /// TLS: no plaintext, no close_notify; records such as session tickets are taken in).
    /// Costs no system call while the reactor has seen nothing on the socket.
    pub(crate) fn is_idle_and_open(&mut self) -> bool {
        match self {
            UpStream::Plain(s) => {
                let mut probe = [0u8; 1];
                matches!(s.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            }
            UpStream::Tls(s) => {
                let StreamOwned { conn, sock } = &mut s.0;
                loop {
                    match conn.read_tls(&mut TryRead(&sock.0)) {
                        Ok(0) => return false,
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => return false,
                    }
                }
                match conn.process_new_packets() {
                    Ok(state) => state.plaintext_bytes_to_read() == 0 && !state.peer_has_closed(),
                    Err(_) => false,
                }
            }
        }
    }
}

impl Read for UpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            UpStream::Plain(s) => s.read(buf),
            // A TCP end without close_notify is an error (`truncated`), not an end of
            // stream: for a body delimited by the close it is the only sign of a cut (an
            // attacker's, or a crash's), as curl, hyper and rustls itself take it.
            UpStream::Tls(s) => match s.0.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(truncated()),
                r => r,
            },
        }
    }
}

impl Write for UpStream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            UpStream::Plain(s) => s.write(data),
            UpStream::Tls(s) => s.0.write(data),
        }
    }
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            UpStream::Plain(s) => s.write_all(data),
            UpStream::Tls(s) => {
                s.0.write_all(data)?;
                s.0.flush()
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            UpStream::Plain(s) => s.flush(),
            UpStream::Tls(s) => s.0.flush(),
        }
    }
}
