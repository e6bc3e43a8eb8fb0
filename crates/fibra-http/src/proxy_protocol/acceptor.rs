//! [`ProxyProtocolAcceptor`]: the acceptor whose connections start with a PROXY header, from
//! every source or from trusted networks only, and the [`Server`] methods that put one in front
//! of a server's acceptor.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::ProxyProtocol;
use crate::acceptor::{Acceptor, TcpAcceptor};
use crate::ip_net::IpNet;
use crate::server::Server;
use crate::transport::Transport;

/// Accepts connections from `A` (TCP by default) that start with a PROXY header: each is a
/// [`ProxyProtocol`] transport, whose header is read in the connection's fiber.
#[derive(Debug, Clone)]
pub struct ProxyProtocolAcceptor<A = TcpAcceptor> {
    inner: A,
    /// Sources that send a header (`None`: all).
    trusted: Option<Arc<[IpNet]>>,
}

impl<A: Acceptor> ProxyProtocolAcceptor<A> {
    /// Expects a PROXY header on every connection of `inner`.
    pub fn new(inner: A) -> ProxyProtocolAcceptor<A> {
        ProxyProtocolAcceptor {
            inner,
            trusted: None,
        }
    }

    /// Expects a PROXY header on the connections of `inner` from an address in `trusted`;
    /// the others (and those without an IP address, over a Unix socket) are served without
    /// one ([`ProxyProtocol::passthrough`]). See [`crate::proxy_protocol`].
    pub fn trusting(inner: A, trusted: Arc<[IpNet]>) -> ProxyProtocolAcceptor<A> {
        ProxyProtocolAcceptor {
            inner,
            trusted: Some(trusted),
        }
    }

    /// The acceptor underneath.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

impl<A: Acceptor> Acceptor for ProxyProtocolAcceptor<A> {
    type Io = ProxyProtocol<A::Io>;

    fn accept(&self) -> io::Result<ProxyProtocol<A::Io>> {
        let io = self.inner.accept()?;
        let Some(trusted) = &self.trusted else {
            return Ok(ProxyProtocol::new(io));
        };
        match io.peer_addr() {
            Some(peer) if trusted.iter().any(|net| net.contains(peer.ip())) => {
                Ok(ProxyProtocol::new(io))
            }
            _ => Ok(ProxyProtocol::passthrough(io)),
        }
    }

    fn set_accept_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.set_accept_timeout(timeout)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.inner.local_addr()
    }
}

impl<A: Acceptor> Server<A> {
    /// Expects a PROXY protocol header (v1 or v2) at the start of every connection, and
    /// takes the client's address from it (see [`crate::proxy_protocol`]). Call it before
    /// [`Server::tls`] when the balancer passes TLS through.
    pub fn proxy_protocol(self) -> Server<ProxyProtocolAcceptor<A>> {
        self.wrap_acceptor(ProxyProtocolAcceptor::new)
    }

    /// [`Server::proxy_protocol`] for connections from the `trusted` networks only: the
    /// others are served without a header, with their socket's address (HAProxy's
    /// `expect-proxy layer4 if { src ... }`; see [`crate::proxy_protocol`]).
    pub fn proxy_protocol_from(
        self,
        trusted: impl IntoIterator<Item = IpNet>,
    ) -> Server<ProxyProtocolAcceptor<A>> {
        let trusted: Arc<[IpNet]> = trusted.into_iter().collect();
        self.wrap_acceptor(move |a| ProxyProtocolAcceptor::trusting(a, trusted.clone()))
    }
}
