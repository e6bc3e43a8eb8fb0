//! `FileServer` over real sockets: byte-literal requests against a fibra-http server serving a
//! temp directory, checking the bytes that come back. One test per behaviour.

mod files_util;

use std::time::Duration;

use fibra_files::{FileServer, FileServerConfig};
use files_util::{get, Client, TempTree};

const HELLO: &str = "0123456789abcdefghij";

fn tree(name: &str) -> TempTree {
    let t = TempTree::new(name);
    t.write("index.html", "<h1>home</h1>\n");
    t.write("hello.txt", HELLO);
    t.write("app.js", "console.log(1)");
    t.write("app.js.br", "BR");
    t.write("app.js.gz", "GZ");
    t.write(".env", "SECRET=1");
    t.write(".git/config", "[core]");
    t.write("docs/a b.txt", "space");
    t.write("docs/<img src=x onerror=alert(1)>.txt", "xss");
    std::fs::create_dir_all(t.path("empty")).unwrap();
    std::fs::write(t.base_path().join("secret.txt"), "TOPSECRET").unwrap();
    std::os::unix::fs::symlink(t.base_path().join("secret.txt"), t.path("escape")).unwrap();
    std::os::unix::fs::symlink(t.base_path(), t.path("up")).unwrap();
    t
}

fn config(t: &TempTree) -> FileServerConfig {
    let mut c = FileServerConfig::new(&t.root);
    c.cache_ttl = Duration::from_secs(3600);
    c
}

#[test]
fn get_and_head() {
    let t = tree("wire-get");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    let r = c.get("/hello.txt", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, HELLO.as_bytes());
    assert_eq!(r.h("content-length"), "20");
    assert_eq!(r.h("content-type"), "text/plain; charset=utf-8");
    assert_eq!(r.h("accept-ranges"), "bytes");
    assert!(r.h("etag").starts_with('"'));
    assert!(r.has("last-modified") && r.has("date"));
    // Same connection (keep-alive), HEAD: same headers, no body.
    let h = c.request("HEAD", "/hello.txt", &[]);
    assert_eq!(
        (h.status, h.h("content-length"), h.h("etag")),
        (200, "20", r.h("etag"))
    );
    let r = c.get("/", &[]);
    assert_eq!((r.status, r.text().as_str()), (200, "<h1>home</h1>\n"));
    assert_eq!(r.h("content-type"), "text/html; charset=utf-8");
    for m in ["POST", "PUT", "DELETE", "PATCH"] {
        let r = c.request(m, "/hello.txt", &["Content-Length: 0"]);
        assert_eq!((r.status, r.h("allow")), (405, "GET, HEAD, OPTIONS"), "{m}");
    }
    for target in ["/hello.txt", "*"] {
        let r = c.request("OPTIONS", target, &["Content-Length: 0"]);
        assert_eq!(
            (r.status, r.h("allow")),
            (200, "GET, HEAD, OPTIONS"),
            "OPTIONS {target}"
        );
    }
    assert_eq!(c.get("/missing.txt", &[]).status, 404);
}

#[test]
fn pipelined_requests_answered_in_order() {
    let t = tree("wire-pipe");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    c.send_raw(
        b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /missing HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=-3\r\n\r\n",
    );
    let a = c.read_response(false);
    let b = c.read_response(false);
    let d = c.read_response(false);
    assert_eq!((a.status, b.status, d.status), (200, 404, 206));
    assert_eq!(
        (a.body.as_slice(), d.body.as_slice()),
        (HELLO.as_bytes(), &b"hij"[..])
    );
}

#[test]
fn directories_redirect_forbid_and_list() {
    let t = tree("wire-dirs");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let r = get(srv.addr(), "/docs?x=1", &[]);
    assert_eq!((r.status, r.h("location")), (301, "/docs/?x=1"));
    // Never a protocol-relative (`//host/...`) redirect.
    let r = get(srv.addr(), "//docs", &[]);
    assert_eq!((r.status, r.h("location")), (301, "/docs/"));
    assert_eq!(get(srv.addr(), "/docs/", &[]).status, 403);

    let mut cfg = config(&t);
    cfg.listing = true;
    let srv = files_util::serve(FileServer::new(cfg).unwrap());
    let r = get(srv.addr(), "/docs/", &[]);
    assert_eq!(
        (r.status, r.h("content-type")),
        (200, "text/html; charset=utf-8")
    );
    let html = r.text();
    assert!(html.contains("href=\"./a%20b.txt\">a b.txt</a>"), "{html}");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;.txt"),
        "{html}"
    );
    assert!(!html.contains("<img"), "{html}");
    assert_eq!(get(srv.addr(), "/docs/a%20b.txt", &[]).text(), "space");
    let root = get(srv.addr(), "/empty/", &[]);
    assert_eq!(root.status, 200);
}

