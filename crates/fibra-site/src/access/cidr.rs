//! [`AccessList`]: a route's `allow`/`deny` lists of networks, checked against the client's
//! address before the route's action runs.
//!
//! nginx evaluates `allow` and `deny` in the order written and stops at the first match; the
//! site file has no order between the two lists, so the rule is fixed instead: an address in
//! `deny` is refused, else an address passes if `allow` is empty or holds it.

use std::net::IpAddr;

use fibra_http::IpNet;

/// The `allow` and `deny` networks of a route.
///
/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, as a dual-stack listener reports an IPv4
/// peer) is checked as the IPv4 address it carries.
///
/// ```
/// use fibra_site::access::AccessList;
///
/// let list = AccessList {
///     allow: vec!["10.0.0.0/8".parse().unwrap()],
///     deny: vec!["10.0.0.13".parse().unwrap()],
/// };
/// assert!(list.permits("10.1.2.3".parse().unwrap()));
/// assert!(list.permits("::ffff:10.1.2.3".parse().unwrap()));
/// assert!(!list.permits("10.0.0.13".parse().unwrap()));
/// assert!(!list.permits("192.0.2.1".parse().unwrap()));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessList {
    /// When non-empty, only addresses in one of these networks pass.
    pub allow: Vec<IpNet>,
    /// Addresses in one of these networks are refused, even when `allow` holds them too.
    pub deny: Vec<IpNet>,
}

impl AccessList {
    /// Whether a client at `ip` may go on: not in `deny`, and in `allow` unless it is empty.
    pub fn permits(&self, ip: IpAddr) -> bool {
        // Canonical once here, so each network compares plain IPv4 or IPv6 bits.
        let ip = ip.to_canonical();
        if self.deny.iter().any(|net| net.contains(ip)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|net| net.contains(ip))
    }

    /// Whether both lists are empty, so that every address passes and the check can be left
    /// out of the request path.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(allow: &[&str], deny: &[&str]) -> AccessList {
        AccessList {
            allow: allow.iter().map(|s| s.parse().unwrap()).collect(),
            deny: deny.iter().map(|s| s.parse().unwrap()).collect(),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn empty_lists_permit_everyone() {
        let l = list(&[], &[]);
        assert!(l.is_empty());
        assert!(l.permits(ip("192.0.2.1")));
        assert!(l.permits(ip("2001:db8::1")));
    }

    #[test]
    fn allow_only_lets_its_networks_in() {
        let l = list(&["10.0.0.0/8", "2001:db8::/32"], &[]);
        assert!(!l.is_empty());
        assert!(l.permits(ip("10.200.0.1")));
        assert!(l.permits(ip("2001:db8:1::1")));
        assert!(!l.permits(ip("11.0.0.1")));
        assert!(!l.permits(ip("2001:db9::1")));
    }

    #[test]
    fn deny_only_keeps_its_networks_out() {
        let l = list(&[], &["192.0.2.0/24"]);
        assert!(!l.permits(ip("192.0.2.77")));
        assert!(l.permits(ip("192.0.3.1")));
        assert!(l.permits(ip("::1")));
    }

    #[test]
    fn deny_wins_over_allow() {
        let l = list(&["10.0.0.0/8"], &["10.9.0.0/16"]);
        assert!(l.permits(ip("10.8.1.1")));
        assert!(!l.permits(ip("10.9.1.1")));
        // The same network in both lists: refused.
        let l = list(&["10.0.0.0/8"], &["10.0.0.0/8"]);
        assert!(!l.permits(ip("10.1.1.1")));
    }

    #[test]
    fn ipv4_mapped_ipv6_is_checked_as_ipv4() {
        let l = list(&["10.0.0.0/8"], &["10.0.0.13"]);
        assert!(l.permits(ip("::ffff:10.1.2.3")));
        assert!(!l.permits(ip("::ffff:10.0.0.13")));
        assert!(!l.permits(ip("::ffff:192.0.2.1")));
        // A mapped address never matches an IPv6 network by its raw bits.
        let l = list(&["::ffff:0:0/96"], &[]);
        assert!(!l.permits(ip("::ffff:10.1.2.3")));
        // Nor does an IPv4-compatible (deprecated, not mapped) address count as IPv4.
        let l = list(&["0.0.0.0/0"], &[]);
        assert!(!l.permits(ip("::10.1.2.3")));
    }
}
