//! The `techempower` example against TechEmpower's verification rules, over real sockets:
//! the app runs in-process on fibra-http, against a cluster the test starts itself. Also its
//! answers to bad input: `queries` out of range or not a number, a database stopped and
//! started again, a query stuck behind a lock past the query timeout.

#[path = "../examples/techempower/app.rs"]
mod app;
#[path = "../examples/techempower/args.rs"]
#[allow(dead_code)]
mod args;
mod util;

use fibra_postgres::{Client, Config, Pool, Statement, Type};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use util::Cluster;

/// One response: status, headers (lower-case names), body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// A keep-alive HTTP/1.1 client over a plain socket.
struct Http {
    r: BufReader<TcpStream>,
}

impl Http {
    fn connect(addr: SocketAddr) -> Http {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Http {
            r: BufReader::new(s),
        }
    }

    fn get(&mut self, path: &str) -> Reply {
        write!(
            self.r.get_mut(),
            "GET {path} HTTP/1.1\r\nHost: tfb-server\r\n\r\n"
        )
        .unwrap();
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let status: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.r.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .expect("Content-Length")
            .1
            .parse()
            .unwrap();
        let mut body = vec![0; len];
        self.r.read_exact(&mut body).unwrap();
        Reply {
            status,
            headers,
            body,
        }
    }
}

/// TFB's header rules: `Server`, `Date`, `Content-Type`, `Content-Length`.
fn check_headers(r: &Reply, ctype: &str) {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("server").is_some_and(|s| !s.is_empty()));
    assert!(r.header("date").is_some_and(|d| d.ends_with(" GMT")));
    assert_eq!(r.header("content-type"), Some(ctype));
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
}

/// A `{"id":N,"randomNumber":N}` object with nothing else; returns the pair.
fn world(v: &Value) -> (i64, i64) {
    let o = v.as_object().expect("a JSON object");
    assert_eq!(o.len(), 2, "{v}");
    let id = o["id"].as_i64().expect("id is an integer");
    let n = o["randomNumber"]
        .as_i64()
        .expect("randomNumber is an integer");
    assert!((1..=10_000).contains(&id), "{v}");
    assert!((1..=10_000).contains(&n), "{v}");
    (id, n)
}

/// The row's number in the database, read outside the app.
fn db_number(admin: &Client, id: i64) -> i64 {
    static Q: std::sync::LazyLock<Statement> = std::sync::LazyLock::new(|| {
        Statement::new(
            "SELECT randomnumber FROM world WHERE id = $1",
            &[Type::INT4],
        )
    });
    admin.query_one(&Q, &[&(id as i32)]).unwrap().get::<i32>(0) as i64
}

#[test]
fn queries_param_clamps_and_defaults() {
    assert_eq!(app::queries_param(None), 1);
    assert_eq!(app::queries_param(Some("queries=abc")), 1);
    assert_eq!(app::queries_param(Some("queries=")), 1);
    assert_eq!(app::queries_param(Some("queries=0")), 1);
    assert_eq!(app::queries_param(Some("queries=-3")), 1);
    assert_eq!(app::queries_param(Some("queries=20")), 20);
    assert_eq!(app::queries_param(Some("x=1&queries=7")), 7);
    assert_eq!(app::queries_param(Some("queries=500")), 500);
    assert_eq!(app::queries_param(Some("queries=100000")), 500);
    assert_eq!(app::queries_param(Some("queries=99999999999999999999")), 1);
}

#[test]
fn html_escaping() {
    let mut out = Vec::new();
    app::escape_html(r#"<a href="x">'&'</a> フ"#, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt; フ"
    );
}