/// Every escape attempt, sent as raw bytes (clients would normalize most of these).
#[test]
fn traversal_attempts_never_leave_the_root() {
    let t = tree("wire-trav");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let table: &[(&str, &[u16])] = &[
        ("/../secret.txt", &[400]),
        ("/../../../../etc/passwd", &[400]),
        ("/%2e%2e/secret.txt", &[400]),
        ("/%2E%2E/secret.txt", &[400]),
        ("/.%2e/secret.txt", &[400]),
        ("/docs/..%2f..%2fsecret.txt", &[400]),
        ("/docs%2f%2e%2e%2f%2e%2e%2fsecret.txt", &[400]),
        ("/%2fetc%2fpasswd", &[400]),
        ("/..%5csecret.txt", &[400]),
        ("/docs\\..\\..\\secret.txt", &[400]),
        ("/hello.txt%00.html", &[400]),
        ("/%", &[400]),
        ("/%zz", &[400]),
        ("/escape", &[403]),
        ("/up/secret.txt", &[403]),
        // Leaves the root and comes back in: the canonical path is inside, so it is served.
        ("/up/root/hello.txt", &[200]),
        ("/.env", &[404]),
        ("/.git/config", &[404]),
        ("/%2egit/config", &[404]),
        ("/docs/../hello.txt", &[400]),
        ("http://test/../secret.txt", &[400]),
    ];
    for &(target, want) in table {
        let r = get(srv.addr(), target, &[]);
        assert!(want.contains(&r.status), "{target}: got {}", r.status);
        assert!(
            !r.text().contains("TOPSECRET") && !r.text().contains("SECRET=1"),
            "{target}"
        );
    }
    // Raw NUL and bare backslash in the request line never reach a file either.
    for raw in [
        &b"GET /hello.txt\0 HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"GET \\secret.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let mut c = Client::connect(srv.addr());
        c.send_raw(raw);
        let r = c.read_response(false);
        assert!(
            (400..500).contains(&r.status),
            "{:?}: {}",
            String::from_utf8_lossy(raw),
            r.status
        );
    }
    // Opting in serves them.
    let mut cfg = config(&t);
    cfg.allow_hidden = true;
    cfg.follow_symlinks = true;
    let srv = files_util::serve(FileServer::new(cfg).unwrap());
    assert_eq!(get(srv.addr(), "/.env", &[]).text(), "SECRET=1");
    assert_eq!(get(srv.addr(), "/escape", &[]).text(), "TOPSECRET");
    assert_eq!(get(srv.addr(), "/../secret.txt", &[]).status, 400);
}

#[test]
fn conditional_requests() {
    let t = tree("wire-cond");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    let r = c.get("/hello.txt", &[]);
    let (etag, lm) = (r.h("etag").to_string(), r.h("last-modified").to_string());
    let r = c.get("/hello.txt", &[&format!("If-None-Match: {etag}")]);
    assert_eq!((r.status, r.h("etag")), (304, etag.as_str()));
    assert!(r.body.is_empty());
    let r = c.get(
        "/hello.txt",
        &[&format!("If-None-Match: \"other\", W/{etag}")],
    );
    assert_eq!(r.status, 304);
    assert_eq!(
        c.get("/hello.txt", &[&format!("If-Modified-Since: {lm}")])
            .status,
        304
    );
    let old = "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT";
    assert_eq!(c.get("/hello.txt", &[old]).status, 200);
    assert_eq!(c.get("/hello.txt", &["If-Match: \"nope\""]).status, 412);
    assert_eq!(
        c.get("/hello.txt", &[&format!("If-Match: {etag}")]).status,
        200
    );
    let ius = "If-Unmodified-Since: Sat, 01 Jan 2000 00:00:00 GMT";
    assert_eq!(c.get("/hello.txt", &[ius]).status, 412);
    // The connection is still usable after 304/412.
    assert_eq!(c.get("/hello.txt", &[]).body, HELLO.as_bytes());
}

