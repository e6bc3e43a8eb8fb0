//! The PROXY protocol (HAProxy's, versions 1 and 2), as a transport over another one: behind
//! a balancer that opens each connection with a PROXY header (HAProxy's `send-proxy` or
//! `send-proxy-v2`, AWS NLB, nginx's `proxy_protocol on`), the client's own address is in
//! that header, not in the socket. [`ProxyProtocol`] reads the header before anything else
//! and then passes the stream through; its [`crate::Transport::peer_addr`] is the client's address,
//! so requests ([`crate::Request::peer_addr`]) and the access log see it.
//!
//! - The header is parsed by the `ppp` crate; v1 and v2 are told apart by their first bytes.
//! - A connection whose first bytes are not a valid header (a missing header, a wrong
//!   signature, a malformed address, a v2 header announcing more than [`MAX_HEADER_BYTES`],
//!   a stream that ends inside the header) is closed without an answer: a server configured
//!   for the PROXY protocol must not take a client's bytes for a header, nor answer a client
//!   that bypassed the balancer.
//! - The header must arrive within the header timeout (together with the first request head:
//!   one deadline from the accept, like TLS's handshake): a connection still without one at
//!   the deadline is closed.
//! - `LOCAL` (v2, a balancer's own health check) and `UNKNOWN` (v1), unspecified and
//!   Unix-socket addresses keep the socket's own peer address, as the specification says.
//!   TLVs are skipped.
//!
//! - Optionally only some sources are balancers ([`crate::Server::proxy_protocol_from`],
//!   HAProxy's `tcp-request connection expect-proxy layer4 if { src ... }`): a connection
//!   from a trusted network must start with a header as above, one from elsewhere is served
//!   as a plain connection with its socket's address (bytes shaped like a PROXY header are
//!   then a malformed request, never believed). So a balancer and direct clients
//!   (a health probe, say) can share a port, and nobody outside the trusted networks can
//!   claim an address. nginx's `set_real_ip_from` instead still requires the header from
//!   everyone and ignores its address from others; refusing such connections outright is
//!   a firewall's job.
//!
//! As a library: [`crate::Server::proxy_protocol`] wraps every worker's acceptor (before
//! [`crate::Server::tls`], if the balancer passes TLS through: the header comes first, in the
//! clear):
//!
//! ```no_run
//! use fibra_http::{Request, Response, Server};
//!
//! Server::bind("127.0.0.1:8080")
//!     .proxy_protocol()
//!     .run(|req: Request| Response::new(format!("you are {:?}\n", req.peer_addr()).into()))?;
//! # Ok::<(), std::io::Error>(())
//! ```

mod acceptor;
mod parse;
mod transport;

pub use acceptor::ProxyProtocolAcceptor;
pub use parse::{parse_header, Header, MAX_HEADER_BYTES};
pub use transport::ProxyProtocol;