#[test]
fn techempower_rules() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let config = Config::from_url(&cluster.url())
        .unwrap()
        .pool_size(2)
        .query_timeout(Duration::from_secs(2));
    let server = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .server_header(Some(app::SERVER_NAME.into()))
        .serve(app::router(Pool::new(config)))
        .unwrap();
    let addr = server.local_addr();
    // The test's own connection, on this plain thread (fibra sockets block a thread).
    let admin = Client::connect(&Config::from_url(&cluster.url()).unwrap()).unwrap();
    let mut http = Http::connect(addr);

    // /plaintext and /json.
    let r = http.get("/plaintext");
    check_headers(&r, "text/plain");
    assert_eq!(r.body, b"Hello, World!");
    let r = http.get("/json");
    check_headers(&r, "application/json");
    assert_eq!(r.json(), serde_json::json!({"message": "Hello, World!"}));

    // /db: one row, as in the database.
    for _ in 0..20 {
        let r = http.get("/db");
        check_headers(&r, "application/json");
        let (id, n) = world(&r.json());
        assert_eq!(db_number(&admin, id), n);
    }

    // /queries: N rows, N clamped to 1..=500, a bad value read as 1.
    for (q, n) in [
        ("", 1),
        ("?queries=abc", 1),
        ("?queries=0", 1),
        ("?queries=-1", 1),
        ("?queries=1", 1),
        ("?queries=20", 20),
        ("?queries=500", 500),
        ("?queries=100000", 500),
    ] {
        let r = http.get(&format!("/queries{q}"));
        check_headers(&r, "application/json");
        let v = r.json();
        let rows = v.as_array().expect("a JSON array, also for one row");
        assert_eq!(rows.len(), n, "/queries{q}");
        for w in rows {
            let (id, n) = world(w);
            assert_eq!(db_number(&admin, id), n);
        }
    }

    // /fortunes: all rows plus the added one, sorted by message, escaped, UTF-8.
    let r = http.get("/fortunes");
    check_headers(&r, "text/html; charset=utf-8");
    let html = String::from_utf8(r.body.clone()).unwrap();
    assert!(html.starts_with(
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
         <tr><th>id</th><th>message</th></tr>"
    ));
    assert!(html.ends_with("</table></body></html>"));
    let cells: Vec<(&str, &str)> = html
        .split("<tr><td>")
        .skip(1)
        .map(|row| {
            let row = row.split("</td></tr>").next().unwrap();
            row.split_once("</td><td>").unwrap()
        })
        .collect();
    assert_eq!(cells.len(), 13);
    assert!(cells.contains(&("0", app::EXTRA_FORTUNE)));
    assert!(cells.contains(&(
        "11",
        "&lt;script&gt;alert(&quot;This should not be displayed in a browser alert box.&quot;);&lt;/script&gt;"
    )));
    assert!(cells.contains(&("12", "フレームワークのベンチマーク")));
    let unescaped: Vec<String> = cells
        .iter()
        .map(|(_, m)| {
            m.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#x27;", "'")
                .replace("&amp;", "&")
        })
        .collect();
    let mut sorted = unescaped.clone();
    sorted.sort();
    assert_eq!(unescaped, sorted, "fortunes sorted by message");

    // /updates: N rows, each written back with the number shown.
    for (q, n) in [
        ("?queries=abc", 1),
        ("?queries=20", 20),
        ("?queries=100000", 500),
    ] {
        let r = http.get(&format!("/updates{q}"));
        check_headers(&r, "application/json");
        let v = r.json();
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), n, "/updates{q}");
        for w in rows {
            let (id, n) = world(w);
            assert_eq!(db_number(&admin, id), n, "row {id} written back");
        }
    }

    assert_eq!(http.get("/nope").status, 404);

    // A query stuck behind a lock: 503 after the query timeout, then served again.
    let begin = Statement::new("BEGIN", &[]);
    let lock = Statement::new("LOCK TABLE world IN ACCESS EXCLUSIVE MODE", &[]);
    let commit = Statement::new("COMMIT", &[]);
    admin.execute(&begin, &[]).unwrap();
    admin.execute(&lock, &[]).unwrap();
    assert_eq!(http.get("/db").status, 503);
    assert_eq!(http.get("/json").status, 200, "the server still answers");
    admin.execute(&commit, &[]).unwrap();
    assert_eq!(http.get("/db").status, 200);
    drop(admin);

    // The database stopped: 503 (the connect is refused at once), then back to 200.
    cluster.stop();
    for path in [
        "/db",
        "/queries?queries=20",
        "/fortunes",
        "/updates?queries=5",
    ] {
        let r = http.get(path);
        assert_eq!(r.status, 503, "{path}");
    }
    assert_eq!(http.get("/plaintext").status, 200);
    cluster.start_server();
    for path in [
        "/db",
        "/queries?queries=20",
        "/fortunes",
        "/updates?queries=5",
    ] {
        assert_eq!(http.get(path).status, 200, "{path}");
    }
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn the_example_listens_on_loopback_unless_told_otherwise() {
    let parse = |flags: &[&str]| args::parse(flags.iter().map(|f| f.to_string())).unwrap();
    assert_eq!(parse(&[]).addr, "127.0.0.1");
    assert_eq!(parse(&["--addr", "0.0.0.0"]).addr, "0.0.0.0");
    assert!(args::parse(["--port".to_string()]).is_err());
}
