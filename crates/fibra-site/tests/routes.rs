//! A site file's sites and routes over real connections: virtual hosts (exact, wildcard,
//! default), routes (exact, longest prefix, order-free), access checks before the action
//! (and matched on the decoded path: `/%61dmin/` cannot pass `/admin/`'s basic auth), the
//! actions (files with try_files, redirect, respond), header rules and error pages.

mod site_util;

use site_util::{body, get, header, serve, status, Dir};

fn bcrypt_hash(password: &str) -> String {
    bcrypt::hash(password, 4).unwrap()
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Authorization: Basic {token}\r\n")
}

#[test]
fn hosts_choose_the_site_and_routes_the_longest_prefix() {
    let dir = Dir::new("hosts");
    dir.write("a/index.html", "site a\n");
    dir.write("a/app.js", "js\n");
    dir.write("b/index.html", "site b\n");
    dir.write("404.html", "<h1>custom 404</h1>\n");
    let (_live, server, addr) = serve(
        &dir,
        r#"
[[site]]
hosts = ["a.test", "*.a.test"]
listen = ["LISTEN"]

[[site.route]]
path = "/api/v2/"
respond = { body = "v2\n" }

[[site.route]]
path = "/"
files = { root = "a", try_files = ["{path}", "{path}/", "/index.html"] }
headers = { set = { "X-Frame-Options" = "DENY" }, add = { "X-Extra" = "1" }, remove = ["ETag"] }

[[site.route]]
path = "/api/"
respond = { status = 201, body = "api\n", type = "application/json" }

[[site.route]]
path = "=/old"
redirect = { to = "/new{query}", code = 301 }

[[site]]
hosts = ["b.test"]
listen = ["LISTEN"]

[[site.route]]
path = "/"
files = { root = "b" }
error_pages = { 404 = "404.html" }
"#,
    );
    let r = get(addr, "a.test", "/", "");
    assert_eq!((status(&r), body(&r)), (200, "site a\n"), "{r}");
    assert_eq!(header(&r, "x-frame-options"), Some("DENY"));
    assert_eq!(header(&r, "x-extra"), Some("1"));
    assert_eq!(header(&r, "etag"), None, "{r}");
    assert_eq!(body(&get(addr, "IMG.A.test:8080", "/", "")), "site a\n");
    assert_eq!(body(&get(addr, "b.test", "/", "")), "site b\n");
    // try_files: a file, else the single-page app's index.
    assert_eq!(body(&get(addr, "a.test", "/app.js", "")), "js\n");
    assert_eq!(
        body(&get(addr, "a.test", "/some/client/route", "")),
        "site a\n"
    );
    // Longest prefix, whatever the order in the file; exact routes.
    let api = get(addr, "a.test", "/api/x", "");
    assert_eq!((status(&api), body(&api)), (201, "api\n"));
    assert_eq!(header(&api, "content-type"), Some("application/json"));
    assert_eq!(body(&get(addr, "a.test", "/api/v2/x", "")), "v2\n");
    let old = get(addr, "a.test", "/old?x=1", "");
    assert_eq!(status(&old), 301);
    assert_eq!(header(&old, "location"), Some("/new?x=1"));
    assert_eq!(
        status(&get(addr, "a.test", "/old/x", "")),
        200,
        "=/old is exact"
    );
    // Error pages replace the body, keeping the status.
    let missing = get(addr, "b.test", "/nope", "");
    assert_eq!(
        (status(&missing), body(&missing)),
        (404, "<h1>custom 404</h1>\n")
    );
    assert!(header(&missing, "content-type")
        .unwrap()
        .starts_with("text/html"));
    // No default site: an unknown host is 404.
    assert_eq!(status(&get(addr, "c.test", "/", "")), 404);
    // Dot segments are refused, encoded or not.
    assert_eq!(status(&get(addr, "a.test", "/x/../api/x", "")), 400);
    assert_eq!(status(&get(addr, "a.test", "/x/%2e%2e/api/x", "")), 400);
    server.shutdown(std::time::Duration::from_secs(5));
}

