//! A whole cached file is sent by reference to its cache entry (its rendered fields, and its
//! bytes in memory or its open file): the same status, fields and bytes as the first answer,
//! for a file kept in memory and for one sent from its descriptor, over HTTP/1.1 and HTTP/2,
//! for GET and HEAD; and a response taken from an entry still sends that entry's bytes when
//! the file is replaced before it is sent.

mod files_util;
#[path = "../../fibra-http/tests/h2_util/mod.rs"]
mod h2_util;
#[path = "../../fibra-http/tests/util/mod.rs"]
mod util;

use std::sync::Arc;

use fibra_files::{FileServer, FileServerConfig};
use fibra_http::{Request, Response, Settings};
use files_util::{Client, TempTree};
use h2_util::{client, exchange, runtime};
use http::{Method, StatusCode};

/// A file of `len` bytes that differ from one another over short distances.
fn contents(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ seed.wrapping_mul(37))
        .collect()
}

#[test]
fn cached_files_answer_the_same_fields_and_bytes_over_http1_and_http2() {
    let t = TempTree::new("prepared");
    let small = contents(3_000, 1); // kept in memory by the cache
    let large = contents(200_000, 2); // kept as an open file, sent with sendfile
    t.write("small.css", &small);
    t.write("large.png", &large);
    let files = FileServer::new(FileServerConfig::new(&t.root)).unwrap();
    let srv = util::start(Settings::default(), move |req: Request| files.handle(&req));

    let mut c = Client::connect(srv.addr);
    for (path, want) in [("/small.css", &small), ("/large.png", &large)] {
        // The first request fills the cache; the next ones are answered from it.
        let first = c.get(path, &[]);
        for _ in 0..3 {
            let r = c.get(path, &[]);
            assert_eq!(r.status, 200, "{path}");
            assert!(r.body == *want, "{path}: different bytes from the cache");
            for name in ["ETag", "Last-Modified", "Content-Type", "Content-Length"] {
                assert_eq!(r.h(name), first.h(name), "{path}: {name}");
            }
            assert_eq!(r.h("Content-Length"), want.len().to_string());
            let h = c.request("HEAD", path, &[]);
            assert_eq!((h.status, h.body.len()), (200, 0));
            assert_eq!(h.h("Content-Length"), want.len().to_string());
            assert_eq!(h.h("ETag"), first.h("ETag"));
        }
    }

    runtime().block_on(async {
        let mut h2 = client(srv.addr).await;
        for (path, want) in [("/small.css", &small), ("/large.png", &large)] {
            for _ in 0..2 {
                let (status, headers, body) = exchange(&mut h2, Method::GET, path, None).await;
                assert_eq!(status, StatusCode::OK, "{path}");
                assert!(body == *want, "{path}: different bytes over HTTP/2");
                assert_eq!(headers["content-length"], want.len().to_string());
                assert!(headers.contains_key("etag") && headers.contains_key("last-modified"));
                let (status, headers, body) = exchange(&mut h2, Method::HEAD, path, None).await;
                assert_eq!((status, body.len()), (StatusCode::OK, 0));
                assert_eq!(headers["content-length"], want.len().to_string());
            }
        }
    });
}

#[test]
fn a_response_taken_from_the_cache_sends_the_bytes_it_describes_after_a_replace() {
    let t = TempTree::new("prepared-replace");
    let old = contents(150_000, 3);
    let new = contents(90_000, 4);
    t.write("page.html", &old);
    let files = Arc::new(FileServer::new(FileServerConfig::new(&t.root)).unwrap());
    // The handler answers `?hold` by taking the cached response, then replacing the file by
    // rename (as editors and deploy tools write) before it returns the response.
    let root = t.root.clone();
    let replacement = new.clone();
    let handler = {
        let files = Arc::clone(&files);
        move |req: Request| -> Response {
            let resp = files.handle(&req);
            if req.uri().query() == Some("hold") {
                std::fs::write(root.join("page.html.tmp"), &replacement).unwrap();
                std::fs::rename(root.join("page.html.tmp"), root.join("page.html")).unwrap();
            }
            resp
        }
    };
    let srv = util::start(Settings::default(), handler);
    let mut c = Client::connect(srv.addr);
    let first = c.get("/page.html", &[]);
    assert!(first.body == old);
    // From the cache, with the file replaced before the response is sent: the old entry's
    // head and its open file, which still holds the old bytes.
    let held = c.get("/page.html?hold", &[]);
    assert_eq!(held.status, 200);
    assert_eq!(held.h("Content-Length"), old.len().to_string());
    assert!(
        held.body == old,
        "the response must send the bytes its head describes"
    );
    assert_eq!(held.h("ETag"), first.h("ETag"));
    // The change is seen on a later request (inotify; bounded wait for the event).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let r = loop {
        let r = c.get("/page.html", &[]);
        if r.body == new || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(r.body == new);
    assert_eq!(r.h("Content-Length"), new.len().to_string());
    assert_ne!(r.h("ETag"), first.h("ETag"));
}
