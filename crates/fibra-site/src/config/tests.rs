use std::path::Path;
use std::time::Duration;

use super::*;

/// The schema's example from the issue, with real hashes left out.
const EXAMPLE: &str = r#"
[acme]
directory = "https://acme.example/dir"
contact = "mailto:ops@example.com"
storage = "/var/lib/fibra/acme"
challenges = ["tls-alpn-01", "http-01"]

[[site]]
hosts = ["a.test", "*.a.test"]
listen = ["127.0.0.1:8080"]
default = true
tls = { cert = "a.pem", key = "a.key" }
http3 = true

[[site.route]]
path = "/"
files = { root = "/srv/a", try_files = ["{path}", "{path}/", "/index.html"] }
headers = { set = { "X-Frame-Options" = "DENY" }, remove = ["ETag"] }
error_pages = { 404 = "/srv/errors/404.html" }

[[site.route]]
path = "/api/"
[site.route.proxy]
upstreams = ["http://127.0.0.1:9001", "http://127.0.0.1:9002"]
policy = "round_robin"
health = { path = "/health", interval = "1s" }

[[site.route]]
path = "/admin/"
basic_auth = { users = { alice = "$2b$10$abc" } }
respond = { status = 200, body = "admin\n", type = "text/plain" }

[[site.route]]
path = "/limited/"
rate_limit = { rate = "5/s", burst = 5 }
allow = ["10.0.0.0/8"]
deny = ["10.1.0.0/16"]

[[site.route]]
path = "=/old"
redirect = { to = "/new{query}", code = 301 }

[[site]]
hosts = ["b.test"]
listen = ["127.0.0.1:8443"]
tls = "acme"
"#;

fn parse_str(text: &str) -> Result<Config, ConfigErrors> {
    parse(Path::new("/etc/fibra/site.toml"), text)
}

