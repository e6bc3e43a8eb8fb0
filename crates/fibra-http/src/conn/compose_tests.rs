//! The response-head composer's tests (`compose.rs`).

use super::*;

fn head<'a>(
    status: StatusCode,
    headers: &'a HeaderMap,
    server: Option<&'a str>,
    framing: Framing,
    conn: ConnHeader,
    content_type: Option<&'a HeaderValue>,
) -> HeadOut<'a> {
    HeadOut {
        status,
        headers,
        content_type,
        server,
        framing,
        conn,
    }
}

#[test]
fn composes_head() {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "text/plain".parse().unwrap());
    headers.insert("content-length", "999".parse().unwrap());
    headers.insert("date", "Thu, 01 Jan 1970 00:00:00 GMT".parse().unwrap());
    let mut out = Vec::new();
    put_head(
        &mut out,
        &head(
            StatusCode::OK,
            &headers,
            Some("fibra"),
            Framing::Length(13),
            ConnHeader::Close,
            None,
        ),
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
         Date: Thu, 01 Jan 1970 00:00:00 GMT\r\nServer: fibra\r\nContent-Length: 13\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn handler_field_names_are_title_case() {
    let mut headers = HeaderMap::new();
    for name in [
        "etag",
        "last-modified",
        "www-authenticate",
        "x-content-type-options",
        "x",
        "x-2fa--mode",
        "vary",
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from_static("v"));
    }
    let mut out = Vec::new();
    compose(
        &mut out,
        &head(
            StatusCode::OK,
            &headers,
            None,
            Framing::Length(0),
            ConnHeader::Omit,
            None,
        ),
    );
    let text = String::from_utf8(out).unwrap();
    let names: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(": ").map(|(n, _)| n))
        .collect();
    assert_eq!(
        names,
        [
            "ETag",
            "Last-Modified",
            "WWW-Authenticate",
            "X-Content-Type-Options",
            "X",
            "X-2fa--Mode",
            "Vary",
            "Date",
            "Content-Length"
        ]
    );
}

#[test]
fn handler_connection_close_is_honoured_once() {
    let mut headers = HeaderMap::new();
    headers.insert("connection", "Keep-Alive, CLOSE ".parse().unwrap());
    for conn in [ConnHeader::Omit, ConnHeader::KeepAlive, ConnHeader::Close] {
        let mut out = Vec::new();
        let close = put_head(
            &mut out,
            &head(
                StatusCode::OK,
                &headers,
                None,
                Framing::Length(0),
                conn,
                None,
            ),
        );
        let text = String::from_utf8(out).unwrap();
        assert!(close, "{conn:?}");
        assert_eq!(text.matches("onnection").count(), 1, "{text}");
        assert!(text.ends_with("Connection: close\r\n\r\n"), "{text}");
    }
    // Other values leave the connection alone; 101 passes the field through.
    headers.insert("connection", "upgrade".parse().unwrap());
    let mut out = Vec::new();
    let close = put_head(
        &mut out,
        &head(
            StatusCode::SWITCHING_PROTOCOLS,
            &headers,
            None,
            Framing::None,
            ConnHeader::Handler,
            None,
        ),
    );
    assert!(!close);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("Connection: upgrade\r\n"));
}

/// `put_head` (through the thread's last-head cache) against a fresh `compose`.
fn check_cached(
    status: StatusCode,
    headers: &HeaderMap,
    server: Option<&str>,
    framing: Framing,
    conn: ConnHeader,
) {
    check(&head(status, headers, server, framing, conn, None));
}

fn check(h: &HeadOut<'_>) -> String {
    let (mut cached, mut fresh) = (b"prefix".to_vec(), b"prefix".to_vec());
    let close = put_head(&mut cached, h);
    let composed = compose(&mut fresh, h);
    assert_eq!(
        String::from_utf8(cached).unwrap(),
        String::from_utf8(fresh.clone()).unwrap()
    );
    assert_eq!(close, composed.handler_close);
    String::from_utf8(fresh).unwrap()
}

#[test]
fn the_body_type_is_written_unless_the_handler_set_one_and_is_part_of_the_cache_key() {
    let empty = HeaderMap::new();
    let mut own = HeaderMap::new();
    own.insert("content-type", "text/html".parse().unwrap());
    let (plain, json) = (
        HeaderValue::from_static("text/plain"),
        HeaderValue::from_static("application/json"),
    );
    let (ok, len, omit) = (StatusCode::OK, Framing::Length(2), ConnHeader::Omit);
    for _ in 0..3 {
        let a = check(&head(ok, &empty, None, len, omit, Some(&plain)));
        assert!(a.contains("\r\nContent-Type: text/plain\r\n"), "{a}");
        let b = check(&head(ok, &empty, None, len, omit, Some(&json)));
        assert!(b.contains("\r\nContent-Type: application/json\r\n"), "{b}");
        let c = check(&head(ok, &empty, None, len, omit, None));
        assert!(!c.to_ascii_lowercase().contains("content-type"), "{c}");
        let d = check(&head(ok, &own, None, len, omit, Some(&plain)));
        assert_eq!(d.to_ascii_lowercase().matches("content-type").count(), 1);
        assert!(d.contains("Content-Type: text/html\r\n"), "{d}");
        // Values in other memory: equal bytes are a hit, equal lengths with other bytes
        // are not (the kept value is compared by pointer first).
        let copy = HeaderValue::from_bytes(b"text/plain").unwrap();
        let other = HeaderValue::from_bytes(b"text/html!").unwrap();
        check(&head(ok, &empty, None, len, omit, Some(&plain)));
        let e = check(&head(ok, &empty, None, len, omit, Some(&copy)));
        assert!(e.contains("\r\nContent-Type: text/plain\r\n"), "{e}");
        let f = check(&head(ok, &empty, None, len, omit, Some(&other)));
        assert!(f.contains("\r\nContent-Type: text/html!\r\n"), "{f}");
    }
}

