//! A whole cached file goes out with the fields rendered when it was cached: the same fields,
//! in the same order and case, as a head composed field by field; a handler that changes the
//! fields of such a response gets its change sent (and no field twice); a file changed on disk
//! gets a new head with its new bytes.

mod files_util;

use std::time::Duration;

use fibra_files::{FileServer, FileServerConfig};
use fibra_http::{Request, Server};
use files_util::{Client, TempTree};
use http::HeaderValue;

fn names(r: &files_util::Resp) -> Vec<&str> {
    r.headers.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn rendered_heads_match_composed_ones_and_follow_changes() {
    let t = TempTree::new("rendered-head");
    t.write("hello.txt", "0123456789abcdefghij");
    t.write("app.js", "console.log(1)");
    t.write("app.js.gz", "GZ");
    let mut cfg = FileServerConfig::new(&t.root);
    cfg.cache_control = Some("max-age=60".into());
    let files = FileServer::new(cfg).unwrap();
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(move |req: Request| {
            let mut resp = files.handle(&req);
            if req.uri().query() == Some("own") {
                let h = resp.headers_mut();
                h.insert("cache-control", HeaderValue::from_static("no-store"));
                h.append("x-extra", HeaderValue::from_static("1"));
            }
            resp
        })
        .unwrap();
    let mut c = Client::connect(server.local_addr());

    // The first request fills the cache, the second is served from it: the same head.
    let first = c.get("/hello.txt", &[]);
    let second = c.get("/hello.txt", &[]);
    for r in [&first, &second] {
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"0123456789abcdefghij");
        assert_eq!(
            names(r),
            [
                "ETag",
                "Last-Modified",
                "Cache-Control",
                "Content-Type",
                "Accept-Ranges",
                "Date",
                "Content-Length"
            ]
        );
        assert_eq!(r.h("Content-Type"), "text/plain; charset=utf-8");
        assert_eq!(r.h("Content-Length"), "20");
    }
    assert_eq!(first.h("ETag"), second.h("ETag"));

    // A precompressed sibling: its own rendered head, with Vary and Content-Encoding.
    for _ in 0..2 {
        let r = c.get("/app.js", &["Accept-Encoding: gzip"]);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"GZ"[..]));
        assert_eq!(
            names(&r),
            [
                "ETag",
                "Last-Modified",
                "Cache-Control",
                "Vary",
                "Content-Type",
                "Content-Encoding",
                "Accept-Ranges",
                "Date",
                "Content-Length"
            ]
        );
        assert_eq!(r.h("Content-Encoding"), "gzip");
        let plain = c.get("/app.js", &[]);
        assert_eq!(plain.body, b"console.log(1)");
        assert!(!plain.has("Content-Encoding") && plain.h("Vary") == "Accept-Encoding");
        assert_ne!(plain.h("ETag"), r.h("ETag"));
    }

    // HEAD: the same head, no body.
    let h = c.request("HEAD", "/hello.txt", &[]);
    assert_eq!((h.status, h.h("Content-Length")), (200, "20"));
    assert!(h.body.is_empty());
    assert_eq!(h.h("ETag"), first.h("ETag"));

    // The handler's change replaces the rendered field and adds its own.
    let r = c.get("/hello.txt?own", &[]);
    let cc: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cache-control"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(cc, ["no-store"]);
    assert_eq!(r.h("X-Extra"), "1");
    assert_eq!(r.h("ETag"), first.h("ETag"));
    assert_eq!(r.body, b"0123456789abcdefghij");

    // Conditional and range requests still get their own answers.
    let etag = first.h("ETag").to_string();
    let r = c.get("/hello.txt", &[&format!("If-None-Match: {etag}")]);
    assert_eq!((r.status, r.body.len()), (304, 0));
    let r = c.get("/hello.txt", &["Range: bytes=2-4"]);
    assert_eq!((r.status, r.body.as_slice()), (206, &b"234"[..]));

    // Rewritten (larger, then smaller): the next head describes the new bytes.
    for text in ["a longer text than the twenty bytes before", "short"] {
        t.write("hello.txt", text);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let r = loop {
            let r = c.get("/hello.txt", &[]);
            if r.body == text.as_bytes() || std::time::Instant::now() > deadline {
                break r;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(r.body, text.as_bytes());
        assert_eq!(r.h("Content-Length"), text.len().to_string());
        assert_ne!(r.h("ETag"), etag);
    }
    server.shutdown(Duration::from_secs(5));
}
