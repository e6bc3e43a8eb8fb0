//! Our encoder's sections, decoded by our decoder: typical request and response heads with
//! and without Huffman coding, every status code, the never-index bit, and random fields
//! from a seeded PRNG. Each section is also checked to use no dynamic reference and to be
//! no longer than the plain encoding when Huffman-coded.

use http::header::{self, HeaderName};

use super::{decode, decode_new, fields, Field, Rng};
use crate::field::Pseudo;
use crate::http3::qpack::{Decoder, Encoder};

/// A request head: pseudo-header fields, then fields.
fn request(e: Encoder, pseudo: &[(Pseudo, &str)], list: &[(HeaderName, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    e.prefix(&mut out);
    for (p, v) in pseudo {
        e.pseudo(&mut out, *p, v.as_bytes());
    }
    for (n, v) in list {
        e.field(&mut out, n, v.as_bytes(), false);
    }
    out
}

/// The fields a request head should decode to.
fn want(pseudo: &[(Pseudo, &str)], list: &[(HeaderName, &str)]) -> Vec<Field> {
    let mut w: Vec<(&str, &str)> = pseudo
        .iter()
        .map(|(p, v)| (p.as_str().unwrap(), *v))
        .collect();
    w.extend(list.iter().map(|(n, v)| (n.as_str(), *v)));
    fields(&w)
}

/// A request head as lists: pseudo-header fields, fields.
type Head<'a> = (&'a [(Pseudo, &'a str)], &'a [(HeaderName, &'a str)]);

#[test]
fn typical_requests() {
    let browser: Vec<(HeaderName, &str)> = vec![
        (
            header::USER_AGENT,
            "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
        ),
        (
            header::ACCEPT,
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        ),
        (header::ACCEPT_LANGUAGE, "en-US,en;q=0.5"),
        (header::ACCEPT_ENCODING, "gzip, deflate, br"),
        (header::COOKIE, "session=0123456789abcdef; theme=dark"),
        (HeaderName::from_static("sec-fetch-dest"), "document"),
        (header::UPGRADE_INSECURE_REQUESTS, "1"),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    let cases: [Head<'_>; 3] = [
        (
            &[
                (Pseudo::Method, "GET"),
                (Pseudo::Scheme, "https"),
                (Pseudo::Authority, "www.example.com"),
                (Pseudo::Path, "/"),
            ],
            &browser,
        ),
        (
            &[
                (Pseudo::Method, "POST"),
                (Pseudo::Scheme, "https"),
                (Pseudo::Authority, "api.example.com:8443"),
                (Pseudo::Path, "/v1/items?limit=10&after=abc"),
            ],
            &[
                (header::CONTENT_TYPE, "application/json"),
                (header::CONTENT_LENGTH, "27"),
                (header::AUTHORIZATION, "Bearer eyJhbGciOiJIUzI1NiJ9.e30"),
            ],
        ),
        (
            &[
                (Pseudo::Method, "CONNECT"),
                (Pseudo::Protocol, "websocket"),
                (Pseudo::Scheme, "https"),
                (Pseudo::Authority, "chat.example.com"),
                (Pseudo::Path, "/socket"),
            ],
            &[(HeaderName::from_static("sec-websocket-version"), "13")],
        ),
    ];
    for (pseudo, list) in cases {
        let plain = request(Encoder::new(), pseudo, list);
        let coded = request(Encoder::with_huffman(), pseudo, list);
        assert_eq!(decode_new(&plain), Ok(want(pseudo, list)));
        assert_eq!(decode_new(&coded), Ok(want(pseudo, list)));
        assert!(
            coded.len() < plain.len(),
            "{} < {}",
            coded.len(),
            plain.len()
        );
    }
}

#[test]
fn typical_responses() {
    let list: Vec<(HeaderName, &str)> = vec![
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_LENGTH, "1234"),
        (header::DATE, "Sun, 29 Nov 2026 10:37:00 GMT"),
        (header::SERVER, "fibra"),
        (header::CACHE_CONTROL, "public, max-age=31536000"),
        (
            header::STRICT_TRANSPORT_SECURITY,
            "max-age=31536000; includesubdomains",
        ),
        (header::VARY, "accept-encoding"),
        (header::ETAG, "\"5f3c-1a2b\""),
        (header::SET_COOKIE, "id=a3fWa; Secure; HttpOnly"),
        (HeaderName::from_static("x-request-id"), "8c1f0b3e"),
    ];
    for e in [Encoder::new(), Encoder::with_huffman()] {
        for status in [200, 404, 500, 201, 418] {
            let mut out = Vec::new();
            e.prefix(&mut out);
            e.status(&mut out, status);
            for (i, (n, v)) in list.iter().enumerate() {
                e.field(&mut out, n, v.as_bytes(), i % 3 == 0);
            }
            let text = status.to_string();
            let mut w = vec![(":status", text.as_str())];
            w.extend(list.iter().map(|(n, v)| (n.as_str(), *v)));
            assert_eq!(decode_new(&out), Ok(fields(&w)));
        }
    }
}

#[test]
fn every_status_round_trips() {
    let mut d = Decoder::new(u64::MAX);
    for e in [Encoder::new(), Encoder::with_huffman()] {
        for status in 100..=999u16 {
            let mut out = Vec::new();
            e.prefix(&mut out);
            e.status(&mut out, status);
            let text = status.to_string();
            assert_eq!(decode(&mut d, &out), Ok(fields(&[(":status", &text)])));
            let indexed = matches!(
                status,
                103 | 200 | 304 | 404 | 503 | 100 | 204 | 206 | 302 | 400 | 403 | 421 | 425 | 500
            );
            // An indexed field line starts 11 (T = 1); a literal naming `:status` 0101.
            assert_eq!(out[2] & 0xc0 == 0xc0, indexed, "{status}");
        }
    }
}

#[test]
fn the_never_index_bit_does_not_change_the_field() {
    let e = Encoder::new();
    let x_api_key = HeaderName::from_static("x-api-key");
    for sensitive in [false, true] {
        // A literal with a name reference: 01NT; with a literal name: 001N.
        let mut out = Vec::new();
        e.prefix(&mut out);
        e.field(
            &mut out,
            &header::AUTHORIZATION,
            b"Basic dXNlcjpwYXNz",
            sensitive,
        );
        assert_eq!(out[2] & 0xe0, if sensitive { 0x60 } else { 0x40 });
        assert_eq!(
            decode_new(&out),
            Ok(fields(&[("authorization", "Basic dXNlcjpwYXNz")]))
        );
        let mut out = Vec::new();
        e.prefix(&mut out);
        e.field(&mut out, &x_api_key, b"k", sensitive);
        assert_eq!(out[2] & 0xf0, if sensitive { 0x30 } else { 0x20 });
        assert_eq!(decode_new(&out), Ok(fields(&[("x-api-key", "k")])));
    }
}

/// Names for generated fields: static-table names (with and without their values) and
/// names the table lacks.
const NAMES: &[&str] = &[
    "content-type",
    "cache-control",
    "accept",
    "vary",
    "x-frame-options",
    "access-control-allow-headers",
    "set-cookie",
    "user-agent",
    "te",
    "x-request-id",
    "sec-ch-ua-platform",
    "a",
];

/// Values: the static table's, text, long text, bytes Huffman codes long.
fn value(rng: &mut Rng) -> Vec<u8> {
    match rng.below(6) {
        0 => {
            let i = rng.below(crate::http3::qpack::table::STATIC_LEN);
            crate::http3::qpack::table::STATIC[i]
                .value
                .as_bytes()
                .to_vec()
        }
        1 => Vec::new(),
        2 => (0..rng.below(400))
            .map(|_| b' ' + rng.below(95) as u8)
            .collect(),
        3 => (0..rng.below(20))
            .map(|_| 0x80 | rng.next() as u8)
            .collect(),
        _ => (0..rng.below(30))
            .map(|_| b'a' + rng.below(26) as u8)
            .collect(),
    }
}

#[test]
fn random_fields_round_trip() {
    let mut rng = Rng::new(9204);
    let mut d = Decoder::new(u64::MAX);
    for _ in 0..500 {
        let e = if rng.below(2) == 0 {
            Encoder::new()
        } else {
            Encoder::with_huffman()
        };
        let mut out = Vec::new();
        let mut want = Vec::new();
        e.prefix(&mut out);
        for _ in 0..rng.below(12) {
            let name = *rng.pick(NAMES);
            let name = HeaderName::from_static(name);
            let v = value(&mut rng);
            e.field(&mut out, &name, &v, rng.below(4) == 0);
            want.push((name.as_str().to_string(), v));
        }
        assert_eq!(decode(&mut d, &out), Ok(want));
    }
}
