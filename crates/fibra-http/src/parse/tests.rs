//! Unit tests of `parse` (the request-head parser and its framing rules).

use super::*;

fn parse(s: &[u8]) -> Result<Option<(Head, usize)>, ProtocolError> {
    parse_head(s, &Settings::default())
}

fn status(s: &[u8]) -> u16 {
    match parse(s) {
        Err(e) => e.status().as_u16(),
        Ok(Some(_)) => 200,
        Ok(None) => 0,
    }
}

#[test]
fn simple_get() {
    let req = b"GET /a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nNEXT";
    let (head, n) = parse(req).unwrap().unwrap();
    assert_eq!(n, req.len() - 4);
    assert_eq!(head.method, Method::GET);
    assert_eq!(head.uri.path(), "/a");
    assert_eq!(head.uri.query(), Some("b=c"));
    assert_eq!(head.version, Version::HTTP_11);
    assert_eq!(head.headers["accept"], "*/*");
    assert_eq!(head.body, BodyKind::Empty);
    assert!(head.keep_alive);
}

#[test]
fn partial_head_needs_more() {
    assert!(parse(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap().is_none());
    assert!(parse(b"GE").unwrap().is_none());
}

#[test]
fn keep_alive_rules() {
    let ka = |s: &[u8]| parse(s).unwrap().unwrap().0.keep_alive;
    assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
    assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    assert!(!ka(
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n"
    ));
}

#[test]
fn framing() {
    let body = |s: &[u8]| parse(s).unwrap().unwrap().0.body;
    assert_eq!(
        body(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"),
        BodyKind::Length(5)
    );
    assert_eq!(
        body(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n"),
        BodyKind::Length(5)
    );
    assert_eq!(
        body(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
        BodyKind::Length(5)
    );
    assert_eq!(
        body(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
        BodyKind::Chunked
    );
    assert_eq!(
        body(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"),
        BodyKind::Chunked
    );
}

#[test]
fn rejections() {
    let table: &[(&[u8], u16)] = &[
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1_0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo\r\n\r\n", 501),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX(: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX : b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX\t: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: u@x\r\n\r\n", 400),
        (b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400),
        (b"GET /\r\n\r\n", 400),
        (b"GET / HTTX/1.1\r\nHost: x\r\n\r\n", 400),
        (b"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        (b"GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        // found by tests/hardening_bad_input.rs: a space in the target is not a version
        // problem; userinfo in absolute-form; a non-numeric port
        (b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET /a b HTTP/2.0\r\nHost: x\r\n\r\n", 400),
        (b"GET http://u@x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET http://x:p/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x:port\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x:80:80\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: [::1]:p\r\n\r\n", 400),
    ];
    for (req, want) in table {
        assert_eq!(status(req), *want, "{}", String::from_utf8_lossy(req));
    }
}

#[test]
fn accepted_forms() {
    assert_eq!(status(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
    assert_eq!(status(b"GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
    assert_eq!(
        status(b"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n"),
        200
    );
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost:\r\n\r\n"), 200);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"), 200);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n"), 200);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: x:\r\n\r\n"), 200);
    assert_eq!(
        status(b"GET http://x:8080/a HTTP/1.1\r\nHost: x\r\n\r\n"),
        200
    );
    assert_eq!(
        status(b"GET / HTTP/1.1\r\nHost: x\r\nX: caf\xc3\xa9\r\n\r\n"),
        200
    );
    assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), 200);
    let (h, _) =
        parse(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
            .unwrap()
            .unwrap();
    assert!(h.upgrade);
    let (h, _) =
        parse(b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
            .unwrap()
            .unwrap();
    assert!(h.expect_continue);
}

#[test]
fn limits() {
    let s = Settings {
        max_head_bytes: 100,
        max_target_bytes: 50,
        max_headers: 3,
        max_body_bytes: 10,
        ..Settings::default()
    };
    let p = |b: &[u8]| {
        parse_head(b, &s)
            .map(|o| o.is_some())
            .map_err(|e| e.status().as_u16())
    };
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(60));
    assert_eq!(p(long_target.as_bytes()), Err(414));
    let long_line = format!("GET /{}", "a".repeat(90));
    assert_eq!(p(long_line.as_bytes()), Err(414));
    let big_head = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "a".repeat(100)
    );
    assert_eq!(p(big_head.as_bytes()), Err(431));
    assert_eq!(p(&big_head.as_bytes()[..99]), Ok(false));
    assert_eq!(
        p(b"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
        Err(431)
    );
    assert_eq!(
        p(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n"),
        Err(413)
    );
    assert_eq!(
        p(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"),
        Ok(true)
    );
}

#[test]
fn cache_gives_the_same_result_as_a_fresh_parse() {
    let settings = Settings::default();
    let mut cache = HeadCache::default();
    let reqs: [&[u8]; 6] = [
        b"GET /a HTTP/1.1\r\nHost: x\r\nX-Id: 1\r\n\r\n",
        b"GET /a HTTP/1.1\r\nhost: x\r\nX-Id: 2\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: y\r\n\r\n",
        b"OPTIONS * HTTP/1.1\r\nHost: y\r\n\r\n",
        b"GET * HTTP/1.1\r\nHost: y\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: y:bad\r\n\r\n",
    ];
    for req in reqs {
        let fresh = parse_head(req, &settings);
        let cached = parse_head_cached(req, &settings, &mut cache);
        match (fresh, cached) {
            (Ok(Some((a, n))), Ok(Some((b, m)))) => {
                assert_eq!(n, m);
                assert_eq!(a.uri, b.uri);
                assert_eq!(a.method, b.method);
                assert_eq!(a.headers, b.headers);
            }
            (Err(a), Err(b)) => assert_eq!(a.status(), b.status()),
            (a, b) => panic!("{a:?} != {b:?} for {}", String::from_utf8_lossy(req)),
        }
    }
}

/// Asserts that two parses agree on everything a `Head` holds.
fn assert_same(a: &Head, b: &Head) {
    assert_eq!(a.method, b.method);
    assert_eq!(a.uri, b.uri);
    assert_eq!(a.version, b.version);
    assert_eq!(a.headers, b.headers);
    assert_eq!(a.body, b.body);
    assert_eq!(a.keep_alive, b.keep_alive);
    assert_eq!(a.expect_continue, b.expect_continue);
    assert_eq!(a.upgrade, b.upgrade);
}

#[test]
fn a_byte_identical_head_is_served_from_the_cache_from_its_third_time() {
    let settings = Settings::default();
    let mut cache = HeadCache::default();
    let req = b"POST /p?q HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
    let (fresh, n) = parse_head(req, &settings).unwrap().unwrap();
    for round in 0..4 {
        // Pipelined: the next request's bytes follow, and must not be counted.
        let mut buf = req.to_vec();
        buf.extend_from_slice(b"abcGET / HTTP/1.1\r\n");
        let (head, m) = parse_head_cached(&buf, &settings, &mut cache)
            .unwrap()
            .unwrap();
        assert_eq!(m, n);
        assert_same(&head, &fresh);
        assert_eq!(cache.repeat.is_some(), round >= 1, "round {round}");
    }
}

#[test]
fn a_cached_head_is_checked_against_the_limits_of_the_settings_in_use() {
    let loose = Settings::default();
    let req = b"POST /abcdef HTTP/1.1\r\nHost: x\r\nA: 1\r\nContent-Length: 100\r\n\r\n";
    let strict: [(Settings, u16); 4] = [
        (
            Settings {
                max_body_bytes: 99,
                ..Settings::default()
            },
            413,
        ),
        (
            Settings {
                max_target_bytes: 5,
                ..Settings::default()
            },
            414,
        ),
        (
            Settings {
                max_headers: 2,
                ..Settings::default()
            },
            431,
        ),
        (
            Settings {
                max_head_bytes: 40,
                ..Settings::default()
            },
            431,
        ),
    ];
    for (settings, want) in strict {
        let mut cache = HeadCache::default();
        for _ in 0..3 {
            assert!(parse_head_cached(req, &loose, &mut cache)
                .unwrap()
                .is_some());
        }
        assert!(cache.repeat.is_some());
        let got = parse_head_cached(req, &settings, &mut cache).map(|_| ());
        assert_eq!(got.map_err(|e| e.status().as_u16()), Err(want));
    }
}

#[test]
fn a_head_differing_in_one_byte_is_parsed_afresh() {
    let settings = Settings::default();
    let mut cache = HeadCache::default();
    let a = b"GET /a HTTP/1.1\r\nHost: x\r\nX-N: 1\r\n\r\n";
    for _ in 0..3 {
        parse_head_cached(a, &settings, &mut cache)
            .unwrap()
            .unwrap();
    }
    assert!(cache.repeat.is_some());
    // Same length, one byte apart, and a malformed one of the same length.
    let b = b"GET /a HTTP/1.1\r\nHost: x\r\nX-N: 2\r\n\r\n";
    let (head, _) = parse_head_cached(b, &settings, &mut cache)
        .unwrap()
        .unwrap();
    assert_eq!(head.headers["x-n"], "2");
    let bad = b"GET /a HTTP/1.1\r\nHost: x\r\nX-N: \x01\r\n\r\n";
    for _ in 0..3 {
        parse_head_cached(a, &settings, &mut cache)
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        parse_head_cached(bad, &settings, &mut cache)
            .map_err(|e| e.status().as_u16())
            .map(|_| ()),
        Err(400)
    );
    // An incomplete head that starts like the kept one is not taken for it.
    assert!(parse_head_cached(&a[..a.len() - 2], &settings, &mut cache)
        .unwrap()
        .is_none());
}

#[test]
fn after_many_distinct_heads_a_repeating_one_is_still_caught() {
    let settings = Settings::default();
    let mut cache = HeadCache::default();
    for i in 0..1000 {
        let req = format!("GET /{i} HTTP/1.1\r\nHost: x\r\n\r\n");
        parse_head_cached(req.as_bytes(), &settings, &mut cache)
            .unwrap()
            .unwrap();
    }
    assert!(cache.repeat.is_none());
    let req = b"GET /same HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut caught = None;
    for i in 0..40 {
        let (head, _) = parse_head_cached(req, &settings, &mut cache)
            .unwrap()
            .unwrap();
        assert_eq!(head.uri.path(), "/same");
        if cache.repeat.is_some() {
            caught = Some(i);
            break;
        }
    }
    let caught = caught.expect("never cached");
    assert!(caught < 33, "caught after {caught} repeats");
}

#[test]
fn host_syntax() {
    for ok in [
        &b""[..],
        b"x",
        b"example.com:80",
        b"127.0.0.1:8080",
        b"[::1]:8080",
        b"[::1]",
        b"a%20b",
        b"x:",
    ] {
        assert!(valid_host(ok), "{}", String::from_utf8_lossy(ok));
    }
    for bad in [
        &b"u@x"[..],
        b"x y",
        b"x:8a",
        b"[::1",
        b"[::1]x",
        b"a%2",
        b"a/b",
        b":80",
        b"a:b:c",
        b"[]",
    ] {
        assert!(!valid_host(bad), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn later_http1_minor_versions_read_as_http11() {
    for v in ["1.2", "1.9"] {
        let raw = format!("GET /v HTTP/{v}\r\nHost: x\r\n\r\n");
        let (head, n) = parse(raw.as_bytes()).expect("parses").expect("complete");
        assert_eq!(n, raw.len());
        assert_eq!(head.request.version, Version::HTTP_11);
        assert!(head.keep_alive, "HTTP/1.1 keeps alive by default");
        // As 1.1: a Host is required.
        assert_eq!(status(format!("GET / HTTP/{v}\r\n\r\n").as_bytes()), 400);
    }
}

#[test]
fn raw_8bit_bytes_in_the_target_are_rejected() {
    assert_eq!(status(b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
    assert_eq!(status(b"GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
    assert_eq!(status(b"GET /a?q=\xff HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
    assert_eq!(status(b"GET /caf%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
}

/// What parsing a head costs when the target changes from request to request (a client
/// walking a site): 561 targets, as many as the docs site of `bench/site.sh`, with wrk's one
/// `Host` field, in a fixed pseudo-random order; each head goes into a `Request` that is
/// dropped, as a handler drops it. Prints nanoseconds per head; a tool for comparing builds
/// (`cargo test --release -p fibra-http --lib parse_cost -- --ignored --nocapture`), so
/// ignored by default; it checks that every head parsed to its own target.
#[test]
#[ignore = "a timing tool: run it in release with --ignored --nocapture"]
fn parse_cost() {
    use crate::body::Body;
    use crate::request::Request;
    const NAMES: [&str; 7] = [
        "library/asyncio-task",
        "_images/logging_flow",
        "reference/datamodel",
        "c-api/unicode",
        "whatsnew/3.11",
        "howto/regex",
        "library/collections.abc",
    ];
    let targets: Vec<String> = (0..561)
        .map(|i| format!("/{}-{i}.html", NAMES[i % NAMES.len()]))
        .collect();
    let heads: Vec<Vec<u8>> = targets
        .iter()
        .map(|t| format!("GET {t} HTTP/1.1\r\nHost: 127.0.0.1:18941\r\n\r\n").into_bytes())
        .collect();
    let settings = Settings::default();
    let mut cache = HeadCache::default();
    let mut x = 1u32;
    let iters = 1_000_000;
    let mut rounds = Vec::new();
    for _ in 0..7 {
        let start = std::time::Instant::now();
        for _ in 0..iters {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let i = (x >> 16) as usize % heads.len();
            let (head, n) = parse_head_cached(&heads[i], &settings, &mut cache)
                .unwrap()
                .unwrap();
            assert_eq!(n, heads[i].len());
            let req = Request::from_head(head.request, Body::empty());
            assert_eq!(req.uri().path().len(), targets[i].len());
            std::hint::black_box(req.headers().len());
        }
        rounds.push(start.elapsed().as_nanos() as f64 / f64::from(iters));
    }
    rounds.sort_by(f64::total_cmp);
    println!(
        "parse_cost: {:.1} ns per head (median of 7 rounds of {iters}; {:.1}..{:.1})",
        rounds[3], rounds[0], rounds[6]
    );
}
