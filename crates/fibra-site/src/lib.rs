//! The site file of `fibra serve --config`: virtual hosts, routes (files, balanced proxies,
//! redirects, fixed answers), access rules (`allow`/`deny`, basic auth, rate limits) and
//! response headers, served as one [`fibra_http::Service`].

pub mod access;
pub mod config;