fn errors(text: &str) -> Vec<String> {
    parse_str(text)
        .expect_err("the file is refused")
        .0
        .iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn the_documented_example_reads() {
    let c = parse_str(EXAMPLE).unwrap();
    assert_eq!(c.sites.len(), 2);
    let a = &c.sites[0];
    assert_eq!(a.hosts, ["a.test", "*.a.test"]);
    assert_eq!(a.listen, [Listen::Tcp("127.0.0.1:8080".into())]);
    assert!(a.default);
    assert_eq!(
        a.tls,
        Some(Tls::Files(vec![CertFiles {
            cert: "/etc/fibra/a.pem".into(),
            key: "/etc/fibra/a.key".into()
        }]))
    );
    assert_eq!(a.routes.len(), 5);
    let files = &a.routes[0];
    assert_eq!(files.path, PathMatch::Prefix("/".into()));
    match &files.action {
        Some(Action::Files(f)) => {
            assert_eq!(f.root, Path::new("/srv/a"));
            assert_eq!(f.try_files, ["{path}", "{path}/", "/index.html"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        files.headers.set,
        [("X-Frame-Options".into(), "DENY".into())]
    );
    assert_eq!(files.headers.remove, ["ETag"]);
    assert_eq!(files.error_pages, [(404, "/srv/errors/404.html".into())]);
    match &a.routes[1].action {
        Some(Action::Proxy(p)) => {
            assert_eq!(p.upstreams.len(), 2);
            assert_eq!(p.policy, "round_robin");
            assert_eq!(p.health.as_ref().unwrap().interval, Duration::from_secs(1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.routes[2].basic_auth.as_ref().unwrap().users[0].0, "alice");
    let limited = &a.routes[3];
    assert_eq!(limited.rate_limit.as_ref().unwrap().burst, 5);
    assert_eq!(limited.allow.len(), 1);
    assert_eq!(limited.deny.len(), 1);
    assert_eq!(a.routes[4].path, PathMatch::Exact("/old".into()));
    assert_eq!(c.sites[1].tls, Some(Tls::Acme));
    assert!(c.sites[0].http3 && !c.sites[1].http3);
}

#[test]
fn print_config_reads_back_to_the_same_configuration() {
    let c = parse_str(EXAMPLE).unwrap();
    let text = print(&c);
    let again = parse_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // Positions differ (the printed file has its own layout); everything else is equal.
    let strip = |mut c: Config| {
        for s in &mut c.sites {
            s.at = Pos::default();
            s.tls_at = Pos::default();
            for r in &mut s.routes {
                r.at = Pos::default();
                if let Some(b) = &mut r.basic_auth {
                    b.at = Pos::default();
                }
                if let Some(Action::Proxy(p)) = &mut r.action {
                    p.at = Pos::default();
                }
            }
        }
        if let Some(a) = &mut c.acme {
            a.at = Pos::default();
        }
        c
    };
    assert_eq!(strip(again), strip(c));
}

#[test]
fn unknown_keys_name_the_path_and_the_nearest_valid_key() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n\n[[site.route]]\npath = \"/\"\n[site.route.proxy]\nupstream = [\"http://127.0.0.1:9\"]\n",
    );
    assert!(
        errs.iter().any(|e| e.starts_with("/etc/fibra/site.toml:8:1: site[0].route[0].proxy.upstream: unknown key \"upstream\" (did you mean \"upstreams\"?)")),
        "{errs:?}"
    );
}

#[test]
fn every_error_is_reported_at_once_in_file_order() {
    let errs = errors(
        "[server]\nworkers = 0\nidle_timeout = \"5 parsecs\"\n\n[[site]]\nlisten = [\"nowhere\"]\nhosts = [\"a..b\"]\n",
    );
    assert!(errs.len() >= 4, "{errs:?}");
    assert!(
        errs[0].contains(":2:11: server.workers: expected a whole number from 1"),
        "{errs:?}"
    );
    assert!(errs[1].contains(":3:16: server.idle_timeout:"), "{errs:?}");
    assert!(
        errs.iter()
            .any(|e| e.contains("site[0].listen[0]: \"nowhere\"")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("site[0].hosts[0]: \"a..b\"")),
        "{errs:?}"
    );
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let errs = errors("[server]\nworkers = = 2\n");
    assert!(errs[0].starts_with("/etc/fibra/site.toml:2:"), "{errs:?}");
    assert!(errs[0].contains("TOML syntax"), "{errs:?}");
}

#[test]
fn a_host_in_two_sites_on_one_address_is_refused() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n[[site]]\nhosts = [\"A.test\"]\nlisten = [\"127.0.0.1:1\"]\n",
    );
    assert_eq!(
        errs,
        ["/etc/fibra/site.toml:4:1: site[1].hosts: host \"a.test\" on 127.0.0.1:1 is already site[0]'s (line 1)"]
    );
    // On different addresses, the same name is two sites.
    parse_str("[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:2\"]\n").unwrap();
}

#[test]
fn two_defaults_on_one_address_are_refused() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\ndefault = true\n[[site]]\nhosts = [\"b.test\"]\nlisten = [\"127.0.0.1:1\"]\ndefault = true\n",
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("site[1].default: 127.0.0.1:1 already has a default site: site[0]"),
        "{errs:?}"
    );
}

#[test]
fn sites_sharing_an_address_agree_on_tls() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\ntls = { cert = \"c\", key = \"k\" }\n[[site]]\nhosts = [\"b.test\"]\nlisten = [\"127.0.0.1:1\"]\n",
    );
    assert!(errs[0].contains("must agree on TLS"), "{errs:?}");
}

#[test]
fn acme_refuses_wildcards_and_needs_its_table() {
    let errs =
        errors("[[site]]\nhosts = [\"*.a.test\"]\nlisten = [\"127.0.0.1:1\"]\ntls = \"acme\"\n");
    assert!(
        errs.iter().any(|e| e.contains("needs an [acme] table")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("\"*.a.test\": a wildcard name needs ACME's dns-01")),
        "{errs:?}"
    );
}

#[test]
fn a_route_has_one_action_and_one_path() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n[[site.route]]\npath = \"/x\"\nrespond = { body = \"x\" }\nredirect = { to = \"/y\" }\n[[site.route]]\npath = \"/x\"\n",
    );
    assert!(
        errs.iter().any(|e| e.contains("a route has one action")),
        "{errs:?}"
    );
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n[[site.route]]\npath = \"/x\"\n[[site.route]]\npath = \"/x\"\n",
    );
    assert!(
        errs[0].contains("route /x is given twice (first on line 4)"),
        "{errs:?}"
    );
}

