//! A handler's own streamed body: fibra-http's `ResponseBody::stream` is already a response
//! (`IntoResponse`), so fibra-web adds no type of its own for it. On HTTP/1.1 it goes out
//! chunked, each write a chunk, each flush on the wire at once.

mod raw_http;

use std::io::Write;

use fibra_web::http::{HeaderValue, StatusCode};
use fibra_web::routing::get;
use fibra_web::test::{TestClient, TestServer};
use fibra_web::{ResponseBody, Router};
use raw_http::Conn;

fn parts() -> (StatusCode, [(&'static str, &'static str); 1], ResponseBody) {
    let body = ResponseBody::stream(|w| {
        for i in 0..3 {
            w.write_all(format!("part {i}\n").as_bytes())?;
            w.flush()?;
        }
        Ok(())
    })
    .with_content_type(HeaderValue::from_static("text/plain; charset=utf-8"));
    (StatusCode::CREATED, [("x-parts", "3")], body)
}

#[test]
fn a_streamed_body_goes_out_chunked() {
    let server = TestServer::spawn(Router::new().route("/parts", get(parts))).unwrap();
    let mut c = Conn::open(server.addr());
    c.get("/parts", &[]);
    let head = c.head();
    assert_eq!(head.status, 201);
    assert_eq!(head.header("transfer-encoding"), Some("chunked"));
    assert_eq!(
        head.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(head.header("x-parts"), Some("3"));
    assert_eq!(head.header("content-length"), None);
    let mut chunks = Vec::new();
    while let Some(chunk) = c.chunk() {
        chunks.push(String::from_utf8(chunk).unwrap());
    }
    assert_eq!(chunks, ["part 0\n", "part 1\n", "part 2\n"]);
    // The connection stays open for the next request.
    c.get("/parts", &[]);
    let head = c.head();
    assert_eq!(c.body(&head), b"part 0\npart 1\npart 2\n");
}

#[test]
fn the_test_client_collects_a_streamed_body() {
    let res = TestClient::new(Router::new().route("/parts", get(parts)))
        .get("/parts")
        .send();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(res.text(), "part 0\npart 1\npart 2\n");
}
