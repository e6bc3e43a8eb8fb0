//! `FileServer::reply` unit tests: every behaviour of the request -> reply logic, without
//! sockets (the wire-level tests are in `tests/files_*.rs`).

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use crate::server::{FileBody, FileReply, FileServer, FileServerConfig};

struct Fixture {
    base: PathBuf,
    root: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let base = std::env::temp_dir().join(format!("fibra-files-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("root");
        fs::create_dir_all(root.join("docs/empty")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join("index.html"), "<h1>home</h1>\n").unwrap();
        fs::write(root.join("hello.txt"), "0123456789abcdefghij").unwrap();
        fs::write(root.join("app.js"), "console.log(1)").unwrap();
        fs::write(root.join("app.js.gz"), "GZ").unwrap();
        fs::write(root.join("app.js.br"), "BR").unwrap();
        fs::write(root.join("only.css"), "a{}").unwrap();
        fs::write(root.join("only.css.gz"), "GZCSS").unwrap();
        fs::write(root.join(".env"), "SECRET=1").unwrap();
        fs::write(root.join(".git/config"), "x").unwrap();
        fs::write(root.join("docs/a b.txt"), "space").unwrap();
        fs::write(base.join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.join("hello.txt"), root.join("inside")).unwrap();
        Fixture { base, root }
    }

    fn server(&self, f: impl FnOnce(&mut FileServerConfig)) -> FileServer {
        let mut c = FileServerConfig::new(&self.root);
        c.cache_ttl = Duration::from_secs(3600);
        f(&mut c);
        FileServer::new(c).unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

fn get(s: &FileServer, target: &str, hdrs: &[(&str, &str)]) -> FileReply {
    req(s, Method::GET, target, hdrs)
}

fn req(s: &FileServer, m: Method, target: &str, hdrs: &[(&str, &str)]) -> FileReply {
    let mut h = HeaderMap::new();
    for (k, v) in hdrs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let (path, query) = crate::path::split_target(target);
    s.reply(&m, path, query, &h)
}

fn hv(r: &FileReply, name: HeaderName) -> &str {
    r.get(&name).map(|v| v.to_str().unwrap()).unwrap_or("")
}

fn body(r: &FileReply) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    match &r.body {
        FileBody::Empty => Vec::new(),
        FileBody::Bytes(b) => b.to_vec(),
        FileBody::File { file, offset, len } => {
            let mut v = vec![0; *len as usize];
            file.read_exact_at(&mut v, *offset).unwrap();
            v
        }
    }
}

#[test]
fn plain_get_and_head() {
    let fx = Fixture::new("plain");
    let s = fx.server(|c| c.cache_control = Some("max-age=60".into()));
    let r = get(&s, "/hello.txt?x=1", &[]);
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(body(&r), b"0123456789abcdefghij");
    assert_eq!(hv(&r, header::CONTENT_TYPE), "text/plain; charset=utf-8");
    assert_eq!(hv(&r, header::ACCEPT_RANGES), "bytes");
    assert_eq!(hv(&r, header::CACHE_CONTROL), "max-age=60");
    assert!(hv(&r, header::ETAG).starts_with('"'));
    assert!(httpdate::parse_http_date(hv(&r, header::LAST_MODIFIED)).is_ok());
    assert!(r.get(&header::VARY).is_none());
    let h = req(&s, Method::HEAD, "/hello.txt", &[("range", "bytes=0-1")]);
    assert_eq!(h.status, StatusCode::OK, "HEAD ignores Range");
    assert_eq!(h.body.len(), 20);
    for m in [Method::POST, Method::PUT, Method::DELETE, Method::CONNECT] {
        let r = req(&s, m, "/hello.txt", &[]);
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(hv(&r, header::ALLOW), "GET, HEAD, OPTIONS");
    }
    for target in ["/hello.txt", "*"] {
        let r = req(&s, Method::OPTIONS, target, &[]);
        assert_eq!(r.status, StatusCode::OK, "OPTIONS {target}");
        assert_eq!(hv(&r, header::ALLOW), "GET, HEAD, OPTIONS");
        assert!(r.body.is_empty());
    }
}

#[test]
fn directories() {
    let fx = Fixture::new("dirs");
    let s = fx.server(|_| {});
    let r = get(&s, "/", &[]);
    assert_eq!(
        (r.status, body(&r)),
        (StatusCode::OK, b"<h1>home</h1>\n".to_vec())
    );
    assert_eq!(hv(&r, header::CONTENT_TYPE), "text/html; charset=utf-8");
    let r = get(&s, "/docs?q=1", &[]);
    assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(hv(&r, header::LOCATION), "/docs/?q=1");
    assert_eq!(get(&s, "/docs/", &[]).status, StatusCode::FORBIDDEN);
    assert_eq!(get(&s, "/hello.txt/", &[]).status, StatusCode::NOT_FOUND);
    let s = fx.server(|c| c.listing = true);
    let r = get(&s, "/docs/", &[]);
    assert_eq!(r.status, StatusCode::OK);
    let html = String::from_utf8(body(&r)).unwrap();
    assert!(html.contains("href=\"./a%20b.txt\">a b.txt</a>") && html.contains("./empty/"));
    assert_eq!(body(&get(&s, "/docs/a%20b.txt", &[])), b"space");
}

#[test]
fn mounted_under_prefix() {
    let fx = Fixture::new("prefix");
    let s = fx.server(|c| c.prefix = "/static/".into());
    assert_eq!(s.prefix(), "/static");
    assert!(s.matches("/static/x") && s.matches("/static") && !s.matches("/staticx"));
    assert_eq!(
        body(&get(&s, "/static/hello.txt", &[])),
        b"0123456789abcdefghij"
    );
    let r = get(&s, "/static", &[]);
    assert_eq!(
        (r.status, hv(&r, header::LOCATION)),
        (StatusCode::MOVED_PERMANENTLY, "/static/")
    );
    assert_eq!(
        hv(&get(&s, "/static/docs", &[]), header::LOCATION),
        "/static/docs/"
    );
    assert_eq!(get(&s, "/hello.txt", &[]).status, StatusCode::NOT_FOUND);
    assert_eq!(
        get(&s, "/staticx/hello.txt", &[]).status,
        StatusCode::NOT_FOUND
    );
}

#[test]
fn traversal_hidden_and_symlinks() {
    let fx = Fixture::new("trav");
    let s = fx.server(|_| {});
    let table: &[(&str, u16)] = &[
        ("/../secret.txt", 400),
        ("/%2e%2e/secret.txt", 400),
        ("/docs/%2E%2E/%2e%2e/secret.txt", 400),
        ("/docs%2f..%2f..%2fsecret.txt", 400),
        ("/..%5csecret.txt", 400),
        ("/docs\\..\\..\\secret.txt", 400),
        ("/hello.txt%00.png", 400),
        ("/%", 400),
        ("/.env", 404),
        ("/.git/config", 404),
        ("/%2eenv", 404),
        ("/escape", 403),
        ("/nonexistent", 404),
    ];
    for &(target, status) in table {
        let r = get(&s, target, &[]);
        assert_eq!(r.status.as_u16(), status, "{target}");
        assert!(!body(&r).starts_with(b"outside") && !body(&r).starts_with(b"SECRET"));
    }
    assert_eq!(get(&s, "/inside", &[]).status, StatusCode::OK);
    let s = fx.server(|c| {
        c.allow_hidden = true;
        c.follow_symlinks = true;
    });
    assert_eq!(body(&get(&s, "/.env", &[])), b"SECRET=1");
    assert_eq!(body(&get(&s, "/escape", &[])), b"outside");
    assert_eq!(
        get(&s, "/../secret.txt", &[]).status,
        StatusCode::BAD_REQUEST
    );
}

#[test]
fn conditionals() {
    let fx = Fixture::new("cond");
    let s = fx.server(|_| {});
    let r = get(&s, "/hello.txt", &[]);
    let etag = hv(&r, header::ETAG).to_string();
    let lm = hv(&r, header::LAST_MODIFIED).to_string();
    let r = get(&s, "/hello.txt", &[("if-none-match", &etag)]);
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    assert!(r.body.is_empty() && r.get(&header::CONTENT_TYPE).is_none());
    assert_eq!(hv(&r, header::ETAG), etag);
    assert_eq!(
        get(&s, "/hello.txt", &[("if-modified-since", &lm)]).status,
        StatusCode::NOT_MODIFIED
    );
    assert_eq!(
        get(&s, "/hello.txt", &[("if-none-match", "\"x\"")]).status,
        StatusCode::OK
    );
    assert_eq!(
        get(&s, "/hello.txt", &[("if-match", "\"x\"")]).status,
        StatusCode::PRECONDITION_FAILED
    );
    assert_eq!(
        get(&s, "/hello.txt", &[("if-match", &etag)]).status,
        StatusCode::OK
    );
    let old = "Mon, 01 Jan 1990 00:00:00 GMT";
    assert_eq!(
        get(&s, "/hello.txt", &[("if-unmodified-since", old)]).status,
        StatusCode::PRECONDITION_FAILED
    );
    assert_eq!(
        get(&s, "/hello.txt", &[("if-modified-since", old)]).status,
        StatusCode::OK
    );
}

#[test]
fn ranges() {
    let fx = Fixture::new("range");
    let s = fx.server(|_| {});
    let etag = hv(&get(&s, "/hello.txt", &[]), header::ETAG).to_string();
    let cases: &[(&str, u16, &str, &[u8])] = &[
        ("bytes=0-3", 206, "bytes 0-3/20", b"0123"),
        ("bytes=15-", 206, "bytes 15-19/20", b"fghij"),
        ("bytes=-3", 206, "bytes 17-19/20", b"hij"),
        ("bytes=10-99", 206, "bytes 10-19/20", b"abcdefghij"),
        (
            "bytes=20-",
            416,
            "bytes */20",
            b"416 Range Not Satisfiable\n",
        ),
        ("bytes=0-1,5-6", 200, "", b"0123456789abcdefghij"),
        ("bytes=x", 200, "", b"0123456789abcdefghij"),
    ];
    for &(range, status, cr, want) in cases {
        let r = get(&s, "/hello.txt", &[("range", range)]);
        assert_eq!(r.status.as_u16(), status, "{range}");
        assert_eq!(hv(&r, header::CONTENT_RANGE), cr, "{range}");
        assert_eq!(body(&r), want, "{range}");
    }
    let r = get(
        &s,
        "/hello.txt",
        &[("range", "bytes=0-3"), ("if-range", &etag)],
    );
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    let r = get(
        &s,
        "/hello.txt",
        &[("range", "bytes=0-3"), ("if-range", "\"stale\"")],
    );
    assert_eq!((r.status, r.body.len()), (StatusCode::OK, 20));
}

#[test]
fn precompressed_siblings() {
    let fx = Fixture::new("enc");
    let s = fx.server(|_| {});
    let cases: &[(&str, &str, &str, &[u8])] = &[
        ("gzip, deflate, br", "br", "/app.js", b"BR"),
        ("gzip", "gzip", "/app.js", b"GZ"),
        ("br;q=0, gzip", "gzip", "/app.js", b"GZ"),
        ("", "", "/app.js", b"console.log(1)"),
        ("br", "", "/only.css", b"a{}"),
        ("br, gzip", "gzip", "/only.css", b"GZCSS"),
        ("br, gzip", "", "/hello.txt", b"0123456789abcdefghij"),
    ];
    for &(ae, ce, path, want) in cases {
        let r = get(&s, path, &[("accept-encoding", ae)]);
        assert_eq!(hv(&r, header::CONTENT_ENCODING), ce, "{path} {ae}");
        assert_eq!(body(&r), want, "{path} {ae}");
        let vary = if path == "/hello.txt" {
            ""
        } else {
            "Accept-Encoding"
        };
        assert_eq!(hv(&r, header::VARY), vary);
    }
    let js = get(&s, "/app.js", &[("accept-encoding", "br")]);
    assert!(hv(&js, header::CONTENT_TYPE).contains("javascript"));
    let plain = get(&s, "/app.js", &[]);
    assert_ne!(hv(&js, header::ETAG), hv(&plain, header::ETAG));
    let r = get(
        &s,
        "/app.js",
        &[("accept-encoding", "br"), ("range", "bytes=1-")],
    );
    assert_eq!((r.status.as_u16(), body(&r)), (206, b"R".to_vec()));
}

#[test]
fn cache_hits_and_sees_every_change_at_once() {
    let fx = Fixture::new("cache");
    let s = fx.server(|_| {});
    for _ in 0..5 {
        assert_eq!(get(&s, "/hello.txt", &[]).status, StatusCode::OK);
    }
    let st = s.cache_stats();
    assert_eq!((st.hits, st.misses), (4, 1));

    // Outside a runtime the watcher reads its events on every request, and the kernel queues
    // them before the writing call returns: each change is seen by the very next request.
    let big = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
    let path = fx.root.join("hello.txt");
    let before = get(&s, "/hello.txt", &[]);
    fs::write(&path, "changed").unwrap();
    let after = get(&s, "/hello.txt", &[]);
    assert_eq!(body(&after), b"changed");
    assert_ne!(hv(&before, header::ETAG), hv(&after, header::ETAG));
    // Larger, then smaller (sent from the file, then from memory).
    fs::write(&path, big(100_000)).unwrap();
    assert_eq!(body(&get(&s, "/hello.txt", &[])), big(100_000));
    fs::write(&path, big(1000)).unwrap();
    assert_eq!(body(&get(&s, "/hello.txt", &[])), big(1000));
    // Replaced by rename (how editors and deploy tools write).
    fs::write(fx.root.join(".tmp"), "renamed").unwrap();
    fs::rename(fx.root.join(".tmp"), &path).unwrap();
    assert_eq!(body(&get(&s, "/hello.txt", &[])), b"renamed");
    // Deleted, created, and a sibling appearing.
    fs::remove_file(&path).unwrap();
    assert_eq!(get(&s, "/hello.txt", &[]).status, StatusCode::NOT_FOUND);
    assert_eq!(get(&s, "/new/x.txt", &[]).status, StatusCode::NOT_FOUND);
    fs::create_dir(fx.root.join("new")).unwrap();
    fs::write(fx.root.join("new/x.txt"), "new").unwrap();
    assert_eq!(body(&get(&s, "/new/x.txt", &[])), b"new");
    let gz = [("accept-encoding", "gzip")];
    assert_eq!(body(&get(&s, "/new/x.txt", &gz)), b"new");
    fs::write(fx.root.join("new/x.txt.gz"), "GZ").unwrap();
    assert_eq!(body(&get(&s, "/new/x.txt", &gz)), b"GZ");
    // A directory renamed away and another put in its place.
    fs::rename(fx.root.join("new"), fx.root.join("old")).unwrap();
    assert_eq!(get(&s, "/new/x.txt", &[]).status, StatusCode::NOT_FOUND);
    assert_eq!(body(&get(&s, "/old/x.txt", &[])), b"new");
    fs::create_dir(fx.root.join("new")).unwrap();
    fs::write(fx.root.join("new/x.txt"), "newer").unwrap();
    assert_eq!(body(&get(&s, "/new/x.txt", &[])), b"newer");
    fs::write(fx.root.join("new/x.txt"), "newest").unwrap();
    assert_eq!(body(&get(&s, "/new/x.txt", &[])), b"newest");
    // A file reached through a symlink, and an index file.
    assert_eq!(get(&s, "/inside", &[]).status, StatusCode::NOT_FOUND);
    fs::write(&path, "via link").unwrap();
    assert_eq!(body(&get(&s, "/inside", &[])), b"via link");
    fs::write(fx.root.join("docs/index.html"), "idx").unwrap();
    assert_eq!(body(&get(&s, "/docs/", &[])), b"idx");
    fs::write(fx.root.join("docs/index.html"), "idx2").unwrap();
    assert_eq!(body(&get(&s, "/docs/", &[])), b"idx2");
}

#[test]
fn small_files_come_from_memory_large_ones_from_the_file() {
    let fx = Fixture::new("inline");
    let big: Vec<u8> = (0..(crate::open::INLINE_CONTENTS as usize + 1))
        .map(|i| (i % 251) as u8)
        .collect();
    fs::write(fx.root.join("big.bin"), &big).unwrap();
    let s = fx.server(|_| {});
    let small = get(&s, "/hello.txt", &[]);
    assert!(matches!(small.body, FileBody::Bytes(_)), "{:?}", small.body);
    assert_eq!(body(&small), b"0123456789abcdefghij");
    let part = get(&s, "/hello.txt", &[("range", "bytes=2-4")]);
    assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body(&part), b"234");
    let large = get(&s, "/big.bin", &[]);
    assert!(
        matches!(large.body, FileBody::File { .. }),
        "{:?}",
        large.body
    );
    assert_eq!(body(&large), big);
}

#[test]
fn field_rules_reach_every_reply_and_cached_heads() {
    let fx = Fixture::new("rules");
    let s = fx.server(|c| {
        c.headers = crate::field_rules::FieldRules {
            set: vec![(
                HeaderName::from_static("x-frame-options"),
                HeaderValue::from_static("DENY"),
            )],
            add: vec![(
                HeaderName::from_static("x-extra"),
                HeaderValue::from_static("1"),
            )],
            remove: vec![header::ACCEPT_RANGES],
        }
    });
    // Twice: the second answer comes from the cached, rendered head.
    for _ in 0..2 {
        let r = get(&s, "/hello.txt", &[]);
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(hv(&r, HeaderName::from_static("x-frame-options")), "DENY");
        assert_eq!(hv(&r, HeaderName::from_static("x-extra")), "1");
        assert!(r.get(&header::ACCEPT_RANGES).is_none());
    }
    let etag = hv(&get(&s, "/hello.txt", &[]), header::ETAG).to_owned();
    let not_modified = get(&s, "/hello.txt", &[("if-none-match", &etag)]);
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    assert_eq!(
        hv(&not_modified, HeaderName::from_static("x-frame-options")),
        "DENY"
    );
    let missing = get(&s, "/nope", &[]);
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        hv(&missing, HeaderName::from_static("x-frame-options")),
        "DENY"
    );
}

