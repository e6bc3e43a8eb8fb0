//! [`IpNet`]: an IP network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or one address),
//! for lists of trusted sources such as [`crate::Server::proxy_protocol_from`].

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::str::FromStr;

/// An IPv4 or IPv6 network: an address and a prefix length. An IPv4 network also matches
/// the same addresses written as IPv4-mapped IPv6 (`::ffff:10.1.2.3`), as a dual-stack
/// listener reports IPv4 peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// The network of `addr`'s first `prefix` bits. Fails (`InvalidInput`) on a prefix
    /// longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> io::Result<IpNet> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{addr}/{prefix}: the prefix is longer than {max} bits"),
            ));
        }
        Ok(IpNet { addr, prefix })
    }

    /// Whether `ip` is in the network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpNet {
    type Err = io::Error;

    /// `ADDR/PREFIX`, or `ADDR` alone (one address). Errors name the text.
    fn from_str(s: &str) -> io::Result<IpNet> {
        let invalid = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{s:?}: {why} (expected ADDR/PREFIX such as 10.0.0.0/8, or ADDR)"),
            )
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| invalid("not an IP address"))?;
        let prefix = match prefix {
            Some(p) => p.parse().map_err(|_| invalid("not a prefix length"))?,
            None if addr.is_ipv4() => 32,
            None => 128,
        };
        IpNet::new(addr, prefix).map_err(|e| invalid(&e.to_string()))
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn contains_by_prefix() {
        assert!(net("10.0.0.0/8").contains(ip("10.255.1.2")));
        assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(net("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(net("192.0.2.7").contains(ip("192.0.2.7")));
        assert!(!net("192.0.2.7").contains(ip("192.0.2.8")));
        assert!(net("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!net("0.0.0.0/0").contains(ip("2001:db8::1")));
        assert!(net("2001:db8::/32").contains(ip("2001:db8:ffff::1")));
        assert!(!net("2001:db8::/32").contains(ip("2001:db9::1")));
        assert!(net("::/0").contains(ip("::1")));
        assert!(net("::1").contains(ip("::1")));
        assert_eq!(net("10.1.0.0/16").to_string(), "10.1.0.0/16");
    }

    #[test]
    fn bad_networks_are_named() {
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x",
            "10.0.0.0/",
            "10.0.0.0/a",
        ] {
            let e = bad.parse::<IpNet>().unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
