//! Timings of the access checks' hot paths: a cached Basic auth check and a rate-limit check,
//! on one thread and on two. Ignored by default; run in release and read the ns/op lines:
//!
//! ```text
//! cargo test --release -p fibra-site --test access_bench -- --ignored --nocapture --test-threads 1
//! ```
//!
//! The goal is at most 300 ns per check on one thread. Nothing here asserts a time (the
//! machines that run the tests vary); each test only checks that the answers are right.

use std::hash::BuildHasher;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use base64::Engine;
use fibra_site::access::{AccessList, BasicAuth, RateLimit};
use http::header::{ACCEPT, AUTHORIZATION, HOST, USER_AGENT};
use http::{HeaderMap, HeaderValue};

const OPS: u32 = 1_000_000;

/// Runs `op(thread, i)` OPS times on each of `threads` threads, started together, and prints
/// the mean ns per op seen by one thread.
fn time(name: &str, threads: u32, op: impl Fn(u32, u32) + Sync) {
    let start = Barrier::new(threads as usize);
    let elapsed: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (op, start) = (&op, &start);
                s.spawn(move || {
                    start.wait();
                    let begin = Instant::now();
                    for i in 0..OPS {
                        op(t, i);
                    }
                    begin.elapsed()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let worst = elapsed.iter().max().unwrap();
    let ns = worst.as_nanos() as f64 / f64::from(OPS);
    println!("{name:<52} {threads} thread(s): {ns:7.1} ns/op");
}

/// A request's header map as a browser sends it, with `Authorization` among the others.
fn browser_headers(user_pass: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(HOST, HeaderValue::from_static("intranet.example"));
    h.insert(
        USER_AGENT,
        HeaderValue::from_static("Mozilla/5.0 (X11; Linux x86_64)"),
    );
    h.insert(
        ACCEPT,
        HeaderValue::from_static("text/html,application/xhtml+xml"),
    );
    h.insert(
        "accept-language",
        HeaderValue::from_static("en-GB,en;q=0.9"),
    );
    h.insert(
        "accept-encoding",
        HeaderValue::from_static("gzip, deflate, br"),
    );
    h.insert(
        "cookie",
        HeaderValue::from_static("session=0123456789abcdef"),
    );
    let token = base64::prelude::BASE64_STANDARD.encode(user_pass);
    let value = HeaderValue::from_str(&format!("Basic {token}")).unwrap();
    h.insert(AUTHORIZATION, value);
    h
}

#[test]
#[ignore = "a timing run: cargo test --release -p fibra-site --test access_bench -- --ignored"]
fn cached_basic_auth_check() {
    let users = (0..4)
        .map(|n| {
            (
                format!("user{n}"),
                bcrypt::hash(format!("password-{n}"), 4).unwrap(),
            )
        })
        .collect();
    let auth = BasicAuth::new("bench", users).unwrap();
    let headers: Vec<HeaderMap> = (0..4)
        .map(|n| browser_headers(&format!("user{n}:password-{n}")))
        .collect();
    for h in &headers {
        assert!(auth.check(h).is_ok());
    }
    time("basic auth, cached, one user", 1, |_, _| {
        assert!(black_box(&auth).check(black_box(&headers[0])).is_ok());
    });
    time(
        "basic auth, cached, same user on both threads",
        2,
        |_, _| {
            assert!(black_box(&auth).check(black_box(&headers[0])).is_ok());
        },
    );
    time("basic auth, cached, a user per thread", 2, |t, _| {
        let h = &headers[t as usize];
        assert!(black_box(&auth).check(black_box(h)).is_ok());
    });
    let wrong = browser_headers("user0:wrong");
    assert!(auth.check(&wrong).is_err());
    time("basic auth, cached refusal (401 built)", 1, |_, _| {
        assert!(black_box(&auth).check(black_box(&wrong)).is_err());
    });
}

#[test]
#[ignore = "a timing run: cargo test --release -p fibra-site --test access_bench -- --ignored"]
fn rate_limit_check() {
    // Fast enough that every check passes: the timings are of the pass path. A fresh limit
    // per case, with a clock that starts after it (an earlier time counts as its birth).
    let fresh = |burst| (RateLimit::new(1e9, burst, 100_000), Instant::now());
    let at = |base: Instant, i: u32| base + Duration::from_nanos(u64::from(i) * 1_000);
    let client =
        |t: u32, i: u32| IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + t * 1_000_000 + i % 10_000));
    let (limit, base) = fresh(1_000);
    time("rate limit, one client", 1, |_, i| {
        assert!(limit.check(black_box(client(0, 0)), at(base, i)).is_ok());
    });
    let (limit, base) = fresh(1_000);
    time("rate limit, 10k clients in turn", 1, |_, i| {
        assert!(limit.check(black_box(client(0, i)), at(base, i)).is_ok());
    });
    let (limit, base) = fresh(1_000);
    time("rate limit, 10k clients per thread", 2, |t, i| {
        assert!(limit.check(black_box(client(t, i)), at(base, i)).is_ok());
    });
    // Each thread's clock runs on its own, up to a second apart: a burst wider than that.
    let (limit, base) = fresh(u32::MAX);
    time("rate limit, one client on both threads", 2, |_, i| {
        assert!(limit.check(black_box(client(9, 0)), at(base, i)).is_ok());
    });
    let (limit, _) = fresh(1_000);
    time("rate limit, one client, Instant::now() each", 1, |_, _| {
        assert!(limit.check(black_box(client(0, 0)), Instant::now()).is_ok());
    });
}

#[test]
#[ignore = "a timing run: cargo test --release -p fibra-site --test access_bench -- --ignored"]
fn baseline() {
    // Work that shares nothing between threads, to tell this code's scaling from the
    // machine's (two vCPUs that are one core's hyperthreads slow each other down too).
    let key = std::collections::hash_map::RandomState::new();
    let op = |t: u32, i: u32| {
        black_box(key.hash_one([t, i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    };
    time("baseline: SipHash of 48 bytes, nothing shared", 1, op);
    time("baseline: SipHash of 48 bytes, nothing shared", 2, op);
}

#[test]
#[ignore = "a timing run: cargo test --release -p fibra-site --test access_bench -- --ignored"]
fn access_list_check() {
    let list = AccessList {
        allow: vec![
            "10.0.0.0/8".parse().unwrap(),
            "192.168.0.0/16".parse().unwrap(),
            "2001:db8::/32".parse().unwrap(),
        ],
        deny: vec!["10.66.0.0/16".parse().unwrap()],
    };
    time("access list, 1 deny + 3 allow networks", 1, |_, i| {
        let ip = IpAddr::V4(Ipv4Addr::from(0xc0a8_0000 + (i & 0xffff)));
        assert!(black_box(&list).permits(black_box(ip)));
    });
}