#[test]
fn access_checks_run_on_the_decoded_path_before_the_action() {
    let dir = Dir::new("access");
    let hash = bcrypt_hash("secret");
    let (_live, server, addr) = serve(
        &dir,
        &format!(
            r#"
[[site]]
listen = ["LISTEN"]
default = true

[[site.route]]
path = "/"
respond = {{ body = "public\n" }}

[[site.route]]
path = "/admin/"
basic_auth = {{ realm = "ops", users = {{ alice = "{hash}" }} }}
respond = {{ body = "admin\n" }}

[[site.route]]
path = "/denied/"
deny = ["127.0.0.0/8"]
respond = {{ body = "never\n" }}

[[site.route]]
path = "/only-ten/"
allow = ["10.0.0.0/8"]
respond = {{ body = "never\n" }}

[[site.route]]
path = "/limited/"
rate_limit = {{ rate = "1/m", burst = 2 }}
respond = {{ body = "limited\n" }}

[[site.route]]
path = "/upload/"
max_body = 10
respond = {{ body = "ok\n" }}
"#
        ),
    );
    let r = get(addr, "x", "/admin/x", "");
    assert_eq!(status(&r), 401);
    assert_eq!(
        header(&r, "www-authenticate"),
        Some("Basic realm=\"ops\", charset=\"UTF-8\"")
    );
    assert_eq!(
        status(&get(addr, "x", "/admin/x", &basic("alice", "wrong"))),
        401
    );
    let ok = get(addr, "x", "/admin/x", &basic("alice", "secret"));
    assert_eq!((status(&ok), body(&ok)), (200, "admin\n"));
    // Cached: the same header again, and still refused with another password.
    assert_eq!(
        status(&get(addr, "x", "/admin/x", &basic("alice", "secret"))),
        200
    );
    assert_eq!(
        status(&get(addr, "x", "/admin/x", &basic("alice", "secreT"))),
        401
    );
    // Encoded spellings of the protected prefix are the same route.
    for p in ["/%61dmin/x", "/%61%64%6d%69%6e/x", "/admin%2Fx"] {
        assert_eq!(status(&get(addr, "x", p, "")), 401, "{p}");
    }
    assert_eq!(status(&get(addr, "x", "/denied/x", "")), 403);
    assert_eq!(status(&get(addr, "x", "/only-ten/x", "")), 403);
    assert_eq!(status(&get(addr, "x", "/limited/", "")), 200);
    assert_eq!(status(&get(addr, "x", "/limited/", "")), 200);
    let limited = get(addr, "x", "/limited/", "");
    assert_eq!(status(&limited), 429, "{limited}");
    let retry: u64 = header(&limited, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let big = site_util::exchange(
        addr,
        "POST /upload/ HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world",
    );
    assert_eq!(status(&big), 413, "{big}");
    server.shutdown(std::time::Duration::from_secs(5));
}

#[test]
fn max_body_refuses_chunked_bodies_that_grow_past_it() {
    let dir = Dir::new("max-body-chunked");
    // An upstream that reads the whole body and says how long it was.
    let upstream = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(|mut req: fibra_http::Request| {
            let mut body = Vec::new();
            let _ = std::io::Read::read_to_end(req.body_mut(), &mut body);
            fibra_http::Response::new(format!("{} bytes\n", body.len()).into())
        })
        .unwrap();
    let (_live, server, addr) = serve(
        &dir,
        &format!(
            "[[site]]\nlisten = [\"LISTEN\"]\ndefault = true\n[[site.route]]\npath = \"/\"\n\
             max_body = 16\nproxy = {{ upstreams = [\"http://{}\"] }}\n",
            upstream.local_addr()
        ),
    );
    let chunked = |payload: &str| {
        site_util::exchange(
            addr,
            &format!(
                "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{payload}\r\n0\r\n\r\n",
                payload.len()
            ),
        )
    };
    let small = chunked("0123456789");
    assert_eq!(
        (status(&small), body(&small)),
        (200, "10 bytes\n"),
        "{small}"
    );
    let big = chunked("0123456789abcdefghij");
    assert_eq!(status(&big), 413, "{big}");
    server.shutdown(std::time::Duration::from_secs(5));
    upstream.shutdown(std::time::Duration::from_secs(5));
}