#[test]
fn range_requests() {
    let t = tree("wire-range");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    let etag = c.get("/hello.txt", &[]).h("etag").to_string();
    let cases: &[(&str, u16, &str, &str)] = &[
        ("bytes=0-3", 206, "bytes 0-3/20", "0123"),
        ("bytes=10-", 206, "bytes 10-19/20", "abcdefghij"),
        ("bytes=-4", 206, "bytes 16-19/20", "ghij"),
        ("bytes=5-5", 206, "bytes 5-5/20", "5"),
        ("bytes=20-", 416, "bytes */20", ""),
        ("bytes=0-1,4-5", 200, "", HELLO),
        ("lines=1-2", 200, "", HELLO),
    ];
    for &(range, status, cr, want) in cases {
        let r = c.get("/hello.txt", &[&format!("Range: {range}")]);
        assert_eq!((r.status, r.h("content-range")), (status, cr), "{range}");
        if status != 416 {
            assert_eq!(r.text(), want, "{range}");
            assert_eq!(r.h("content-length"), want.len().to_string());
        }
    }
    let r = c.get(
        "/hello.txt",
        &["Range: bytes=0-3", &format!("If-Range: {etag}")],
    );
    assert_eq!((r.status, r.text().as_str()), (206, "0123"));
    let r = c.get("/hello.txt", &["Range: bytes=0-3", "If-Range: \"stale\""]);
    assert_eq!((r.status, r.text().as_str()), (200, HELLO));
}

#[test]
fn precompressed_siblings_and_vary() {
    let t = tree("wire-enc");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    let r = c.get("/app.js", &["Accept-Encoding: gzip, deflate, br"]);
    assert_eq!((r.text().as_str(), r.h("content-encoding")), ("BR", "br"));
    assert_eq!(r.h("vary"), "Accept-Encoding");
    assert!(r.h("content-type").contains("javascript"));
    let r = c.get("/app.js", &["Accept-Encoding: gzip"]);
    assert_eq!((r.text().as_str(), r.h("content-encoding")), ("GZ", "gzip"));
    let r = c.get("/app.js", &[]);
    assert_eq!(
        (r.text().as_str(), r.has("content-encoding")),
        ("console.log(1)", false)
    );
    assert_eq!(r.h("vary"), "Accept-Encoding");
    let r = c.get("/hello.txt", &["Accept-Encoding: br, gzip"]);
    assert!(!r.has("content-encoding") && !r.has("vary"));
}

#[test]
fn large_file_whole_and_ranged() {
    let t = tree("wire-large");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    t.write("big.bin", &data);
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    let r = c.get("/big.bin", &[]);
    assert_eq!(r.h("content-type"), "application/octet-stream");
    assert!(r.body == data, "whole body differs");
    let r = c.get("/big.bin", &["Range: bytes=1000000-1999999"]);
    assert_eq!(r.status, 206);
    assert!(
        r.body[..] == data[1_000_000..2_000_000],
        "ranged body differs"
    );
}

#[test]
fn cache_serves_hot_files_and_notices_changes() {
    let t = tree("wire-cache");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    for _ in 0..10 {
        assert_eq!(c.get("/hello.txt", &[]).status, 200);
    }
    let st = srv.files().cache_stats();
    assert!(st.hits >= 9 && st.misses >= 1, "{st:?}");

    let mut cfg = config(&t);
    cfg.cache_ttl = Duration::from_millis(1);
    let srv = files_util::serve(FileServer::new(cfg).unwrap());
    let mut c = Client::connect(srv.addr());
    let before = c.get("/hello.txt", &[]);
    t.write("hello.txt", "new content");
    std::thread::sleep(Duration::from_millis(20));
    let after = c.get("/hello.txt", &[]);
    assert_eq!(after.text(), "new content");
    assert_ne!(before.h("etag"), after.h("etag"));
}

#[test]
fn concurrent_clients_share_the_cache_across_workers() {
    let t = tree("wire-conc");
    let srv = files_util::serve_workers(FileServer::new(config(&t)).unwrap(), 2);
    let addr = srv.addr();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for j in 0..40 {
                    let r = if (i + j) % 2 == 0 {
                        c.get("/hello.txt", &["Range: bytes=2-4"])
                    } else {
                        c.get("/app.js", &["Accept-Encoding: br"])
                    };
                    let want: &[u8] = if (i + j) % 2 == 0 { b"234" } else { b"BR" };
                    assert_eq!(r.body, want);
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let st = srv.files().cache_stats();
    assert_eq!(st.hits + st.misses, 240);
    assert!(st.misses <= 12, "{st:?}");
}
