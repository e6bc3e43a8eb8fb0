//! Balanced routes (`Proxy::route_balanced`) on the wire: each policy's choice, failover to
//! another upstream when one is down (and no failover for a request with a body), active
//! health checks taking an upstream out and bringing it back (plain and over TLS), and the
//! answers when none is up. Upstreams are hand-made on plain threads and answer with their
//! name, so every response says where its request went.
//!
//! Deterministic on a loaded machine: no timing is asserted; a state change (an upstream
//! found down by its checks, say) is polled for with a generous deadline.

mod proxy_tls_util;
mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra_proxy::{ActiveHealth, Balance, Health, PassiveHealth, Policy, Proxy, UpstreamState};
use proxy_util::{front, get_closing, raw_upstream, read_head, RawUpstream};

/// How long a test waits for a state change before failing.
const DEADLINE: Duration = Duration::from_secs(10);

/// What a test sees of one of its upstreams.
struct Named {
    raw: RawUpstream,
    /// Requests other than health checks.
    hits: Arc<AtomicUsize>,
    /// Health checks (`GET /health`).
    checks: Arc<AtomicUsize>,
    /// The status `/health` answers.
    health: Arc<AtomicU16>,
    /// `/slow` requests that have arrived.
    slow_started: Arc<AtomicUsize>,
    /// While false, `/slow` requests wait.
    slow_release: Arc<AtomicBool>,
}

impl Named {
    fn url(&self) -> String {
        format!("http://{}/", self.raw.addr)
    }
}

