//! Flag-validation tests: every contradiction gets a clear message.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

fn parse(argv: &str) -> Result<Config, String> {
    let argv = std::iter::once("bench").chain(argv.split_whitespace());
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    cli.args.validate().map_err(|e| e.0)
}

fn rejects(argv: &str, needle: &str) {
    match parse(argv) {
        Ok(c) => panic!("{argv:?} was accepted: {c:?}"),
        Err(msg) => assert!(msg.contains(needle), "{argv:?}: {msg:?} lacks {needle:?}"),
    }
}

#[test]
fn weighttp_style_flags() {
    let c = parse("-n 1000 -c 10 -t 2 -k -H X-A:1 -H Accept:*/* http://127.0.0.1:8080/").unwrap();
    assert_eq!(c.limit, Limit::Requests(1000));
    assert_eq!(
        (c.connections, c.workers, c.keep_alive, c.pipeline),
        (10, 2, true, 1)
    );
    let text = String::from_utf8(c.request).unwrap();
    assert!(text.starts_with("GET / HTTP/1.1\r\n"));
    assert!(text.contains("X-A: 1\r\nAccept: */*\r\n"));
    assert!(!c.batch && !c.json && c.timeout.is_none());
}

#[test]
fn extra_flags() {
    let c = parse("-d 1.5s --method HEAD --http1.0 -k --pipeline 16 --timeout 2 --json http://h/x")
        .unwrap();
    assert_eq!(c.limit, Limit::Duration(Duration::from_millis(1500)));
    assert_eq!(c.pipeline, 16);
    assert_eq!(c.timeout, Some(Duration::from_secs(2)));
    assert!(c.head_request && c.json);
    let text = String::from_utf8(c.request).unwrap();
    assert!(text.starts_with("HEAD /x HTTP/1.0\r\n"));
    assert!(text.contains("Connection: keep-alive\r\n"));
    let c = parse("-n 5 -c 5 --batch http://h/").unwrap();
    assert!(c.batch && c.pipeline == 1);
}

#[test]
fn body_file_defaults_to_post() {
    let path = std::env::temp_dir().join(format!("fibra-bench-body-{}", std::process::id()));
    std::fs::write(&path, b"abc").unwrap();
    let c = parse(&format!("-n 1 --body {} http://h/", path.display())).unwrap();
    std::fs::remove_file(&path).unwrap();
    let text = String::from_utf8(c.request).unwrap();
    assert!(text.starts_with("POST / HTTP/1.1\r\n"));
    assert!(text.ends_with("Content-Length: 3\r\n\r\nabc"));
    rejects(
        "-n 1 --body /nonexistent/fibra/body http://h/",
        "--body /nonexistent/fibra/body",
    );
}

