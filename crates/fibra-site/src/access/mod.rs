//! The access checks a route runs before its action: which addresses may come in
//! ([`AccessList`]). Each is built once from the site file and shared by all worker threads;
//! a config reload builds new ones.

mod cidr;

pub use cidr::AccessList;