/// An upstream answering every request with `name` (keep-alive, the whole response in one
/// write); `/health` with the status in [`Named::health`]; `/slow` only once released.
fn named(name: &'static str) -> Named {
    let hits = Arc::new(AtomicUsize::new(0));
    let checks = Arc::new(AtomicUsize::new(0));
    let health = Arc::new(AtomicU16::new(200));
    let slow_started = Arc::new(AtomicUsize::new(0));
    let slow_release = Arc::new(AtomicBool::new(false));
    let (h, c, st, ss, sr) = (
        hits.clone(),
        checks.clone(),
        health.clone(),
        slow_started.clone(),
        slow_release.clone(),
    );
    let raw = raw_upstream(move |mut s, _| {
        while let Some(head) = read_head(&mut s) {
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let (status, body) = if path == "/health" {
                c.fetch_add(1, Ordering::SeqCst);
                (st.load(Ordering::SeqCst), name)
            } else {
                h.fetch_add(1, Ordering::SeqCst);
                if path.starts_with("/slow") {
                    ss.fetch_add(1, Ordering::SeqCst);
                    let deadline = Instant::now() + util::CLIENT_TIMEOUT;
                    while !sr.load(Ordering::SeqCst) && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                (200, name)
            };
            let response = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            if s.write_all(response.as_bytes()).is_err() {
                return;
            }
        }
    });
    Named {
        raw,
        hits,
        checks,
        health,
        slow_started,
        slow_release,
    }
}

/// A loopback port on which nothing listens, for as long as this is held: bound without
/// listening, so connects to it are refused, and no other socket (another test's upstream,
/// or a dial that would connect to itself) can take the port meanwhile.
struct DeadPort {
    _socket: socket2::Socket,
    url: String,
}

fn dead() -> DeadPort {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    socket.bind(&any.into()).unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    DeadPort {
        _socket: socket,
        url: format!("http://{addr}/"),
    }
}

/// A proxy balancing `/` over `urls`, whose `on_error` reports are collected.
fn balanced(urls: &[String], balance: Balance) -> (Proxy, Arc<Mutex<Vec<String>>>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let proxy = Proxy::new()
        .route_balanced("/", &urls, balance)
        .unwrap()
        .on_error(move |e| seen.lock().unwrap().push(e.to_string()));
    (proxy, errors)
}

fn policy(policy: Policy) -> Balance {
    Balance {
        policy,
        ..Balance::default()
    }
}

/// `GET path` on a new connection: the status and the body (an upstream's name).
fn get(front: SocketAddr, path: &str) -> (u16, String) {
    let (status, all) = get_closing(front, path);
    let body = all.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// Which upstream answered each of `n` requests for `path`, counted by name; all must be
/// `200`.
fn spread(front: SocketAddr, path: &str, n: usize) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for _ in 0..n {
        let (status, body) = get(front, path);
        assert_eq!(status, 200, "{body}");
        *seen.entry(body).or_insert(0) += 1;
    }
    seen
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

/// The state of the upstream `url` in `proxy`.
fn state_of(proxy: &Proxy, url: &str) -> UpstreamState {
    proxy
        .upstream_states()
        .into_iter()
        .find(|s| s.url == url)
        .unwrap_or_else(|| panic!("no upstream {url}"))
}

/// Polls until `cond` holds, for up to [`DEADLINE`]; `what` names it in the failure.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn round_robin_takes_the_upstreams_in_turn() {
    let (a, b) = (named("A"), named("B"));
    let (proxy, _) = balanced(&[a.url(), b.url()], Balance::default());
    let srv = front(proxy);
    let order: Vec<String> = (0..6).map(|_| get(srv.addr, "/x").1).collect();
    assert!(
        order == ["A", "B", "A", "B", "A", "B"] || order == ["B", "A", "B", "A", "B", "A"],
        "{order:?}"
    );
    assert_eq!(spread(srv.addr, "/x", 10), counts(&[("A", 5), ("B", 5)]));
}

#[test]
fn least_conn_prefers_the_idle_upstream() {
    let (a, b) = (named("A"), named("B"));
    let (proxy, _) = balanced(&[a.url(), b.url()], policy(Policy::LeastConn));
    let proxy = Arc::new(proxy);
    let srv = {
        let proxy = proxy.clone();
        util::start(fibra_http::Settings::default(), move |req| {
            proxy.respond(req)
        })
    };
    let addr = srv.addr;
    let slow = std::thread::spawn(move || get(addr, "/slow"));
    wait_until("the slow request reaches an upstream", || {
        a.slow_started.load(Ordering::SeqCst) + b.slow_started.load(Ordering::SeqCst) == 1
    });
    let (busy, idle) = if a.slow_started.load(Ordering::SeqCst) == 1 {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert_eq!(state_of(&proxy, &busy.url()).in_flight, Some(1));
    assert_eq!(state_of(&proxy, &idle.url()).in_flight, Some(0));
    let idle_name = if std::ptr::eq(idle, &a) { "A" } else { "B" };
    assert_eq!(spread(addr, "/fast", 6), counts(&[(idle_name, 6)]));
    busy.slow_release.store(true, Ordering::SeqCst);
    let (status, _) = slow.join().unwrap();
    assert_eq!(status, 200);
    wait_until("the slow request ends", || {
        proxy
            .upstream_states()
            .iter()
            .all(|s| s.in_flight == Some(0))
    });
    // Both idle again: ties go in turn.
    assert_eq!(spread(addr, "/fast", 4), counts(&[("A", 2), ("B", 2)]));
}

/// `GET /x` from the source address `from` (a loopback address other than 127.0.0.1 is
/// still local): the name of the upstream that answered.
fn get_from(front: SocketAddr, from: IpAddr) -> String {
    let local = SocketAddr::new(from, 0);
    let s = fibra::net::TcpStream::connect_from(&local, &front, Some(util::CLIENT_TIMEOUT))
        .expect("connect from a loopback address");
    s.set_read_timeout(Some(util::CLIENT_TIMEOUT)).unwrap();
    let mut s = s;
    s.write_all(b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    assert_eq!(util::status_of(&all), 200, "{all}");
    all.split("\r\n\r\n").nth(1).unwrap().to_owned()
}

#[test]
fn ip_hash_sends_a_client_to_the_same_upstream() {
    let (a, b) = (named("A"), named("B"));
    let (proxy, _) = balanced(&[a.url(), b.url()], policy(Policy::IpHash));
    let srv = front(proxy);
    let mut names = BTreeMap::new();
    for k in 1..=16u8 {
        let ip = IpAddr::from([127, 0, 0, k]);
        let first = get_from(srv.addr, ip);
        for _ in 0..3 {
            assert_eq!(get_from(srv.addr, ip), first, "{ip} moved");
        }
        *names.entry(first).or_insert(0) += 1;
    }
    assert_eq!(names.len(), 2, "clients spread over both: {names:?}");
}

#[test]
fn first_takes_the_first_up_and_the_next_when_it_is_down() {
    let (a, b) = (named("A"), named("B"));
    let (proxy, _) = balanced(&[a.url(), b.url()], policy(Policy::First));
    let srv = front(proxy);
    assert_eq!(spread(srv.addr, "/x", 5), counts(&[("A", 5)]));
    let dead = dead();
    let (proxy, errors) = balanced(&[dead.url.clone(), b.url()], policy(Policy::First));
    let srv = front(proxy);
    assert_eq!(spread(srv.addr, "/x", 5), counts(&[("B", 5)]));
    assert!(errors.lock().unwrap().is_empty(), "{errors:?}");
}

#[test]
fn a_get_fails_over_to_another_upstream_and_the_dead_one_is_marked_down() {
    let b = named("B");
    let dead = dead();
    let (proxy, errors) = balanced(&[dead.url.clone(), b.url()], Balance::default());
    let proxy = Arc::new(proxy);
    let srv = {
        let proxy = proxy.clone();
        util::start(fibra_http::Settings::default(), move |req| {
            proxy.respond(req)
        })
    };
    assert_eq!(spread(srv.addr, "/x", 10), counts(&[("B", 10)]));
    assert!(
        errors.lock().unwrap().is_empty(),
        "retried, so nothing answered 502: {errors:?}"
    );
    let down = state_of(&proxy, &dead.url);
    match &down.health {
        Health::Down(why) => assert!(why.contains("connecting"), "{why}"),
        h => panic!("{} is {h:?}", dead.url),
    }
    assert_eq!(state_of(&proxy, &b.url()).health, Health::Up);
    assert_eq!(b.hits.load(Ordering::SeqCst), 10);
}

#[test]
fn a_request_with_a_body_is_not_sent_to_another_upstream() {
    let b = named("B");
    let dead = dead();
    // Never out: the dead upstream stays first for each request.
    let balance = Balance {
        policy: Policy::First,
        passive: PassiveHealth {
            max_fails: 0,
            ..PassiveHealth::default()
        },
        active: None,
    };
    let (proxy, errors) = balanced(&[dead.url.clone(), b.url()], balance);
    let srv = front(proxy);
    for method in ["POST", "PUT"] {
        let req = format!("{method} /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
        let all = util::send_and_read_to_close(srv.addr, req.as_bytes());
        assert_eq!(util::status_of(&all), 502, "{all}");
        assert!(all.ends_with("Bad Gateway\n"), "{all}");
    }
    assert_eq!(b.raw.accepted(), 0, "nothing reached the other upstream");
    assert_eq!(errors.lock().unwrap().len(), 2, "{errors:?}");
    // A GET without a body does go over.
    assert_eq!(get(srv.addr, "/x"), (200, "B".to_owned()));
}

#[test]
fn all_upstreams_down_is_a_bad_gateway() {
    let (d1, d2) = (dead(), dead());
    let (proxy, errors) = balanced(&[d1.url.clone(), d2.url.clone()], Balance::default());
    let srv = front(proxy);
    for _ in 0..3 {
        let (status, all) = get_closing(srv.addr, "/x");
        assert_eq!(status, 502, "{all}");
        assert!(all.ends_with("Bad Gateway\n"), "{all}");
    }
    let errors = errors.lock().unwrap();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("connecting"), "{errors:?}");
    assert!(
        errors[2].contains("no upstream is up (502)"),
        "both out by now: {errors:?}"
    );
}

fn checked(interval: Duration) -> Balance {
    Balance {
        active: Some(ActiveHealth {
            path: "/health".into(),
            interval,
            timeout: Duration::from_secs(5),
        }),
        ..Balance::default()
    }
}

#[test]
fn a_failing_health_check_takes_an_upstream_out_and_a_passing_one_brings_it_back() {
    let (a, b) = (named("A"), named("B"));
    a.health.store(503, Ordering::SeqCst);
    let (proxy, _) = balanced(&[a.url(), b.url()], checked(Duration::from_millis(50)));
    let proxy = Arc::new(proxy);
    let srv = {
        let proxy = proxy.clone();
        util::start(fibra_http::Settings::default(), move |req| {
            proxy.respond(req)
        })
    };
    wait_until("A found down", || {
        !state_of(&proxy, &a.url()).health.is_up()
    });
    assert_eq!(
        state_of(&proxy, &a.url()).health,
        Health::Down("health check: GET /health answered 503".into())
    );
    assert_eq!(spread(srv.addr, "/x", 10), counts(&[("B", 10)]));
    assert_eq!(a.hits.load(Ordering::SeqCst), 0, "no request went to A");
    a.health.store(200, Ordering::SeqCst);
    wait_until("A found up", || state_of(&proxy, &a.url()).health.is_up());
    assert_eq!(spread(srv.addr, "/x", 4), counts(&[("A", 2), ("B", 2)]));
    assert!(b.checks.load(Ordering::SeqCst) >= 1);
}

#[test]
fn all_upstreams_failing_their_checks_is_a_503_with_retry_after() {
    let (a, b) = (named("A"), named("B"));
    a.health.store(503, Ordering::SeqCst);
    b.health.store(500, Ordering::SeqCst);
    // 1.5 s: Retry-After rounds up to 2.
    let (proxy, errors) = balanced(&[a.url(), b.url()], checked(Duration::from_millis(1500)));
    let proxy = Arc::new(proxy);
    let srv = {
        let proxy = proxy.clone();
        util::start(fibra_http::Settings::default(), move |req| {
            proxy.respond(req)
        })
    };
    wait_until("both found down", || {
        proxy.upstream_states().iter().all(|s| !s.health.is_up())
    });
    let (status, all) = get_closing(srv.addr, "/x");
    assert_eq!(status, 503, "{all}");
    assert_eq!(proxy_util::field(&all, "retry-after"), Some("2"), "{all}");
    assert!(all.ends_with("Service Unavailable\n"), "{all}");
    assert_eq!(
        a.hits.load(Ordering::SeqCst) + b.hits.load(Ordering::SeqCst),
        0
    );
    let errors = errors.lock().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("(503)"), "{errors:?}");
}

#[test]
fn a_route_to_one_upstream_reports_its_state_without_a_count() {
    let a = named("A");
    let proxy = Proxy::new().route("/a/", &a.url()).unwrap();
    let states = proxy.upstream_states();
    assert_eq!(states.len(), 1);
    assert_eq!(
        (states[0].prefix.as_str(), states[0].url.as_str()),
        ("/a/", a.url().as_str())
    );
    assert_eq!(states[0].health, Health::Up);
    assert_eq!(states[0].in_flight, None);
    assert!(states[0].to_string().ends_with(": up"), "{}", states[0]);
}

#[test]
fn bad_balanced_routes_are_refused() {
    let a = named("A");
    let url = a.url();
    let refused = |upstreams: &[&str], balance: Balance| {
        let e = Proxy::new()
            .route_balanced("/", upstreams, balance)
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
        e.to_string()
    };
    assert!(refused(&[], Balance::default()).contains("no upstream"));
    assert!(refused(&[&url, "ftp://x/"], Balance::default()).contains("ftp://x/"));
    let mut no_slash = checked(Duration::from_secs(1));
    no_slash.active.as_mut().unwrap().path = "health".into();
    assert!(refused(&[&url], no_slash).contains("must start with /"));
    let mut injected = checked(Duration::from_secs(1));
    injected.active.as_mut().unwrap().path = "/h HTTP/1.1\r\nX: y".into();
    assert!(refused(&[&url], injected).contains("no spaces or control characters"));
    let zero = checked(Duration::ZERO);
    assert!(refused(&[&url], zero).contains("must not be zero"));
}

/// A TLS upstream (fibra's server, a certificate for `localhost` from `pki`'s CA) whose
/// `/health` answers `health`'s status and anything else `name`.
fn tls_named(
    pki: &proxy_tls_util::TestPki,
    name: &'static str,
    health: Arc<AtomicU16>,
) -> fibra_http::ServerHandle {
    let config =
        fibra_http::tls::server_config_from_pem(pki.path("cert.pem"), pki.path("key.pem")).unwrap();
    fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .tls(config)
        .serve(move |req: fibra_http::Request| {
            let mut r = fibra_http::Response::new(name.into());
            if req.uri().path() == "/health" {
                *r.status_mut() =
                    http::StatusCode::from_u16(health.load(Ordering::SeqCst)).unwrap();
            }
            r
        })
        .unwrap()
}

#[test]
fn https_upstreams_are_checked_over_tls() {
    let pki = proxy_tls_util::TestPki::new("balance");
    let (ha, hb) = (Arc::new(AtomicU16::new(503)), Arc::new(AtomicU16::new(200)));
    let servers = [tls_named(&pki, "A", ha.clone()), tls_named(&pki, "B", hb)];
    let urls = servers
        .each_ref()
        .map(|s| format!("https://localhost:{}/", s.local_addr().port()));
    let proxy = Proxy::new()
        .upstream_ca(pki.path("ca.pem"))
        .unwrap()
        .route_balanced(
            "/",
            &[&urls[0], &urls[1]],
            checked(Duration::from_millis(50)),
        )
        .unwrap();
    let proxy = Arc::new(proxy);
    let srv = {
        let proxy = proxy.clone();
        util::start(fibra_http::Settings::default(), move |req| {
            proxy.respond(req)
        })
    };
    wait_until("A found down over TLS", || {
        !state_of(&proxy, &urls[0]).health.is_up()
    });
    assert_eq!(state_of(&proxy, &urls[1]).health, Health::Up);
    assert_eq!(spread(srv.addr, "/x", 4), counts(&[("B", 4)]));
    ha.store(200, Ordering::SeqCst);
    wait_until("A found up over TLS", || {
        state_of(&proxy, &urls[0]).health.is_up()
    });
    assert_eq!(spread(srv.addr, "/x", 4), counts(&[("A", 2), ("B", 2)]));
}
