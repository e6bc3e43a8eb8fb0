//! Ports for servers a test starts later.
//!
//! Binding port 0, reading the port and dropping the socket races: the kernel hands the same
//! port to the next `bind(0)` or outgoing `connect` of any process, and a busy test run makes
//! hundreds of those. So ports come from below the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`), which the kernel never hands out by itself,
//! from a counter that each process starts at a place of its own. A port is given only if it
//! can be bound for TCP and for UDP on 127.0.0.1 (a DNS server or an HTTP/3 site needs both).

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The lowest port handed out: above the well-known and common service ports.
const LOWEST: u32 = 10_000;

/// A loopback port that a server can bind later, for TCP and UDP.
///
/// The port is below the kernel's ephemeral range when that range leaves room (at least
/// 1,000 ports from 10,000 up), so no `bind(0)` or `connect` elsewhere takes it; tests in
/// one process never get the same port twice. Where the range leaves no room, the port is
/// one the kernel picks, as with `bind("127.0.0.1:0")`.
///
/// # Panics
/// When 127.0.0.1 cannot be bound at all.
pub fn spare_port() -> u16 {
    // The range is read once; the counter starts at a place of this process's own, so that
    // test binaries run one after another do not walk the same ports while the previous
    // one's sockets are in TIME_WAIT.
    static RANGE: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    static NEXT: OnceLock<AtomicU32> = OnceLock::new();
    let Some((low, high)) = *RANGE.get_or_init(spare_range) else {
        return kernel_port();
    };
    let span = high - low;
    let next = NEXT.get_or_init(|| AtomicU32::new(std::process::id().wrapping_mul(7_919) % span));
    for _ in 0..span {
        let port = low + next.fetch_add(1, Ordering::Relaxed) % span;
        let port = u16::try_from(port).expect("ports are below 65,536");
        if bindable(port) {
            return port;
        }
    }
    kernel_port()
}

/// [`spare_port`] on 127.0.0.1.
pub fn spare_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], spare_port()))
}

/// Ports `LOWEST..` up to the ephemeral range's start, when there are at least 1,000.
fn spare_range() -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let ephemeral_low: u32 = text.split_whitespace().next()?.parse().ok()?;
    (ephemeral_low >= LOWEST + 1_000).then_some((LOWEST, ephemeral_low))
}

fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok() && UdpSocket::bind(("127.0.0.1", port)).is_ok()
}

fn kernel_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("binding 127.0.0.1")
        .port()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_outside_the_ephemeral_range() {
        let ports: Vec<u16> = (0..50).map(|_| spare_port()).collect();
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ports.len(), "a port given twice: {ports:?}");
        for &port in &ports {
            assert!(bindable(port), "port {port} cannot be bound");
        }
        if let Some((low, high)) = spare_range() {
            for &port in &ports {
                assert!(
                    (low..high).contains(&u32::from(port)),
                    "{port} outside {low}..{high}"
                );
            }
        }
    }

    #[test]
    fn a_port_in_use_is_skipped() {
        let first = spare_port();
        // Hold the next ports the counter will try; the one given must be another.
        let held: Vec<TcpListener> = (1..=3)
            .filter_map(|d| TcpListener::bind(("127.0.0.1", first.wrapping_add(d))).ok())
            .collect();
        let next = spare_port();
        assert!(held.iter().all(|l| l.local_addr().unwrap().port() != next));
        assert!(bindable(next));
    }
}
