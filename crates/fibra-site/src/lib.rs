//! The site file of `fibra serve --config`: virtual hosts, routes (files, balanced proxies,
//! redirects, fixed answers), access rules (`allow`/`deny`, basic auth, rate limits) and
//! response headers, served as one [`fibra_http::Service`].
//!
//! * [`config`]: the file read into a checked [`config::Config`] (every error with
//!   `file:line:column` and its key path), and written back (`--print-config`).
//! * [`Live`]: the running form, swapped whole on reload; what stays across reloads (file
//!   caches, proxies' health, rate limits).
//! * [`SiteService`]: a server's requests to their site (by address and `Host`) and route (by
//!   the decoded path); [`choose_tls`] the TLS configuration by SNI ([`quic_certs`] its
//!   certificates for QUIC); [`SiteLogs`] the access
//!   log per site.

pub mod access;
mod acme_sites;
pub mod action;
mod build;
pub mod config;
pub mod hosts;
mod kept;
mod live;
mod name_table;
pub mod normalize;
pub mod route;
pub mod routes;
mod service;
pub mod sites;
mod upstreams;
mod words;

pub use build::{check_files, log_writable};
pub use live::{Live, Snapshot};
pub use service::{choose_tls, quic_certs, SiteLogs, SiteService, ACME_CHALLENGE_PREFIX};
pub use upstreams::set_upstream_error_hook;