#[test]
fn durations() {
    assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
    for bad in ["", "0", "-1s", "abc", "10x", "s", "inf", "NaN"] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn contradictions_and_bad_values() {
    rejects("-n 10 -d 5s http://h/", "-n and -d");
    rejects("http://h/", "-n N");
    rejects("-n 0 http://h/", "-n must be at least 1");
    rejects("-n 10 -c 2 -t 3 http://h/", "-c 2 is less than -t 3");
    rejects("-n 10 -c 0 http://h/", "-c must be at least 1");
    rejects("-n 10 -t 0 http://h/", "-t must be at least 1");
    rejects("-n 5 -c 10 http://h/", "-n 5 is less than -c 10");
    rejects(
        "-n 10 -k --pipeline 4 --batch http://h/",
        "--pipeline and --batch",
    );
    rejects("-n 10 --pipeline 4 http://h/", "--pipeline needs -k");
    rejects(
        "-n 10 -k --pipeline 0 http://h/",
        "--pipeline must be at least 1",
    );
    rejects("-n 10 --timeout 0 http://h/", "--timeout");
    rejects("-n 10 --timeout=-1 http://h/", "--timeout");
    rejects("-d 10q http://h/", "unknown unit");
    rejects("-n 10 -H NoColon http://h/", "invalid header");
    rejects("-n 10 -H Bad(Name):x http://h/", "bad header name");
    rejects("-n 10 --method G{T http://h/", "invalid method");
    rejects("-n 10 localhost:80", "invalid URL");
    rejects("-n ten http://h/", "invalid value");
}

#[test]
fn https_flags() {
    let c = parse("-n 1 --insecure https://127.0.0.1:8443/").unwrap();
    assert!(c.tls.is_some() && c.target.tls);
    assert!(parse("-n 1 http://h/").unwrap().tls.is_none());
    rejects("-n 1 https://h/", "needs --cacert FILE");
    rejects("-n 1 --insecure http://h/", "need an https:// URL");
    rejects("-n 1 --cacert x.pem http://h/", "need an https:// URL");
    rejects(
        "-n 1 --cacert /nonexistent/ca.pem https://h/",
        "--cacert /nonexistent/ca.pem",
    );
    rejects(
        "-n 1 --insecure --cacert x.pem https://h/",
        "cannot be used with",
    );
}

#[test]
fn websocket_load() {
    let c = parse("--ws -n 1000 -c 8 ws://127.0.0.1:8080/ws").unwrap();
    assert_eq!(c.ws_message, Some(64));
    assert_eq!(c.target.path, "/ws");
    assert_eq!(c.target.port, 8080);
    let c = parse("--ws --size 70000 -d 1s http://h/ws").unwrap();
    assert_eq!(c.ws_message, Some(70000));
    assert_eq!(parse("-n 1 http://h/").unwrap().ws_message, None);
    rejects("--size 10 -n 1 http://h/", "--ws");
    rejects("-n 1 ws://h/", "unsupported scheme");
    rejects("--ws -n 1 wss://h/", "wss:// is not supported");
    rejects("--ws -n 1 --insecure https://h/", "not https");
    rejects(
        "--ws -n 4 -k --pipeline 2 ws://h/",
        "--pipeline is for HTTP",
    );
    rejects("--ws -n 4 --batch ws://h/", "--batch");
    rejects("--ws -n 4 --method PUT ws://h/", "--method");
    rejects("--ws -n 1 --size 100000000 ws://h/", "at most 64 MiB");
}

#[test]
fn http2_load() {
    let c = parse("--h2 -m 10 -n 1000 -c 4 -H x-a:b http://127.0.0.1:8080/p?q").unwrap();
    let h2 = c.h2.expect("an HTTP/2 load");
    assert_eq!(h2.streams, 10);
    assert!(parse("-n 1 http://h/").unwrap().h2.is_none());
    rejects("-m 4 -n 1 http://h/", "--h2");
    rejects("--h2 -n 1 --insecure https://h/", "not https");
    rejects("--h2 -m 0 -n 1 http://h/", "between 1 and 1024");
    rejects("--h2 -n 4 -k --pipeline 2 http://h/", "--pipeline");
    rejects("--h2 -n 4 --batch http://h/", "--batch");
    rejects("--h2 --ws -n 4 http://h/", "cannot be used with");
}

#[test]
fn h3_is_https_with_streams() {
    let c = parse("--h3 -m 10 -n 1000 -c 4 --insecure https://127.0.0.1:8443/p").unwrap();
    let h3 = c.h3.expect("an HTTP/3 load");
    assert_eq!(h3.streams, 10);
    assert!(c.h2.is_none());
    assert_eq!(
        parse("--h3 -n 1 --insecure https://h/")
            .unwrap()
            .h3
            .unwrap()
            .streams,
        1
    );
    rejects("--h3 -n 1 http://h/", "https://");
    rejects("--h3 -n 1 https://h/", "--cacert");
    rejects(
        "--h3 -m 2000 -n 1 --insecure https://h/",
        "between 1 and 1024",
    );
    rejects(
        "--h3 -n 4 -k --pipeline 2 --insecure https://h/",
        "--pipeline",
    );
    rejects("--h3 -n 4 --timeout 5 --insecure https://h/", "--timeout");
    rejects("--h3 --h2 -n 4 https://h/", "cannot be used with");
}

#[test]
fn path_list_renders_one_request_per_path() {
    let path = std::env::temp_dir().join(format!("fibra-bench-paths-{}", std::process::id()));
    std::fs::write(&path, "/a.css\n\n/b/c.js\n").unwrap();
    let c = parse(&format!(
        "-d 1s -k --paths {} --seed 7 -H X-A:1 http://h:81/ignored",
        path.display()
    ));
    let missing = parse("-d 1s --paths /nonexistent/fibra-list http://h/");
    std::fs::remove_file(&path).unwrap();
    let c = c.unwrap();
    assert_eq!(c.seed, 7);
    let texts: Vec<String> = c
        .path_requests
        .into_iter()
        .map(|r| String::from_utf8(r).unwrap())
        .collect();
    assert_eq!(texts.len(), 2);
    assert!(
        texts[0].starts_with("GET /a.css HTTP/1.1\r\nHost: h:81\r\n"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1].starts_with("GET /b/c.js HTTP/1.1\r\n"),
        "{}",
        texts[1]
    );
    assert!(texts.iter().all(|t| t.contains("X-A: 1\r\n")));
    assert!(missing.unwrap_err().contains("/nonexistent/fibra-list"));
    rejects("-d 1s --seed 3 http://h/", "--paths");
    rejects("-d 1s --paths x --ws ws://h/", "--ws");
}

#[test]
fn drop_bodies_is_for_plain_http() {
    assert!(
        parse("-d 1s -k --drop-bodies http://h/")
            .unwrap()
            .drop_bodies
    );
    assert!(!parse("-d 1s -k http://h/").unwrap().drop_bodies);
    rejects("-d 1s --drop-bodies --insecure https://h/", "plain http");
    rejects("-d 1s --drop-bodies --h2 http://h/", "--h2");
}

#[test]
fn rate() {
    let c = parse("-d 1s -c 4 --rate 2500 http://127.0.0.1:8080/").unwrap();
    assert_eq!(c.rate, Some(2500.0));
    assert_eq!(parse("-n 1 http://127.0.0.1:8080/").unwrap().rate, None);
    rejects("-n 1 --rate 0 http://127.0.0.1:8080/", "--rate 0");
    rejects(
        "-n 1 --rate=-5 http://127.0.0.1:8080/",
        "expected a positive number",
    );
    rejects("-n 1 --rate nan http://127.0.0.1:8080/", "--rate");
}
