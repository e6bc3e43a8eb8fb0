//! [`RateLimit`]: requests per client address, as a GCRA (the token bucket written as one
//! time per client), in a bounded table shared by all worker threads; [`too_many`] builds the
//! 429 and [`parse_rate`] reads the site file's `5/s`, `100/m`, `10/h`.
//!
//! Each client has a *theoretical arrival time* (TAT): the time at which its bucket would be
//! full again. A request at `now` moves it to `max(TAT, now) + interval`; it passes if that is
//! at most `burst × interval` ahead of `now`, and is refused (TAT unchanged) otherwise, with
//! the wait until it would pass as the retry-after.
//!
//! The table is fixed at construction: `max_clients` slots in sets of 8, each set
//! behind its own mutex, so two threads contend only when their clients hash (with a random
//! key, so clients cannot choose) to the same set. A client not in its set takes the slot
//! with the smallest TAT — an empty one, a full bucket (which is the same as no entry), or
//! else the one closest to full — so the table never grows and forgets the least.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use fibra_http::{Response, ResponseBody};
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

/// Slots per set of the client table: a newcomer replaces one of these.
const WAYS: usize = 8;

/// One set of the client table.
#[derive(Default)]
struct Set {
    /// Client addresses as IPv6 bits (IPv4 as IPv4-mapped).
    keys: [u128; WAYS],
    /// Each client's TAT in nanoseconds since the table's birth; at or before `now` means a
    /// full bucket, and 0 an unused slot.
    tats: [u64; WAYS],
}

/// A request rate limit per client address, process-wide. See the module docs.
///
/// ```
/// use std::time::{Duration, Instant};
/// use fibra_site::access::RateLimit;
///
/// let limit = RateLimit::new(1.0, 2, 10_000); // 1/s, bursts of 2
/// let ip = "192.0.2.1".parse().unwrap();
/// let t = Instant::now();
/// assert!(limit.check(ip, t).is_ok());
/// assert!(limit.check(ip, t).is_ok());
/// assert_eq!(limit.check(ip, t), Err(Duration::from_secs(1)));
/// assert!(limit.check(ip, t + Duration::from_secs(1)).is_ok());
/// ```
pub struct RateLimit {
    /// Nanoseconds between requests at the steady rate (≥ 1).
    interval: u64,
    /// `burst × interval`: how far ahead of now a client's TAT may run.
    tolerance: u64,
    sets: Box<[Mutex<Set>]>,
    /// Keyed with random bits, so clients cannot aim at one set to push others out.
    hasher: RandomState,
    /// The zero of the TAT clock.
    born: Instant,
}

impl RateLimit {
    /// `rate_per_sec` requests per second on average per client, up to `burst` at once (0 is
    /// taken as 1), tracking up to `max_clients` clients (rounded up to a multiple of
    /// 8; about 26 bytes each, allocated here).
    ///
    /// # Panics
    ///
    /// If `rate_per_sec` is not a positive finite number ([`parse_rate`] gives only those).
    pub fn new(rate_per_sec: f64, burst: u32, max_clients: usize) -> RateLimit {
        assert!(
            rate_per_sec.is_finite() && rate_per_sec > 0.0,
            "RateLimit::new: the rate must be positive and finite, not {rate_per_sec}"
        );
        // Clamped so that a TAT stays far from overflow for any rate.
        let interval = (1e9 / rate_per_sec)
            .round()
            .clamp(1.0, (u64::MAX >> 2) as f64) as u64;
        let sets = max_clients.div_ceil(WAYS).max(1);
        RateLimit {
            interval,
            tolerance: interval.saturating_mul(u64::from(burst.max(1))),
            sets: (0..sets).map(|_| Mutex::new(Set::default())).collect(),
            hasher: RandomState::new(),
            born: Instant::now(),
        }
    }

    /// How many clients the table holds at most.
    pub fn capacity(&self) -> usize {
        self.sets.len() * WAYS
    }

    /// Counts a request from `ip` at `now`: `Ok` if it is within the limit, else how long the
    /// client must wait before its next request would pass. An IPv4-mapped IPv6 address is
    /// the same client as its IPv4 address.
    #[inline]
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let now = now.saturating_duration_since(self.born).as_nanos() as u64;
        let key = match ip.to_canonical() {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6),
        };
        let hash = self.hasher.hash_one(key);
        // Multiply-shift: the hash's high bits pick the set, without a division.
        let index = ((u128::from(hash) * self.sets.len() as u128) >> 64) as usize;
        let mut set = self.sets[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (way, tat) = match set.keys.iter().position(|&k| k == key) {
            Some(way) => (way, set.tats[way]),
            None => (oldest(&set.tats), 0),
        };
        let next = tat.max(now).saturating_add(self.interval);
        let ahead = next - now;
        if ahead > self.tolerance {
            return Err(Duration::from_nanos(ahead - self.tolerance));
        }
        set.keys[way] = key;
        set.tats[way] = next;
        Ok(())
    }
}

