//! HTTPS: TLS (rustls) as a transport of the connection loop.
//!
//! - [`Tls`] (`stream.rs`): the transport, a rustls server session over another transport,
//!   driven by the connection's fiber alone; the handshake runs lazily on its first reads;
//! - [`TlsAcceptor`] (`acceptor.rs`): wraps an [`Acceptor`](crate::Acceptor) (TCP by
//!   default) and a [`rustls::ServerConfig`] you build; [`crate::Server::tls`] puts one
//!   in front of a [`crate::Server::bind`] server's listeners;
//! - [`server_config_from_pem`] (`config.rs`): the usual configuration from a PEM
//!   certificate chain and key, TLS 1.2 and 1.3, ALPN `h2` and `http/1.1`;
//!   [`server_config_with_resolver`] the same over a [`CertResolver`]; both resume sessions
//!   (tickets, and a cache of [`SESSION_CACHE_SIZE`] sessions);
//! - [`CertResolver`] (`resolver.rs`): several certificates chosen by SNI, the first the
//!   default, replaceable while connections run ([`CertResolver::reload`]);
//! - [`validity_warning`] (`validity.rs`): a warning for a certificate file whose leaf has
//!   expired or is not yet valid (the server still uses it);
//! - [`der`] (`der.rs`): the short walk of a DER certificate behind it (its elements and validity
//!   period), shared with fibra-acme, which reads stored certificates' dates and names.
//!
//! ```no_run
//! use fibra_http::{tls, Request, Response, Server};
//!
//! let config = tls::server_config_from_pem("cert.pem", "key.pem")?;
//! Server::bind("0.0.0.0:8443")
//!     .tls(config)
//!     .run(|_req: Request| Response::new("hello over TLS".into()))?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Idle TLS connections wait without a stack like TCP ones, graceful shutdown closes them
//! through the TCP socket's handle, and files are read and encrypted (no `sendfile`).

mod acceptor;
mod alpn_hook;
mod config;
pub mod der;
mod resolver;
mod stream;
mod validity;

pub use acceptor::TlsAcceptor;
pub use alpn_hook::{AlpnHook, ALPN_ACME_TLS};
pub use config::{
    certified_key_from_pem, choose_config_with_resolver, server_config_from_pem,
    server_config_with_resolver, ALPN_H2, ALPN_HTTP1, SESSION_CACHE_SIZE,
};
pub use resolver::CertResolver;
pub use stream::{ChooseConfig, Tls};
pub use validity::validity_warning;
