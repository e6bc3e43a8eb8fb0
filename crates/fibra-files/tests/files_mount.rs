//! `FileServer` mounted under a prefix next to an application's own handlers, with the
//! combined-format access log (written by the connection loop, one line per request), over
//! real sockets.

mod files_util;

use std::sync::Arc;
use std::time::Duration;

use fibra_files::{AccessLog, FileServer, FileServerConfig};
use fibra_http::{Request, Response, Server};
use files_util::{Client, TempTree};

#[test]
fn mounted_next_to_app_handlers_with_access_log() {
    let t = TempTree::new("mount");
    t.write("app.css", "body{}");
    t.write("sub/index.html", "<p>sub</p>");
    let log_path = t.base_path().join("access.log");
    let mut cfg = FileServerConfig::new(&t.root);
    cfg.prefix = "/static".into();
    cfg.cache_control = Some("public, max-age=3600".into());
    let log = AccessLog::file(&log_path).unwrap();
    let files = Arc::new(FileServer::new(cfg).unwrap());
    let f = files.clone();
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .access_log_sink(log.clone())
        .serve(move |req: Request| {
            if f.matches(req.uri().path()) {
                f.handle(&req)
            } else if req.uri().path() == "/api" {
                Response::new("api".into())
            } else {
                let mut r = Response::new("app 404".into());
                *r.status_mut() = http::StatusCode::NOT_FOUND;
                r
            }
        })
        .unwrap();

    let mut c = Client::connect(server.local_addr());
    let r = c.get(
        "/static/app.css",
        &["User-Agent: test-agent \"q\"", "Referer: http://r/"],
    );
    assert_eq!((r.status, r.text().as_str()), (200, "body{}"));
    assert_eq!(r.h("cache-control"), "public, max-age=3600");
    assert_eq!(c.get("/api", &[]).text(), "api");
    assert_eq!(c.get("/app.css", &[]).text(), "app 404");
    assert_eq!(c.get("/staticfoo", &[]).text(), "app 404");
    let r = c.get("/static/sub", &[]);
    assert_eq!((r.status, r.h("location")), (301, "/static/sub/"));
    assert_eq!(c.get("/static/sub/", &[]).text(), "<p>sub</p>");
    assert_eq!(c.get("/static/nope", &[]).status, 404);
    let h = c.request("HEAD", "/static/app.css", &[]);
    assert_eq!((h.status, h.h("content-length")), (200, "6"));

    server.shutdown(Duration::from_secs(5));
    log.flush().unwrap();
    let text = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Every request, the app's own included.
    assert_eq!(lines.len(), 8, "{text}");
    assert!(lines[0].starts_with("127.0.0.1 - - ["), "{}", lines[0]);
    assert!(
        lines[0].ends_with(
            "] \"GET /static/app.css HTTP/1.1\" 200 6 \"http://r/\" \"test-agent \\x22q\\x22\""
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("\"GET /api HTTP/1.1\" 200 3 \"-\" \"-\""),
        "{}",
        lines[1]
    );
    assert!(
        lines[4].contains("\"GET /static/sub HTTP/1.1\" 301 "),
        "{}",
        lines[4]
    );
    assert!(
        lines[6].contains("\"GET /static/nope HTTP/1.1\" 404 "),
        "{}",
        lines[6]
    );
    assert!(
        lines[7].contains("\"HEAD /static/app.css HTTP/1.1\" 200 - \"-\" \"-\""),
        "{}",
        lines[7]
    );
}

/// The file server as a `Service` served on its own: files as `handle` answers them, and a
/// directory named without its slash sent to a relative `Location` (right under any prefix
/// a router may have taken off the path).
#[test]
fn served_as_a_service_with_relative_directory_redirects() {
    let t = TempTree::new("service");
    t.write("a.txt", "0123456789");
    t.write("docs/index.html", "<p>docs</p>");
    let mut cfg = FileServerConfig::new(&t.root);
    cfg.prefix = "/static".into();
    let server = Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(FileServer::new(cfg).unwrap())
        .unwrap();
    let mut c = Client::connect(server.local_addr());
    let r = c.get("/static/a.txt", &["Range: bytes=2-5"]);
    assert_eq!((r.status, r.text().as_str()), (206, "2345"));
    let r = c.get("/static/docs?x=1", &[]);
    assert_eq!((r.status, r.h("location")), (301, "./docs/?x=1"));
    assert_eq!(c.get("/static/docs/", &[]).text(), "<p>docs</p>");
    assert_eq!(c.get("/elsewhere", &[]).status, 404);
    server.shutdown(Duration::from_secs(5));
}
