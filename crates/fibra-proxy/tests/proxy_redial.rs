//! A down upstream is re-dialled with backoff, not once per request: after a failed connect
//! the requests for it get `502` at once (reported as "not connecting", without a dial),
//! and when it comes back a probe finds it and traffic resumes. Before, every request
//! dialled (tens of thousands a second under load), and on loopback some of those dials
//! connected to themselves.

mod proxy_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra_proxy::Proxy;
use proxy_util::{answer_all, front, get_closing};

/// A loopback address on which nothing listens (bound, read and released).
fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A proxy to `upstream` under `/up/` whose failures are collected.
fn proxy_to(
    upstream: SocketAddr,
    first: Duration,
    max: Duration,
) -> (Proxy, Arc<Mutex<Vec<String>>>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let proxy = Proxy::new()
        .route("/up/", &format!("http://{upstream}/"))
        .unwrap()
        .redial_backoff(first, max)
        .on_error(move |e| seen.lock().unwrap().push(e.to_string()));
    (proxy, errors)
}

#[test]
fn a_down_upstream_is_dialled_once_per_backoff_not_per_request() {
    // A backoff longer than the test: after the first failed connect, no other dial.
    let (proxy, errors) = proxy_to(
        free_addr(),
        Duration::from_secs(600),
        Duration::from_secs(600),
    );
    let srv = front(proxy);
    for _ in 0..20 {
        let (status, all) = get_closing(srv.addr, "/up/x");
        assert_eq!(status, 502, "{all}");
        assert!(all.ends_with("Bad Gateway\n"), "{all}");
    }
    let errors = errors.lock().unwrap();
    assert_eq!(
        errors.len(),
        20,
        "every failure reaches the hook: {errors:?}"
    );
    let dials = errors
        .iter()
        .filter(|e| e.contains(": connecting: "))
        .count();
    let fast = errors
        .iter()
        .filter(|e| e.contains("not connecting: 1 connects failed in a row, next try in "))
        .count();
    assert_eq!((dials, fast), (1, 19), "{errors:?}");
    assert!(errors[0].contains("refused"), "{}", errors[0]);
}

#[test]
fn a_restarted_upstream_is_used_again() {
    let addr = free_addr();
    let (proxy, errors) = proxy_to(addr, Duration::from_millis(20), Duration::from_millis(100));
    let srv = front(proxy);
    for _ in 0..5 {
        assert_eq!(get_closing(srv.addr, "/up/x").0, 502);
    }
    // The upstream comes up on its port.
    let listener = (0..50)
        .find_map(|_| {
            TcpListener::bind(addr).ok().or_else(|| {
                std::thread::sleep(Duration::from_millis(100));
                None
            })
        })
        .expect("the upstream's port can be bound");
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                answer_all(s, b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nback")
            });
        }
    });
    // Bounded: a broken backoff fails the test instead of hanging it.
    let deadline = Instant::now() + util::CLIENT_TIMEOUT;
    let back = loop {
        let (status, all) = get_closing(srv.addr, "/up/x");
        if status == 200 {
            break all;
        }
        assert_eq!(status, 502, "{all}");
        assert!(
            Instant::now() < deadline,
            "never used again: {:?}",
            errors.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(back.ends_with("back"), "{back}");
    // Up again: every request goes through.
    for _ in 0..5 {
        assert_eq!(get_closing(srv.addr, "/up/x").0, 200);
    }
}
