//! A proxy route's `upstreams`, `policy` and `health` take effect: round robin spreads over
//! the upstreams, `first` keeps to the first up one, a dead upstream's GETs go to another,
//! and while active checks find none up the route answers 503 with `Retry-After`.

mod site_util;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra_http::{Request, Response, Server, ServerHandle};
use site_util::{body, get, header, serve, status, Dir};

/// An upstream answering its `name`, and `/health` with 200 or 503 as `healthy` says.
fn upstream(name: &'static str, healthy: Arc<AtomicBool>) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(move |req: Request| {
            if req.uri().path() == "/health" {
                let mut r = Response::new("health\n".into());
                if !healthy.load(Ordering::SeqCst) {
                    *r.status_mut() = fibra_http::http::StatusCode::SERVICE_UNAVAILABLE;
                }
                return r;
            }
            Response::new(name.into())
        })
        .unwrap()
}

fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn policies_retries_and_health_come_from_the_site_file() {
    let (up_a, up_b) = (
        Arc::new(AtomicBool::new(true)),
        Arc::new(AtomicBool::new(true)),
    );
    let a = upstream("a", up_a.clone());
    let b = upstream("b", up_b.clone());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let dir = Dir::new("upstreams");
    let text = format!(
        "[[site]]\nlisten = [\"LISTEN\"]\ndefault = true\n\
         [[site.route]]\npath = \"/rr/\"\nproxy = {{ upstreams = [\"http://{a}\", \"http://{b}\"] }}\n\
         [[site.route]]\npath = \"/first/\"\nproxy = {{ upstreams = [\"http://{a}\", \"http://{b}\"], policy = \"first\" }}\n\
         [[site.route]]\npath = \"/failover/\"\nproxy = {{ upstreams = [\"http://{dead_addr}\", \"http://{b}\"] }}\n\
         [[site.route]]\npath = \"/checked/\"\n\
         proxy = {{ upstreams = [\"http://{a}\", \"http://{b}\"], health = {{ path = \"/health\", interval = \"100ms\" }} }}\n",
        a = a.local_addr(),
        b = b.local_addr(),
    );
    let (_live, server, addr) = serve(&dir, &text);
    let bodies: Vec<String> = (0..4)
        .map(|_| body(&get(addr, "x", "/rr/x", "")).to_owned())
        .collect();
    assert!(
        bodies.contains(&"a".to_owned()) && bodies.contains(&"b".to_owned()),
        "{bodies:?}"
    );
    assert!((0..4).all(|_| body(&get(addr, "x", "/first/x", "")) == "a"));
    // Every GET answered, the dead upstream's retried on the other.
    assert!((0..6).all(|_| body(&get(addr, "x", "/failover/x", "")) == "b"));
    // Both fail their checks: 503 with Retry-After; one back: it serves.
    up_a.store(false, Ordering::SeqCst);
    up_b.store(false, Ordering::SeqCst);
    assert!(wait_until(
        || status(&get(addr, "x", "/checked/x", "")) == 503
    ));
    let r = get(addr, "x", "/checked/x", "");
    assert_eq!(header(&r, "retry-after"), Some("1"), "{r}");
    up_b.store(true, Ordering::SeqCst);
    assert!(wait_until(|| body(&get(addr, "x", "/checked/x", "")) == "b"));
    server.shutdown(Duration::from_secs(5));
    a.shutdown(Duration::from_secs(1));
    b.shutdown(Duration::from_secs(1));
}
