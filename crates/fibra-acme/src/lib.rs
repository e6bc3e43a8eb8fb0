//! Automatic HTTPS for fibra: an ACME (RFC 8555) client that obtains certificates from a CA
//! such as Let's Encrypt, keeps them in storage, and renews them, each on a background
//! thread, handing every new certificate to the server as a rustls
//! [`CertifiedKey`](rustls::sign::CertifiedKey).
//!
//! ```no_run
//! use fibra_acme::{Acme, AcmeConfig};
//!
//! let mut config = AcmeConfig::new(fibra_acme::LETS_ENCRYPT, "/var/lib/fibra/acme");
//! config.contact = vec!["mailto:admin@example.com".into()];
//! let acme = Acme::new(config)?;
//! let managed = acme.manage(vec!["example.com".into(), "www.example.com".into()], |key| {
//!     // Swap `key` into the server's certificate resolver.
//! #   drop(key);
//! })?;
//! println!("{:?}", managed.status().served);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # What the server does
//!
//! - Serve whatever `on_cert` hands over, for the names of that certificate (the first call
//!   comes before [`Acme::manage`] returns: the stored certificate, or a self-signed one).
//! - Answer http-01 on port 80: `GET /.well-known/acme-challenge/{token}` with
//!   [`Acme::http01`]`(token)` as the body (`200`), or `404` when it is `None`.
//! - Answer tls-alpn-01 on port 443: [`AcmeResolver`] (or [`offers_acme_tls`] and
//!   [`challenge_server_config`]) shows the challenge certificate to ClientHellos offering
//!   ALPN [`ACME_TLS_ALPN`], and fibra-http's `AlpnHook` closes those connections after the
//!   handshake.
//!
//! A challenge kind the server cannot answer should be left out of
//! [`AcmeConfig::challenges`].
//!
//! # Why a client of our own, blocking, on plain threads
//!
//! ACME traffic is a few small requests per certificate every few weeks. It runs on its
//! own `std::thread` per certificate, never on the server's worker fibers, where a blocking
//! request would stall every connection of that worker. The client is this crate's
//! (about 2,500 lines with their docs): HTTP/1.1 over `std::net::TcpStream` and a rustls
//! `StreamOwned`,
//! JWS ES256 with aws-lc-rs, CSRs and the challenge certificate with rcgen, JSON with
//! serde_json. The existing Rust clients are asynchronous (instant-acme brings tokio, hyper
//! and hyper-rustls; others bring reqwest), a second I/O stack in a server that has its own.
//! The crypto is the server's: rustls's aws-lc-rs provider, already built for fibra-http.
//!
//! # Storage
//!
//! Under [`AcmeConfig::storage`], one folder per directory URL (an account belongs to one
//! server) holding the account key (`account.key`, 0600), its URL once registered
//! (`account.json`), and `certificates/<first name>[+<hash of the names>]/` with `cert.pem`
//! (the chain) and `key.pem` (0600). Folders are 0700. A restart serves the stored
//! certificate at once, without contacting the CA until it is due.
//!
//! # Not covered
//!
//! dns-01 (and so wildcard certificates), IP address identifiers, External Account Binding,
//! ACME Renewal Information (RFC 9773: renewal is at a fixed fraction of the lifetime),
//! revocation, account key rollover and contact updates.

mod certinfo;
mod challenges;
mod client;
mod config;
mod http;
mod jws;
mod keys;
mod manager;
mod order;
mod problem;
mod resolver;
mod retry;
mod stop;
mod storage;

pub use challenges::ChallengeKind;
pub use config::{AcmeConfig, LETS_ENCRYPT, LETS_ENCRYPT_STAGING};
pub use manager::{Acme, Managed, Served, Status};
pub use problem::Problem;
pub use resolver::{challenge_server_config, offers_acme_tls, AcmeResolver, ACME_TLS_ALPN};