#[test]
fn file_servers_sharing_a_cache_keep_their_files_apart() {
    let (a, b) = (Fixture::new("shared-a"), Fixture::new("shared-b"));
    fs::write(b.root.join("hello.txt"), "the other root").unwrap();
    let shared = std::sync::Arc::new(crate::cache::FileCache::new(
        Duration::from_secs(3600),
        64,
        1 << 20,
    ));
    let sa = a.server(|c| c.shared_cache = Some(shared.clone()));
    let sb = b.server(|c| c.shared_cache = Some(shared.clone()));
    assert!(sa.caching() && sb.caching());
    for _ in 0..2 {
        assert_eq!(body(&get(&sa, "/hello.txt", &[])), b"0123456789abcdefghij");
        assert_eq!(body(&get(&sb, "/hello.txt", &[])), b"the other root");
    }
    assert_eq!(shared.len(), 2, "one entry each, in one cache");
    // A change in one root is seen there, and only that entry goes.
    fs::write(a.root.join("hello.txt"), "changed").unwrap();
    assert!(
        (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            body(&get(&sa, "/hello.txt", &[])) == b"changed"
        }),
        "the change is seen"
    );
    assert_eq!(body(&get(&sb, "/hello.txt", &[])), b"the other root");
    // A file server that goes takes its entries with it.
    drop(sa);
    assert_eq!(shared.len(), 1);
}
