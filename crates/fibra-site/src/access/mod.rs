//! The access checks a route runs before its action: which addresses may come in
//! ([`AccessList`]) and how often they may ask ([`RateLimit`]). Each is built once from the
//! site file and shared by all worker threads; a config reload builds new ones.

mod cidr;
mod rate_limit;

pub use cidr::AccessList;
pub use rate_limit::{parse_rate, too_many, RateLimit};
