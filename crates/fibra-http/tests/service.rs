//! `Server::serve` takes any `Service`: closures and functions as before (the blanket impl),
//! and types of one's own. A closure that hands the request on needs no type written.

#[path = "util/mod.rs"]
mod util;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::{Request, Response, Server, Service};

fn app(req: Request) -> Response {
    app_with("app", req)
}

fn app_with(prefix: &str, req: Request) -> Response {
    Response::new(format!("{prefix} {}", req.uri().path()).into())
}

/// GETs `path` on a new connection and returns the body.
fn body_of(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = util::connect(addr);
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (head, body) = util::read_response(&mut s, false);
    assert_eq!(util::status_of(&head), 200, "{head}");
    String::from_utf8(body).unwrap()
}

fn serve(service: impl Service + Send + Sync + 'static) -> fibra_http::ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(service)
        .expect("server starts")
}

/// The forms of before compile unchanged and answer: a closure with its parameter's type, a
/// closure without one that hands the request on, a `move` closure, a function.
#[test]
fn closures_and_functions_are_services() {
    let typed = serve(|req: Request| Response::new(format!("typed {}", req.method()).into()));
    assert_eq!(body_of(typed.local_addr(), "/"), "typed GET");
    typed.shutdown(Duration::from_secs(1));

    let prefix = "app";
    let untyped = serve(move |req| app_with(prefix, req));
    assert_eq!(body_of(untyped.local_addr(), "/a"), "app /a");
    untyped.shutdown(Duration::from_secs(1));

    let greeting = String::from("hi");
    let moved = serve(move |_| Response::new(greeting.clone().into()));
    assert_eq!(body_of(moved.local_addr(), "/"), "hi");
    moved.shutdown(Duration::from_secs(1));

    let function = serve(app);
    assert_eq!(body_of(function.local_addr(), "/f"), "app /f");
    function.shutdown(Duration::from_secs(1));
}

/// A type of one's own, with state, served like a closure; `Service::call` may also be
/// called directly (what a router or a test client does).
#[test]
fn a_type_of_ones_own_is_a_service() {
    struct Counter(AtomicUsize);
    impl Service for Counter {
        fn call(&self, _req: Request) -> Response {
            let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
            Response::new(n.to_string().into())
        }
    }
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    let shared = counter.clone();
    let server = serve(move |req| shared.call(req));
    assert_eq!(body_of(server.local_addr(), "/"), "1");
    assert_eq!(body_of(server.local_addr(), "/"), "2");
    server.shutdown(Duration::from_secs(1));
    let direct = counter.call(http::Request::new(fibra_http::Body::empty()).into());
    assert_eq!(direct.body().as_bytes(), Some(&b"3"[..]));

    let server = serve(Counter(AtomicUsize::new(10)));
    assert_eq!(body_of(server.local_addr(), "/"), "11");
    server.shutdown(Duration::from_secs(1));
}