#[test]
fn a_field_appended_goes_before_the_empty_line() {
    let fields = HeaderMap::new();
    let mut out = b"before".to_vec();
    let at = out.len();
    put_head(
        &mut out,
        &head(
            StatusCode::OK,
            &fields,
            Some("fibra"),
            Framing::Length(2),
            ConnHeader::Omit,
            None,
        ),
    );
    append_field(&mut out, b"Alt-Svc: ", b"h3=\":443\"; ma=86400");
    let head = String::from_utf8(out[at..].to_vec()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.ends_with("\r\nContent-Length: 2\r\nAlt-Svc: h3=\":443\"; ma=86400\r\n\r\n"),
        "{head}"
    );
    assert_eq!(head.matches("\r\n\r\n").count(), 1);
}

#[test]
fn a_repeated_head_is_copied_and_any_difference_composes_afresh() {
    let mut a = HeaderMap::new();
    a.insert("content-type", "text/plain".parse().unwrap());
    let mut b = a.clone();
    b.insert("content-type", "text/html".parse().unwrap());
    let mut two = a.clone();
    two.append("x-extra", "1".parse().unwrap());
    let mut close = a.clone();
    close.insert("connection", "close".parse().unwrap());
    let mut dated = a.clone();
    dated.insert("date", "Thu, 01 Jan 1970 00:00:00 GMT".parse().unwrap());
    let ok = StatusCode::OK;
    let (len, omit) = (Framing::Length(13), ConnHeader::Omit);
    for _ in 0..3 {
        check_cached(ok, &a, Some("fibra"), len, omit);
        check_cached(ok, &a, Some("fibra"), len, omit);
        check_cached(ok, &b, Some("fibra"), len, omit);
        check_cached(ok, &two, Some("fibra"), len, omit);
        check_cached(ok, &a, None, len, omit);
        check_cached(ok, &a, Some("other"), len, omit);
        check_cached(StatusCode::NOT_FOUND, &a, None, len, omit);
        check_cached(ok, &a, None, Framing::Length(14), omit);
        check_cached(ok, &a, None, Framing::Chunked, omit);
        check_cached(ok, &a, None, len, ConnHeader::Close);
        check_cached(ok, &a, None, len, ConnHeader::KeepAlive);
        check_cached(ok, &close, None, len, omit);
        check_cached(ok, &close, None, len, omit);
        check_cached(ok, &dated, None, len, omit);
        check_cached(ok, &dated, None, len, omit);
    }
}

#[test]
fn a_cached_head_carries_the_current_date() {
    let mut h = HeaderMap::new();
    h.insert("content-type", "text/plain".parse().unwrap());
    let ok = head(
        StatusCode::OK,
        &h,
        None,
        Framing::None,
        ConnHeader::Omit,
        None,
    );
    let mut first = Vec::new();
    put_head(&mut first, &ok);
    // Across a second boundary the copy must change with the date.
    let start = std::time::Instant::now();
    loop {
        check(&ok);
        let mut now = Vec::new();
        put_head(&mut now, &ok);
        if now != first || start.elapsed() > std::time::Duration::from_secs(30) {
            let text = String::from_utf8(now).unwrap();
            let date = with_date(|d| String::from_utf8(d.to_vec()).unwrap());
            assert!(text.contains(&format!("Date: {date}\r\n")), "{text}");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn after_many_different_heads_a_repeating_one_is_still_cached() {
    let mut h = HeaderMap::new();
    for i in 0..100u32 {
        h.insert("x-n", i.into());
        check_cached(StatusCode::OK, &h, None, Framing::None, ConnHeader::Omit);
    }
    h.insert("x-n", 7u32.into());
    for _ in 0..40 {
        check_cached(StatusCode::OK, &h, None, Framing::None, ConnHeader::Omit);
    }
    LAST_HEAD.with(|c| {
        assert_eq!(
            c.borrow().misses.misses(),
            0,
            "the repeating head never hit"
        )
    });
}

#[test]
fn rare_status_and_digits() {
    let mut out = Vec::new();
    put_status(&mut out, StatusCode::IM_A_TEAPOT);
    assert_eq!(out, b"HTTP/1.1 418 I'm a teapot\r\n");
    assert_eq!(itoa_buf(0).as_slice(), b"0");
    assert_eq!(itoa_buf(u64::MAX).as_slice(), b"18446744073709551615");
}