#[test]
fn bad_values_are_refused_with_their_reason() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n[[site.route]]\npath = \"api\"\n[[site.route]]\npath = \"/p\"\nproxy = { upstreams = [\"ftp://x\"], policy = \"least_con\" }\nrate_limit = { rate = \"5/week\" }\nallow = [\"10.0.0.0/33\"]\nheaders = { set = { \"Bad Name\" = \"x\" } }\n",
    );
    let all = errs.join("\n");
    for want in [
        "\"api\": a route path starts with /",
        "\"ftp://x\": expected http[s]://HOST:PORT[/PATH]",
        "\"least_con\": expected one of round_robin, least_conn, ip_hash, first (did you mean \"least_conn\"?)",
        "rate \"5/week\": the unit is not s, m or h",
        "allow[0]: \"10.0.0.0/33\"",
        "the prefix is longer than 32 bits",
        "\"Bad Name\": not a header field name",
    ] {
        assert!(all.contains(want), "{want} not in\n{all}");
    }
}

#[test]
fn redirect_addresses_meet_the_same_checks() {
    // An HTTPS site's redirect address where another site is the plain default.
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:2\"]\ndefault = true\n\
         tls = { cert = \"c\", key = \"k\" }\nredirect_http = [\"127.0.0.1:1\"]\n\
         [[site]]\nhosts = [\"b.test\"]\nlisten = [\"127.0.0.1:1\"]\ndefault = true\n",
    );
    assert!(errs.iter().any(|e| e.contains("site[1].default: 127.0.0.1:1 already has a default site: site[0]")), "{errs:?}");
    // The same name on a plain site there.
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:2\"]\n\
         tls = { cert = \"c\", key = \"k\" }\nredirect_http = [\"127.0.0.1:1\"]\n\
         [[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("host \"a.test\" on 127.0.0.1:1 is already site[0]'s")),
        "{errs:?}"
    );
    // A redirect address that is an HTTPS address.
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:2\"]\n\
         tls = { cert = \"c\", key = \"k\" }\nredirect_http = [\"127.0.0.1:2\"]\n",
    );
    assert!(
        errs.iter().any(|e| e.contains("must agree on TLS")),
        "{errs:?}"
    );
}

#[test]
fn acme_names_try_files_statuses_and_health_paths_are_checked() {
    let errs = errors(
        "[acme]\ndirectory = \"https://ca.test/dir\"\nstorage = \"acme\"\n\
         [[site]]\nhosts = [\"localhost\", \"10.0.0.1\"]\nlisten = [\"127.0.0.1:1\"]\ntls = \"acme\"\n\
         [[site.route]]\npath = \"/\"\nfiles = { root = \"www\", try_files = [\"{path}\", \"=42\"] }\n\
         [[site.route]]\npath = \"/api/\"\nproxy = { upstreams = [\"http://127.0.0.1:9\"], health = { path = \"/a b\" } }\n",
    );
    let all = errs.join("\n");
    for want in [
        "\"localhost\": an ACME certificate needs a fully qualified domain name",
        "\"10.0.0.1\": an ACME certificate needs a fully qualified domain name",
        "try_files[1]: \"=42\": an answer status is =200 to =599",
        "\"/a b\": a health path has no spaces or control characters",
    ] {
        assert!(all.contains(want), "{want} not in\n{all}");
    }
}

#[test]
fn http3_needs_tls_and_tcp_addresses() {
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\nhttp3 = true\n\
         [[site.route]]\npath = \"/\"\nrespond = { body = \"x\" }\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("site[0].http3: HTTP/3 needs tls on the site")),
        "{errs:?}"
    );
    let errs = errors(
        "[[site]]\nhosts = [\"a.test\"]\nlisten = [\"unix:/tmp/x.sock\"]\nhttp3 = true\n\
         tls = { cert = \"c\", key = \"k\" }\n\
         [[site.route]]\npath = \"/\"\nrespond = { body = \"x\" }\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("site[0].http3: HTTP/3 is served on UDP")),
        "{errs:?}"
    );
    let errs = errors("[[site]]\nhosts = [\"a.test\"]\nlisten = [\"127.0.0.1:1\"]\nhttp3 = 1\n");
    assert!(errs.iter().any(|e| e.contains("site[0].http3")), "{errs:?}");
}
