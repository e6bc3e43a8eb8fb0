//! [`Policy`]: which upstream of a group a request goes to, and the pick itself, over the
//! group's state as plain functions (whether an upstream is up, its requests in flight) so
//! that it is tested without sockets.
//!
//! Every policy scans the upstreams from a start of its own, in list order and wrapping
//! around, and takes the first one that is up (and, on a retry, not the one that failed);
//! least-conn scans them all for the fewest requests in flight instead. So a down upstream's
//! share goes to the next one up.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a request's upstream is chosen among those up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// In turn (one counter per group, shared by the workers). The default.
    #[default]
    RoundRobin,
    /// The one with the fewest requests in flight (counted across the workers); ties go in
    /// turn.
    LeastConn,
    /// By a hash of the client's IP address: one client always reaches the same upstream
    /// while that one is up, the next one up in the list otherwise. A request without a
    /// peer address (not read from a connection) goes in turn.
    IpHash,
    /// The first one up, in the order the upstreams were given (the others are backups).
    First,
}

impl Policy {
    /// Its name in a configuration file: `round_robin`, `least_conn`, `ip_hash` or `first`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round_robin",
            Policy::LeastConn => "least_conn",
            Policy::IpHash => "ip_hash",
            Policy::First => "first",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a [`Policy`] from an unknown name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown balancing policy {:?} (expected round_robin, least_conn, ip_hash or first)",
            self.0
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for Policy {
    type Err = UnknownPolicy;

    /// Parses [`Policy::name`]'s names.
    fn from_str(s: &str) -> Result<Policy, UnknownPolicy> {
        [
            Policy::RoundRobin,
            Policy::LeastConn,
            Policy::IpHash,
            Policy::First,
        ]
        .into_iter()
        .find(|p| p.name() == s)
        .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

/// A well-mixed 64-bit hash of an IP address (MurmurHash3's finalizer), the same in every
/// process; an IPv4-mapped IPv6 address hashes as its IPv4 address.
pub(crate) fn hash_ip(ip: IpAddr) -> u64 {
    fn mix(mut h: u64) -> u64 {
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    match ip {
        IpAddr::V4(v4) => mix(u32::from(v4) as u64),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => mix(u32::from(v4) as u64),
            None => {
                let bits = u128::from(v6);
                mix(mix(bits as u64) ^ (bits >> 64) as u64)
            }
        },
    }
}

/// Picks one of `n` upstreams (`n` ≥ 1) by `policy`: `up(i)` says whether upstream `i` may be
/// chosen, `in_flight(i)` how many requests it has (least-conn only), `client` the client's
/// address (ip-hash only), and `turn` is the group's round-robin counter. `None` when none
/// may be chosen.
pub(crate) fn pick(
    policy: Policy,
    n: usize,
    turn: &AtomicUsize,
    client: impl FnOnce() -> Option<IpAddr>,
    up: impl Fn(usize) -> bool,
    in_flight: impl Fn(usize) -> usize,
) -> Option<usize> {
    let in_turn = || turn.fetch_add(1, Ordering::Relaxed) % n;
    let start = match policy {
        Policy::First => 0,
        Policy::RoundRobin => in_turn(),
        Policy::IpHash => match client() {
            Some(ip) => (hash_ip(ip) % n as u64) as usize,
            None => in_turn(),
        },
        Policy::LeastConn => {
            let start = in_turn();
            let mut best: Option<(usize, usize)> = None;
            for k in 0..n {
                let i = (start + k) % n;
                if !up(i) {
                    continue;
                }
                let load = in_flight(i);
                if best.is_none_or(|(_, least)| load < least) {
                    best = Some((i, load));
                }
            }
            return best.map(|(i, _)| i);
        }
    };
    (0..n).map(|k| (start + k) % n).find(|&i| up(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn names_round_trip() {
        for p in [
            Policy::RoundRobin,
            Policy::LeastConn,
            Policy::IpHash,
            Policy::First,
        ] {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
        }
        let e = "random".parse::<Policy>().unwrap_err();
        assert!(e.to_string().contains("\"random\""), "{e}");
        assert_eq!(Policy::default(), Policy::RoundRobin);
    }

    #[test]
    fn round_robin_goes_in_turn_and_skips_the_down() {
        let turn = AtomicUsize::new(0);
        let all = |_| true;
        let picks: Vec<_> = (0..6)
            .map(|_| pick(Policy::RoundRobin, 3, &turn, || None, all, |_| 0))
            .collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2].map(Some));
        let not_1 = |i| i != 1;
        let picks: Vec<_> = (0..3)
            .map(|_| pick(Policy::RoundRobin, 3, &turn, || None, not_1, |_| 0))
            .collect();
        assert_eq!(picks, [0, 2, 2].map(Some), "1's turn goes to the next up");
        assert_eq!(
            pick(Policy::RoundRobin, 3, &turn, || None, |_| false, |_| 0),
            None
        );
    }

    #[test]
    fn least_conn_takes_the_least_loaded_and_breaks_ties_in_turn() {
        let turn = AtomicUsize::new(0);
        let load = [3, 1, 1, 5];
        let picks: Vec<_> = (0..4)
            .map(|_| pick(Policy::LeastConn, 4, &turn, || None, |_| true, |i| load[i]))
            .collect();
        assert_eq!(picks, [1, 1, 2, 1].map(Some));
        let picks: Vec<_> = (0..2)
            .map(|_| {
                pick(
                    Policy::LeastConn,
                    4,
                    &turn,
                    || None,
                    |i| i != 1,
                    |i| load[i],
                )
            })
            .collect();
        assert_eq!(picks, [2, 2].map(Some));
    }

    #[test]
    fn ip_hash_sticks_to_an_upstream_while_it_is_up() {
        let turn = AtomicUsize::new(0);
        let of = |a: &str, up: &dyn Fn(usize) -> bool| {
            pick(Policy::IpHash, 4, &turn, || ip(a), up, |_| 0).unwrap()
        };
        let first = of("192.0.2.7", &|_| true);
        for _ in 0..10 {
            assert_eq!(of("192.0.2.7", &|_| true), first);
        }
        assert_eq!(of("::ffff:192.0.2.7", &|_| true), first, "mapped as IPv4");
        let next = of("192.0.2.7", &|i| i != first);
        assert_eq!(next, (first + 1) % 4, "the next one up in order");
        let spread: std::collections::BTreeSet<_> = (1..=64)
            .map(|k| of(&format!("10.0.0.{k}"), &|_| true))
            .collect();
        assert_eq!(spread.len(), 4, "clients spread over all upstreams");
        assert_eq!(turn.load(Ordering::Relaxed), 0, "no turn taken");
        pick(Policy::IpHash, 4, &turn, || None, |_| true, |_| 0);
        assert_eq!(turn.load(Ordering::Relaxed), 1, "no address: in turn");
    }

    #[test]
    fn first_takes_the_first_up() {
        let turn = AtomicUsize::new(0);
        assert_eq!(
            pick(Policy::First, 3, &turn, || None, |_| true, |_| 0),
            Some(0)
        );
        assert_eq!(
            pick(Policy::First, 3, &turn, || None, |i| i == 2, |_| 0),
            Some(2)
        );
    }
}
