//! The access checks a route runs before its action: which addresses may come in
//! ([`AccessList`]), who they must log in as ([`BasicAuth`]) and how often they may ask
//! ([`RateLimit`]). Each is built once from the site file and shared by all worker threads;
//! a config reload builds new ones.
//!
//! They are cheap where it matters: a permitted address is a scan of a few networks, a client
//! that logged in before costs one keyed hash and a lock-free table lookup, and a rate check
//! one hash and one uncontended mutex (see `tests/access_bench.rs` for the figures).
//!
//! A route would run them in that order — address, then rate, then password — so that
//! refused addresses and floods never reach the expensive password hash:
//!
//! ```
//! use std::net::IpAddr;
//! use std::time::Instant;
//! use fibra_http::Response;
//! use fibra_site::access::{too_many, AccessList, BasicAuth, RateLimit};
//! use http::{HeaderMap, StatusCode};
//!
//! fn admit(
//!     list: &AccessList,
//!     limit: &RateLimit,
//!     auth: &BasicAuth,
//!     peer: IpAddr,
//!     headers: &HeaderMap,
//! ) -> Result<(), Response> {
//!     if !list.permits(peer) {
//!         let mut refused = Response::new("403 Forbidden\n".into());
//!         *refused.status_mut() = StatusCode::FORBIDDEN;
//!         return Err(refused);
//!     }
//!     limit.check(peer, Instant::now()).map_err(too_many)?;
//!     auth.check(headers)
//! }
//! ```

mod basic_auth;
mod cidr;
mod credential_cache;
mod htpasswd;
mod rate_limit;
mod stored_hash;

pub use basic_auth::{BasicAuth, REFUSED_ENTRIES, REFUSED_FOR, VERIFIED_ENTRIES};
pub use cidr::AccessList;
pub use htpasswd::HtpasswdError;
pub use rate_limit::{parse_rate, too_many, RateLimit};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_shared_by_worker_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<AccessList>();
        shared::<BasicAuth>();
        shared::<RateLimit>();
    }
}
