//! RFC 9204: the static table checked entry by entry against Appendix A, every entry
//! decoded, and the examples of Appendix B — B.1 decoded, the field sections and
//! instructions of B.2 to B.5 refused, since they use the dynamic table we do not allow.

use super::{decode_new, fields, hex, indexed, name_ref, section, Str};
use crate::http3::qpack::table::{self, STATIC, STATIC_LEN};
use crate::http3::qpack::{DecoderStreamReader, EncoderStreamReader, QpackError};

/// Appendix A as the RFC prints it (index, name, value; `\*` and `\'` unescaped), taken
/// from the RFC's source text rather than typed from our table.
const APPENDIX_A: &str = "\
0 :authority
1 :path /
2 age 0
3 content-disposition
4 content-length 0
5 cookie
6 date
7 etag
8 if-modified-since
9 if-none-match
10 last-modified
11 link
12 location
13 referer
14 set-cookie
15 :method CONNECT
16 :method DELETE
17 :method GET
18 :method HEAD
19 :method OPTIONS
20 :method POST
21 :method PUT
22 :scheme http
23 :scheme https
24 :status 103
25 :status 200
26 :status 304
27 :status 404
28 :status 503
29 accept */*
30 accept application/dns-message
31 accept-encoding gzip, deflate, br
32 accept-ranges bytes
33 access-control-allow-headers cache-control
34 access-control-allow-headers content-type
35 access-control-allow-origin *
36 cache-control max-age=0
37 cache-control max-age=2592000
38 cache-control max-age=604800
39 cache-control no-cache
40 cache-control no-store
41 cache-control public, max-age=31536000
42 content-encoding br
43 content-encoding gzip
44 content-type application/dns-message
45 content-type application/javascript
46 content-type application/json
47 content-type application/x-www-form-urlencoded
48 content-type image/gif
49 content-type image/jpeg
50 content-type image/png
51 content-type text/css
52 content-type text/html; charset=utf-8
53 content-type text/plain
54 content-type text/plain;charset=utf-8
55 range bytes=0-
56 strict-transport-security max-age=31536000
57 strict-transport-security max-age=31536000; includesubdomains
58 strict-transport-security max-age=31536000; includesubdomains; preload
59 vary accept-encoding
60 vary origin
61 x-content-type-options nosniff
62 x-xss-protection 1; mode=block
63 :status 100
64 :status 204
65 :status 206
66 :status 302
67 :status 400
68 :status 403
69 :status 421
70 :status 425
71 :status 500
72 accept-language
73 access-control-allow-credentials FALSE
74 access-control-allow-credentials TRUE
75 access-control-allow-headers *
76 access-control-allow-methods get
77 access-control-allow-methods get, post, options
78 access-control-allow-methods options
79 access-control-expose-headers content-length
80 access-control-request-headers content-type
81 access-control-request-method get
82 access-control-request-method post
83 alt-svc clear
84 authorization
85 content-security-policy script-src 'none'; object-src 'none'; base-uri 'none'
86 early-data 1
87 expect-ct
88 forwarded
89 if-range
90 origin
91 purpose prefetch
92 server
93 timing-allow-origin *
94 upgrade-insecure-requests 1
95 user-agent
96 x-forwarded-for
97 x-frame-options deny
98 x-frame-options sameorigin
";

#[test]
fn static_table_is_appendix_a() {
    let rows: Vec<(usize, &str, &str)> = APPENDIX_A
        .lines()
        .map(|line| {
            let (index, rest) = line.split_once(' ').unwrap();
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            (index.parse().unwrap(), name, value)
        })
        .collect();
    assert_eq!(rows.len(), STATIC_LEN);
    assert_eq!(STATIC.len(), STATIC_LEN);
    for (i, (index, name, value)) in rows.into_iter().enumerate() {
        assert_eq!(index, i);
        let e = &STATIC[i];
        assert_eq!(e.text, name, "entry {i}'s name");
        assert_eq!(e.value.as_bytes(), value.as_bytes(), "entry {i}'s value");
        assert_eq!(e.name, crate::field::classify(name.as_bytes()), "entry {i}");
    }
}

#[test]
fn every_static_entry_decodes() {
    for (i, e) in STATIC.iter().enumerate() {
        let i = i as u64;
        let want = fields(&[(e.text, e.value.to_str().unwrap())]);
        assert_eq!(decode_new(&section(&[indexed(i)])), Ok(want), "entry {i}");
        // Its name, with a value of our own, plain and Huffman-coded.
        let want = fields(&[(e.text, "some value")]);
        for value in [Str::raw("some value"), Str::huffman("some value")] {
            let got = decode_new(&section(&[name_ref(i, value)]));
            assert_eq!(got, Ok(want.clone()), "entry {i}'s name");
        }
    }
    // One past the end, in both forms.
    let past = STATIC_LEN as u64;
    assert_eq!(
        decode_new(&section(&[indexed(past)])),
        Err(QpackError::InvalidIndex)
    );
    assert_eq!(
        decode_new(&section(&[name_ref(past, Str::raw("x"))])),
        Err(QpackError::InvalidIndex)
    );
}

#[test]
fn name_lookups_match_the_table() {
    for (i, e) in STATIC.iter().enumerate() {
        let indices = table::name_indices(e.text).unwrap_or_else(|| panic!("{}", e.text));
        let want: Vec<u8> = (0..STATIC_LEN as u8)
            .filter(|&j| STATIC[usize::from(j)].text == e.text)
            .collect();
        assert_eq!(indices, &want[..], "{}", e.text);
        assert!(indices.contains(&(i as u8)));
    }
    assert_eq!(table::name_indices("x-custom"), None);
    assert_eq!(table::name_indices(":protocol"), None);
    for status in 0..=1000u16 {
        let want = STATIC
            .iter()
            .position(|e| e.text == ":status" && e.value == status.to_string().as_str());
        let got = table::status_index(status).map(usize::from);
        assert_eq!(got, want, "{status}");
    }
}

#[test]
fn b1_literal_field_line_with_name_reference() {
    let got = decode_new(&hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"));
    assert_eq!(got, Ok(fields(&[(":path", "/index.html")])));
}

#[test]
fn b2_to_b5_field_sections_need_the_dynamic_table() {
    // B.2's section on stream 4 (post-Base references), B.4's on stream 8 (relative ones).
    for dump in ["0381 10 11", "0500 80 c1 81"] {
        assert_eq!(
            decode_new(&hex(dump)),
            Err(QpackError::RequiredInsertCount),
            "{dump}"
        );
    }
}

#[test]
fn b2_to_b5_encoder_instructions_are_refused() {
    let cases = [
        // B.2: Set Dynamic Table Capacity = 220.
        ("3fbd01", QpackError::CapacityAboveLimit),
        // B.2: Insert With Name Reference (static).
        (
            "c00f 7777 772e 6578 616d 706c 652e 636f 6d",
            QpackError::InsertWithoutTable,
        ),
        // B.3: Insert With Literal Name.
        (
            "4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565",
            QpackError::InsertWithoutTable,
        ),
        // B.4: Duplicate.
        ("02", QpackError::DuplicateWithoutTable),
        // B.5: Insert With Name Reference (dynamic).
        (
            "810d 6375 7374 6f6d 2d76 616c 7565 32",
            QpackError::InsertWithoutTable,
        ),
    ];
    for (dump, error) in cases {
        let mut r = EncoderStreamReader::new();
        assert_eq!(r.feed(&hex(dump)), Err(error), "{dump}");
    }
}

#[test]
fn b2_to_b5_decoder_instructions() {
    // B.2: Section Acknowledgment (stream 4); B.3: Insert Count Increment (1).
    let mut r = DecoderStreamReader::new();
    assert_eq!(
        r.feed(&hex("84"), |_| {}),
        Err(QpackError::UnexpectedAcknowledgment)
    );
    let mut r = DecoderStreamReader::new();
    assert_eq!(
        r.feed(&hex("01"), |_| {}),
        Err(QpackError::UnexpectedIncrement)
    );
    // B.4: Stream Cancellation (stream 8) is fine.
    let mut r = DecoderStreamReader::new();
    let mut cancelled = Vec::new();
    assert_eq!(r.feed(&hex("48"), |id| cancelled.push(id)), Ok(()));
    assert_eq!(cancelled, [8]);
}