/// The slot with the smallest TAT: the fullest bucket.
fn oldest(tats: &[u64; WAYS]) -> usize {
    let mut way = 0;
    for (i, &tat) in tats.iter().enumerate().skip(1) {
        if tat < tats[way] {
            way = i;
        }
    }
    way
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("interval", &Duration::from_nanos(self.interval))
            .field("burst", &(self.tolerance / self.interval))
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// `429 Too Many Requests` with `Retry-After` in whole seconds (rounded up, at least 1) and a
/// short text.
pub fn too_many(retry_after: Duration) -> Response {
    let secs = retry_after
        .as_secs()
        .saturating_add(u64::from(retry_after.subsec_nanos() > 0))
        .max(1);
    let body = ResponseBody::from("429 Too Many Requests: slow down and retry later\n")
        .with_content_type(HeaderValue::from_static("text/plain; charset=utf-8"));
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// Requests per second from the site file's `N/s`, `N/m` or `N/h` (`N` a positive number,
/// fractions allowed; nginx's `Nr/s` is taken too). The error names the text.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let invalid = |why: &str| format!("rate {text:?}: {why} (expected such as 5/s, 100/m, 10/h)");
    let (count, unit) = text
        .trim()
        .split_once('/')
        .ok_or_else(|| invalid("no `/`"))?;
    let count = count.trim_end();
    let count = count.strip_suffix('r').unwrap_or(count);
    let count: f64 = count.parse().map_err(|_| invalid("not a number"))?;
    if !count.is_finite() || count <= 0.0 {
        return Err(invalid("the count must be positive"));
    }
    let per = match unit.trim_start() {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(invalid("the unit is not s, m or h")),
    };
    Ok(count / per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_burst_then_refusals_with_the_wait() {
        let limit = RateLimit::new(2.0, 3, 100);
        let a = ip("192.0.2.1");
        let t = Instant::now();
        for _ in 0..3 {
            assert_eq!(limit.check(a, t), Ok(()));
        }
        assert_eq!(limit.check(a, t), Err(ms(500)));
        assert_eq!(limit.check(a, t + ms(100)), Err(ms(400)));
        // A refusal does not push the wait further.
        assert_eq!(limit.check(a, t + ms(100)), Err(ms(400)));
        assert_eq!(limit.check(a, t + ms(500)), Ok(()));
        assert_eq!(limit.check(a, t + ms(500)), Err(ms(500)));
    }

    #[test]
    fn the_bucket_refills_over_time() {
        let limit = RateLimit::new(2.0, 3, 100);
        let a = ip("2001:db8::1");
        let t = Instant::now();
        for _ in 0..3 {
            assert!(limit.check(a, t).is_ok());
        }
        assert!(limit.check(a, t).is_err());
        // One token back after 500 ms, two after 1 s, and never more than the burst.
        let t1 = t + ms(1000);
        assert!(limit.check(a, t1).is_ok());
        assert!(limit.check(a, t1).is_ok());
        assert!(limit.check(a, t1).is_err());
        let t2 = t1 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(limit.check(a, t2).is_ok());
        }
        assert_eq!(limit.check(a, t2), Err(ms(500)));
    }

    #[test]
    fn steady_traffic_at_the_rate_passes() {
        let limit = RateLimit::new(10.0, 1, 100);
        let a = ip("192.0.2.9");
        let t = Instant::now();
        for i in 0..100 {
            assert!(limit.check(a, t + ms(100 * i)).is_ok(), "request {i}");
        }
        assert!(limit.check(a, t + ms(100 * 99 + 50)).is_err());
    }

    #[test]
    fn clients_are_independent() {
        let limit = RateLimit::new(1.0, 1, 100);
        let t = Instant::now();
        assert!(limit.check(ip("192.0.2.1"), t).is_ok());
        assert!(limit.check(ip("192.0.2.1"), t).is_err());
        assert!(limit.check(ip("192.0.2.2"), t).is_ok());
        assert!(limit.check(ip("2001:db8::1"), t).is_ok());
        // The mapped form is the same client as the IPv4 address.
        assert!(limit.check(ip("::ffff:192.0.2.2"), t).is_err());
    }

    #[test]
    fn slow_and_fractional_rates() {
        let limit = RateLimit::new(0.5, 1, 10);
        let a = ip("192.0.2.1");
        let t = Instant::now();
        assert!(limit.check(a, t).is_ok());
        assert_eq!(limit.check(a, t), Err(Duration::from_secs(2)));
        // Burst 0 is taken as 1.
        let limit = RateLimit::new(1.0 / 3600.0, 0, 10);
        assert!(limit.check(a, t).is_ok());
        assert_eq!(limit.check(a, t), Err(Duration::from_secs(3600)));
        // A huge rate and burst do not overflow.
        let limit = RateLimit::new(1e300, u32::MAX, 10);
        assert!(limit.check(a, t).is_ok());
        let limit = RateLimit::new(1e-300, u32::MAX, 10);
        assert!(limit.check(a, t).is_ok());
        assert!(limit.check(a, t).is_ok());
    }

    #[test]
    #[should_panic(expected = "positive")]
    fn a_zero_rate_panics() {
        RateLimit::new(0.0, 1, 10);
    }

    #[test]
    fn the_table_stays_bounded_and_keeps_busy_clients() {
        let limit = RateLimit::new(1.0, 5, 1000);
        assert_eq!(limit.capacity(), 1000);
        let t = Instant::now();
        let heavy = ip("198.51.100.7");
        for _ in 0..5 {
            assert!(limit.check(heavy, t).is_ok());
        }
        for n in 0..100_000u32 {
            let client = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n));
            assert!(limit.check(client, t + ms(1)).is_ok());
        }
        assert_eq!(limit.capacity(), 1000);
        assert_eq!(limit.sets.len(), 125);
        // Its TAT is the furthest ahead in its set, so the flood did not evict it.
        assert!(limit.check(heavy, t + ms(2)).is_err());
    }

    #[test]
    fn full_buckets_are_replaced_first() {
        // One set: eight clients fill it.
        let limit = RateLimit::new(1.0, 2, 1);
        let t = Instant::now();
        let client = |n: u8| IpAddr::from([192, 0, 2, n]);
        assert!(limit.check(client(0), t).is_ok());
        assert!(limit.check(client(0), t).is_ok());
        for n in 1..8 {
            assert!(limit.check(client(n), t + Duration::from_secs(10)).is_ok());
        }
        // Client 0's bucket is full again by now, so the newcomer takes its slot...
        assert!(limit.check(client(8), t + Duration::from_secs(10)).is_ok());
        // ...and the others are all still there with one token spent.
        let later = t + Duration::from_secs(10);
        for n in 1..9 {
            assert!(limit.check(client(n), later).is_ok());
            assert!(limit.check(client(n), later).is_err(), "client {n}");
        }
    }

    #[test]
    fn threads_share_one_limit() {
        let limit = RateLimit::new(1.0, 1000, 100);
        let t = Instant::now();
        let passed = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        if limit.check(ip("192.0.2.1"), t).is_ok() {
                            passed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(passed.into_inner(), 1000);
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        for (wait, header) in [
            (Duration::ZERO, "1"),
            (Duration::from_nanos(1), "1"),
            (Duration::from_secs(1), "1"),
            (ms(1001), "2"),
            (Duration::from_secs(3600), "3600"),
        ] {
            let r = too_many(wait);
            assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(r.headers()[RETRY_AFTER], header, "{wait:?}");
            assert!(!r.body().as_bytes().unwrap().is_empty());
        }
    }

    #[test]
    fn a_client_costs_about_26_bytes() {
        let per_set = std::mem::size_of::<Mutex<Set>>();
        assert!(per_set <= 26 * WAYS, "{per_set}");
    }

    #[test]
    fn rates_parse() {
        assert_eq!(parse_rate("5/s"), Ok(5.0));
        assert_eq!(parse_rate("120/m"), Ok(2.0));
        assert_eq!(parse_rate("36/h"), Ok(0.01));
        assert_eq!(parse_rate(" 10r/s "), Ok(10.0));
        assert_eq!(parse_rate("0.5/s"), Ok(0.5));
        for bad in [
            "5", "/s", "x/s", "0/s", "-1/s", "5/d", "5/", "inf/s", "NaN/m",
        ] {
            let e = parse_rate(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }
}
