//! Services mounted in a router: the file server (ranges, whole files, directory
//! redirects) and the reverse proxy (forwarding, 404 for no route), over real sockets and
//! through `TestClient`.

mod raw_http;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use fibra_files::{FileServer, FileServerConfig};
use fibra_proxy::Proxy;
use fibra_web::extract::Path as UrlPath;
use fibra_web::routing::get;
use fibra_web::test::{TestClient, TestServer};
use fibra_web::Router;
use raw_http::Conn;

/// A directory of its own under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("fibra-web-services-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn write(&self, rel: &str, data: &[u8]) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes that differ from one offset to the next (over a period longer than a range).
fn big_file() -> Vec<u8> {
    (0..300_000u32).map(|i| (i % 251) as u8).collect()
}

/// `/` answered by the app, the directory mounted at `/static`.
fn app(dir: &TempDir) -> Router {
    let files = FileServer::new(FileServerConfig::new(dir.path())).unwrap();
    Router::new()
        .route("/", get(|| "home"))
        .mount("/static", files)
}

fn tree() -> TempDir {
    let dir = TempDir::new();
    dir.write("a.txt", b"0123456789");
    dir.write("big.bin", &big_file());
    dir.write("docs/index.html", b"<p>docs</p>");
    dir
}

#[test]
fn mounted_files_with_ranges_on_the_wire() {
    let dir = tree();
    let server = TestServer::spawn(app(&dir)).unwrap();
    let mut c = Conn::open(server.addr());

    c.get("/static/a.txt", &[("Range", "bytes=2-5")]);
    let head = c.head();
    assert_eq!(head.status, 206);
    assert_eq!(head.header("content-range"), Some("bytes 2-5/10"));
    assert_eq!(c.body(&head), b"2345");

    c.get("/static/a.txt", &[]);
    let head = c.head();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("accept-ranges"), Some("bytes"));
    assert!(
        head.header("content-type")
            .unwrap()
            .starts_with("text/plain"),
        "{head:?}"
    );
    assert_eq!(c.body(&head), b"0123456789");

    // A range of a file too big to copy goes out with sendfile.
    c.get("/static/big.bin", &[("Range", "bytes=100000-199999")]);
    let head = c.head();
    assert_eq!(head.status, 206);
    assert_eq!(
        head.header("content-range"),
        Some("bytes 100000-199999/300000")
    );
    assert_eq!(c.body(&head), &big_file()[100_000..200_000]);

    c.get("/static/a.txt", &[("Range", "bytes=20-30")]);
    let head = c.head();
    assert_eq!(head.status, 416);
    assert_eq!(head.header("content-range"), Some("bytes */10"));
    c.body(&head);

    // The router's own routes and the 404s of both.
    c.get("/", &[]);
    let head = c.head();
    assert_eq!(c.body(&head), b"home");
    c.get("/static/nope.txt", &[]);
    let head = c.head();
    assert_eq!(head.status, 404);
    c.body(&head);
}

#[test]
fn a_mounted_directory_redirects_relatively() {
    let dir = tree();
    let client = TestClient::new(app(&dir));
    let res = client.get("/static/docs").send();
    assert_eq!(res.status(), 301);
    assert_eq!(res.header("location"), Some("./docs/"));
    assert_eq!(client.get("/static/docs/").send().text(), "<p>docs</p>");
}

#[test]
fn the_test_client_collects_file_ranges() {
    let dir = tree();
    let client = TestClient::new(app(&dir));
    let res = client
        .get("/static/a.txt")
        .header("range", "bytes=2-5")
        .send();
    assert_eq!(res.status(), 206);
    assert_eq!(res.header("content-range"), Some("bytes 2-5/10"));
    assert_eq!(res.text(), "2345");
    let res = client.get("/static/big.bin").send();
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().as_ref(), big_file().as_slice());
}

#[test]
fn a_mounted_proxy_forwards_what_it_routes() {
    let upstream = TestServer::spawn(Router::new().route(
        "/echo/{*rest}",
        get(|UrlPath(rest): UrlPath<String>| format!("upstream saw {rest}")),
    ))
    .unwrap();
    let proxy = Proxy::new()
        .route("/echo/", &format!("http://{}/echo/", upstream.addr()))
        .unwrap();
    let server = TestServer::spawn(Router::new().mount("/api", proxy)).unwrap();
    let mut c = Conn::open(server.addr());
    c.get("/api/echo/a/b", &[]);
    let head = c.head();
    assert_eq!(head.status, 200);
    assert_eq!(c.body(&head), b"upstream saw a/b");
    // A path no route of the proxy takes.
    c.get("/api/other", &[]);
    let head = c.head();
    assert_eq!(head.status, 404);
    assert_eq!(c.body(&head), b"Not Found\n");
}
