//! [`AlpnHook`]: connections whose TLS handshake agreed on a given ALPN protocol are not served
//! as HTTP. The hook is told (with the SNI name the client sent) and the connection is closed
//! after the handshake, with `close_notify`.
//!
//! The use it is made for is ACME's `tls-alpn-01` challenge (RFC 8737): the validation server
//! connects offering only ALPN [`ALPN_ACME_TLS`] (`acme-tls/1`) with the domain as SNI, checks
//! the self-signed certificate it is shown (with the `acmeIdentifier` extension), and closes.
//! Choosing that certificate is the certificate resolver's job — rustls hands it the
//! ClientHello, whose ALPN list says `acme-tls/1` — and knowing that a validation connection
//! came is the hook's. The configuration must offer the protocol:
//! [`TlsAcceptor::alpn_hook`](super::TlsAcceptor::alpn_hook) adds it to a fixed one.
//!
//! ```
//! use std::sync::Arc;
//! use fibra_http::tls::{AlpnHook, ALPN_ACME_TLS};
//!
//! let hook = AlpnHook::new(ALPN_ACME_TLS, |server_name| {
//!     log::info!("ACME validation connection for {server_name:?}");
//! });
//! assert_eq!(hook.protocol(), b"acme-tls/1");
//! # let _ = Arc::new(hook);
//! ```

use std::fmt;

/// The ALPN name of ACME's TLS-ALPN-01 validation (RFC 8737 §6.2).
pub const ALPN_ACME_TLS: &[u8] = b"acme-tls/1";

/// Closes connections that agreed on one ALPN protocol after their handshake, telling
/// `on_handshake` their SNI name. See the module docs.
pub struct AlpnHook {
    protocol: Vec<u8>,
    on_handshake: Box<OnHandshake>,
}

/// What an [`AlpnHook`] calls with a taken connection's SNI name.
type OnHandshake = dyn Fn(Option<&str>) + Send + Sync;

impl AlpnHook {
    /// A hook for connections that agree on `protocol`.
    pub fn new(
        protocol: &[u8],
        on_handshake: impl Fn(Option<&str>) + Send + Sync + 'static,
    ) -> AlpnHook {
        AlpnHook {
            protocol: protocol.to_vec(),
            on_handshake: Box::new(on_handshake),
        }
    }

    /// The protocol it takes.
    pub fn protocol(&self) -> &[u8] {
        &self.protocol
    }

    /// Whether a connection that agreed on `alpn` is this hook's; if so, tells it.
    pub(super) fn take(&self, alpn: Option<&[u8]>, server_name: Option<&str>) -> bool {
        let ours = alpn == Some(&self.protocol[..]);
        if ours {
            (self.on_handshake)(server_name);
        }
        ours
    }
}

impl fmt::Debug for AlpnHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlpnHook")
            .field("protocol", &String::from_utf8_lossy(&self.protocol))
            .finish_non_exhaustive()
    }
}
