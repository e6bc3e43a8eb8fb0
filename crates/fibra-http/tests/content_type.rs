//! A body's media type (`ResponseBody::with_content_type`) is sent as `Content-Type`, unless the
//! handler set that header itself; responses in a row on one connection each carry their own.

mod util;

use std::io::Write;

use fibra_http::{Request, Response, ResponseBody, Settings};
use http::HeaderValue;
use util::*;

fn handler(req: Request) -> Response {
    let body = ResponseBody::from("hi").with_content_type(HeaderValue::from_static("text/plain"));
    match req.uri().path() {
        "/typed" => Response::new(body),
        "/own" => {
            let mut r = Response::new(body);
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("text/html"));
            r
        }
        "/json" => Response::new(
            ResponseBody::from("{}")
                .with_content_type(HeaderValue::from_static("application/json")),
        ),
        _ => Response::new("plain".into()),
    }
}

#[test]
fn each_response_carries_its_own_type() {
    let srv = start(Settings::default(), handler);
    let mut s = connect(srv.addr);
    let paths = [
        "/typed", "/typed", "/own", "/typed", "/json", "/none", "/typed", "/typed",
    ];
    let mut reqs = Vec::new();
    for p in paths {
        reqs.extend_from_slice(format!("GET {p} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    }
    s.write_all(&reqs).unwrap();
    for p in paths {
        let (head, body) = read_response(&mut s, false);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{p}: {head}");
        let types: Vec<&str> = head
            .split("\r\n")
            .filter(|l| l.to_ascii_lowercase().starts_with("content-type:"))
            .collect();
        let want: &[&str] = match p {
            "/typed" => &["Content-Type: text/plain"],
            "/own" => &["Content-Type: text/html"],
            "/json" => &["Content-Type: application/json"],
            _ => &[],
        };
        assert_eq!(types, want, "{p}: {head}");
        let want_body: &[u8] = match p {
            "/json" => b"{}",
            "/none" => b"plain",
            _ => b"hi",
        };
        assert_eq!(body, want_body, "{p}");
    }
}
