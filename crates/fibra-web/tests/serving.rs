//! One router served by fibra-http's `Server` over HTTP/1.1, HTTP/2 (prior knowledge), TLS
//! and a Unix-domain socket; a route's body limit above the server's default raises the
//! server's.

#[path = "../../fibra-http/tests/h2_util/mod.rs"]
mod h2_util;
#[path = "../../fibra-http/tests/tls_util/mod.rs"]
mod tls_util;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::Bytes;
use fibra_web::extract::{DefaultBodyLimit, Path};
use fibra_web::http::{Method, StatusCode};
use fibra_web::routing::{get, post};
use fibra_web::{Router, Server};

fn app() -> Router {
    Router::new()
        .route("/plaintext", get(|| "Hello, World!"))
        .route(
            "/users/{id}",
            get(|Path(id): Path<u32>| format!("user {id}")),
        )
        .route("/len", post(|b: Bytes| b.len().to_string()))
}

/// Sends `req` on a new connection and reads to its close.
fn exchange(stream: &mut (impl Read + Write), req: &str) -> String {
    stream.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn http1_and_http2_on_one_server() {
    let server = Server::bind("127.0.0.1:0").workers(1).serve(app()).unwrap();
    let addr = server.local_addr();

    let mut tcp = tls_util::tcp(addr);
    let reply = exchange(
        &mut tcp,
        "GET /users/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(
        reply
            .to_ascii_lowercase()
            .contains("content-type: text/plain; charset=utf-8\r\n"),
        "{reply}"
    );
    assert!(reply.ends_with("\r\n\r\nuser 7"), "{reply}");

    let mut tcp = tls_util::tcp(addr);
    let reply = exchange(
        &mut tcp,
        "DELETE /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(
        reply.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{reply}"
    );
    assert!(
        reply.to_ascii_lowercase().contains("allow: get,head\r\n"),
        "{reply}"
    );

    h2_util::runtime().block_on(async {
        let mut h2 = h2_util::client(addr).await;
        let (status, _, body) = h2_util::exchange(&mut h2, Method::GET, "/users/9", None).await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"user 9"[..]));
        let (status, headers, _) = h2_util::exchange(&mut h2, Method::PUT, "/users/9", None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(headers["allow"], "GET,HEAD");
        let (status, _, body) = h2_util::exchange(
            &mut h2,
            Method::POST,
            "/len",
            Some(Bytes::from(vec![1u8; 70_000])),
        )
        .await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"70000"[..]));
    });
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn over_tls() {
    let certs = tls_util::Certs::new("web-serving");
    let config = fibra_http::tls::server_config_from_pem(certs.cert(), certs.key()).unwrap();
    let server = Server::bind("127.0.0.1:0")
        .tls(config)
        .workers(1)
        .serve(app())
        .unwrap();
    let mut tls = certs.client_offering(server.local_addr(), &[b"http/1.1"]);
    let reply = exchange(
        &mut tls,
        "GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.ends_with("\r\n\r\nHello, World!"), "{reply}");
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn over_a_unix_socket() {
    let path = std::env::temp_dir().join(format!("fibra-web-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let acceptor = fibra_http::UnixAcceptor::bind(&path).unwrap();
    let server = Server::with_acceptor(move |_worker| Ok(acceptor.clone()))
        .workers(1)
        .serve(app())
        .unwrap();
    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reply = exchange(
        &mut s,
        "GET /users/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.ends_with("\r\n\r\nuser 3"), "{reply}");
    server.shutdown(Duration::from_secs(5));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_route_limit_above_the_server_default_raises_it() {
    // The server's default `max_body_bytes` is 8 MiB; the route takes 12 MiB.
    let app: Router = Router::new()
        .route("/len", post(|b: Bytes| b.len().to_string()))
        .layer(DefaultBodyLimit::max(12 << 20));
    let server = Server::bind("127.0.0.1:0").workers(1).serve(app).unwrap();
    let body = vec![b'x'; 10 << 20];
    let mut tcp = tls_util::tcp(server.local_addr());
    let head = format!(
        "POST /len HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).unwrap();
    tcp.write_all(&body).unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with(&format!("\r\n\r\n{}", 10 << 20)), "{out}");
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn a_panicking_handler_gets_500_and_the_connection_and_worker_go_on() {
    let app: Router = Router::new()
        .route(
            "/boom",
            get(|| -> &'static str { panic!("handler panic (expected)") }),
        )
        .route("/ok", get(|| "ok"));
    let server = Server::bind("127.0.0.1:0").workers(1).serve(app).unwrap();
    let reply = exchange(
        &mut tls_util::tcp(server.local_addr()),
        "GET /boom HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.starts_with("HTTP/1.1 500 "), "{reply}");
    // The engine closes the connection after a panic's 500 (or answers the next request on
    // it): either way a new connection is answered.
    let mut tcp = tls_util::tcp(server.local_addr());
    let reply = exchange(
        &mut tcp,
        "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(reply.ends_with("\r\n\r\nok"), "{reply}");
    server.shutdown(Duration::from_secs(5));
}
