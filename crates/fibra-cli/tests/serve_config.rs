//! `fibra serve --config FILE`, `--check-config FILE` and `--print-config` as an operator
//! runs them: bad files refused with every error (the same message at check and at start),
//! the flags' equivalent file, and SIGHUP reloads (all or nothing; new addresses open,
//! removed ones stop accepting).

mod serve_util;

use std::process::Output;
use std::time::{Duration, Instant};

use serve_util::{fibra, get, start, Site, PATIENCE};

fn run(args: &[&str]) -> Output {
    fibra(args).output().expect("run fibra")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--check-config FILE` and `--config FILE` both fail, with the same errors.
fn refused_alike(file: &str) -> String {
    let check = run(&["serve", "--check-config", file]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let started = run(&["serve", "--config", file]);
    assert_eq!(started.status.code(), Some(1), "{}", stderr(&started));
    assert_eq!(stderr(&check), stderr(&started));
    stderr(&check)
}

#[test]
fn bad_files_fail_check_and_start_with_the_same_errors() {
    let site = Site::new("config-bad");
    let file = site.path().join("site.toml");
    std::fs::write(
        &file,
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\nlisten_on = 1\n\n\
         [[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let err = refused_alike(f);
    assert!(
        err.contains(&format!(
            "{f}:5:1: site[0].listen_on: unknown key \"listen_on\" (did you mean \"listen\"?)"
        )),
        "{err}"
    );
    // Fixed, the cross-site errors show (both at once).
    std::fs::write(
        &file,
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\n\n\
         [[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\n",
    )
    .unwrap();
    let err = refused_alike(f);
    assert!(
        err.contains(&format!(
            "{f}:6:1: site[1].hosts: host \"a.test\" on 127.0.0.1:0 is already site[0]'s (line 1)"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{f}:6:1: site[1].default: 127.0.0.1:0 already has a default site: site[0] (line 1)"
        )),
        "{err}"
    );
}

#[test]
fn an_address_another_process_holds_and_a_bad_htpasswd_fail_alike() {
    let site = Site::new("config-held");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap();
    site.write(
        "users.htpasswd",
        b"alice:$2y$04$abcdefghijklmnopqrstuuQ0L9r6nM7ZlY0c5Kc5n1h8yQm1s0u4a\nbob\n",
    );
    let file = site.path().join("site.toml");
    std::fs::write(
        &file,
        format!("[[site]]\nlisten = [\"{addr}\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nrespond = {{ body = \"x\" }}\n"),
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let err = refused_alike(f);
    assert!(
        err.contains(&format!("{f}:1:1: site[0].listen: cannot listen on {addr}")),
        "{err}"
    );
    std::fs::write(
        &file,
        "[[site]]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nbasic_auth = { htpasswd = \"users.htpasswd\" }\nrespond = { body = \"x\" }\n",
    )
    .unwrap();
    let err = refused_alike(f);
    assert!(
        err.contains(&format!("{f}:6:14: site[0].route[0].basic_auth: ")),
        "{err}"
    );
    assert!(
        err.contains("users.htpasswd") && err.contains(":2:"),
        "{err}"
    );
    drop(held);
}

#[test]
fn print_config_writes_the_file_the_flags_mean() {
    let site = Site::new("config-print");
    site.write("www/index.html", b"hello from the file\n");
    let www = site.path().join("www");
    let printed = run(&[
        "serve",
        www.to_str().unwrap(),
        "--port",
        "0",
        "--workers",
        "1",
        "--no-list",
        "--cache-control",
        "max-age=60",
        "--proxy",
        "/api/=http://127.0.0.1:9/",
        "--print-config",
    ]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let text = String::from_utf8(printed.stdout).unwrap();
    for want in [
        "workers = 1",
        "listen = [\"127.0.0.1:0\"]",
        "default = true",
        "listing = false",
        "cache_control = \"max-age=60\"",
        "path = \"/api/\"",
        "upstreams = [\"http://127.0.0.1:9/\"]",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    let file = site.path().join("printed.toml");
    std::fs::write(&file, &text).unwrap();
    let f = file.to_str().unwrap();
    let check = run(&["serve", "--check-config", f]);
    assert!(check.status.success(), "{}", stderr(&check));
    let server = start(&["serve", "--config", f]);
    let r = get(&server.addr, "/");
    assert!(
        r.starts_with("HTTP/1.1 200") && r.ends_with("hello from the file\n"),
        "{r}"
    );
    assert!(
        r.contains("cache-control: max-age=60") || r.contains("Cache-Control: max-age=60"),
        "{r}"
    );
}

fn wait_for(mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn sighup_reloads_all_or_nothing_and_opens_and_closes_addresses() {
    let site = Site::new("config-reload");
    let file = site.path().join("site.toml");
    let f = file.to_str().unwrap().to_owned();
    let one = "[[site]]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nrespond = { body = \"one\\n\" }\n";
    std::fs::write(&file, one).unwrap();
    let mut server = start(&["serve", "--config", &f]);
    let addr = server.addr.clone();
    assert!(get(&addr, "/").ends_with("one\n"));
    // The address stays (the same text); a route changes and one is added; a second address
    // opens.
    let extra = fibra_testkit::spare_addr();
    let two = format!(
        "[[site]]\nlisten = [\"127.0.0.1:0\", \"{extra}\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nrespond = {{ body = \"two\\n\" }}\n[[site.route]]\npath = \"/new/\"\nrespond = {{ body = \"new\\n\" }}\n"
    );
    std::fs::write(&file, &two).unwrap();
    server.signal(libc::SIGHUP);
    server.stderr_line_with("reloaded");
    assert!(get(&addr, "/").ends_with("two\n"));
    assert!(get(&addr, "/new/x").ends_with("new\n"));
    assert!(get(&extra.to_string(), "/").ends_with("two\n"));
    // A bad file: every error logged, the old configuration keeps serving.
    std::fs::write(
        &file,
        "[[site]]\nlisten = [\"127.0.0.1:0\"]\ndefault = yes\n",
    )
    .unwrap();
    server.signal(libc::SIGHUP);
    let line = server.stderr_line_with("SIGHUP:");
    assert!(line.contains(&format!("{f}:3:11")), "{line}");
    server.stderr_line_with("the configuration is unchanged");
    assert!(get(&addr, "/new/x").ends_with("new\n"));
    // The second address goes: it stops accepting, the first goes on.
    std::fs::write(&file, one).unwrap();
    server.signal(libc::SIGHUP);
    server.stderr_line_with("reloaded");
    assert!(get(&addr, "/").ends_with("one\n"));
    assert!(
        wait_for(|| std::net::TcpStream::connect(extra).is_err()),
        "{extra} still accepts"
    );
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit().success());
}

#[test]
fn health_and_metrics_work_with_a_site_label() {
    let site = Site::new("config-metrics");
    let file = site.path().join("site.toml");
    std::fs::write(
        &file,
        "[server]\nhealth = \"/healthz\"\nmetrics = \"/metrics\"\n\n\
         [[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:0\"]\ndefault = true\n[[site.route]]\npath = \"/\"\nrespond = { body = \"a\" }\n\n\
         [[site]]\nhosts = [\"b.test\"]\nlisten = [\"127.0.0.1:0\"]\n[[site.route]]\npath = \"=/\"\nrespond = { body = \"b\" }\n",
    )
    .unwrap();
    let server = start(&["serve", "--config", file.to_str().unwrap()]);
    let ask = |host: &str, path: &str| {
        use std::io::{Read, Write};
        let mut s = serve_util::connect(&server.addr);
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    assert!(ask("a.test", "/").ends_with("\r\n\r\na"));
    assert!(ask("b.test", "/").ends_with("\r\n\r\nb"));
    assert!(ask("b.test", "/missing").starts_with("HTTP/1.1 404"));
    assert!(ask("a.test", "/healthz").starts_with("HTTP/1.1 200"));
    let metrics = ask("a.test", "/metrics");
    for want in [
        "fibra_site_responses_total{site=\"site[0] (a.test)\",class=\"2xx\"} 1",
        "fibra_site_responses_total{site=\"site[1] (b.test)\",class=\"2xx\"} 1",
        "fibra_site_responses_total{site=\"site[1] (b.test)\",class=\"4xx\"} 1",
    ] {
        assert!(metrics.contains(want), "{want} not in\n{metrics}");
    }
}

#[test]
fn redirect_http_sends_plain_clients_to_https_and_sites_log_json_lines() {
    use std::io::{Read, Write};
    use std::sync::Arc;
    let site = Site::new("config-redirect");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    site.write("cert.pem", ck.cert.pem().as_bytes());
    site.write("key.pem", ck.signing_key.serialize_pem().as_bytes());
    let file = site.path().join("site.toml");
    // Both ports are named in the file (the redirect's URL is made from the site file's
    // address) and bound by fibra later: spare ports, which no other socket takes meanwhile.
    let (plain, secure) = (fibra_testkit::spare_addr(), fibra_testkit::spare_addr());
    std::fs::write(
        &file,
        format!(
            "[[site]]\nhosts = [\"localhost\"]\nlisten = [\"{secure}\"]\ndefault = true\n\
             tls = {{ cert = \"cert.pem\", key = \"key.pem\" }}\nredirect_http = [\"{plain}\"]\n\
             access_log = {{ path = \"access.jsonl\", format = \"json\" }}\n\
             [[site.route]]\npath = \"/\"\nrespond = {{ body = \"secure\\n\" }}\n"
        ),
    )
    .unwrap();
    let mut server = start(&["serve", "--config", file.to_str().unwrap()]);
    let https = server.addr.clone();
    let https_port = https.rsplit_once(':').unwrap().1.to_owned();
    assert!(
        server.line.contains(&format!("http://{plain}/")),
        "{}",
        server.line
    );
    let ask_plain = |method: &str| {
        let mut s = serve_util::connect(&plain.to_string());
        write!(s, "{method} /x?y=1 HTTP/1.1\r\nHost: localhost:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", plain.port()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let get = ask_plain("GET");
    assert!(get.starts_with("HTTP/1.1 301"), "{get}");
    assert!(
        get.contains(&format!("https://localhost:{https_port}/x?y=1")),
        "{get}"
    );
    assert!(ask_plain("POST").starts_with("HTTP/1.1 308"));
    // Over TLS, the site.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ck.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, serve_util::connect(&https));
    tls.write_all(
        b"GET /page HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\"q\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut out = String::new();
    tls.read_to_string(&mut out).unwrap();
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("secure\n"),
        "{out}"
    );
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit().success());
    let log = std::fs::read_to_string(site.path().join("access.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    // The site's requests on both addresses, as JSON.
    assert_eq!(lines.len(), 3, "{log}");
    assert!(
        lines.iter().any(|l| l.contains("\"target\":\"/page\"")
            && l.contains("\"status\":200")
            && l.contains("\"user_agent\":\"t\\\"q\"")),
        "{log}"
    );
    assert!(lines.iter().any(|l| l.contains("\"status\":301")), "{log}");
}
