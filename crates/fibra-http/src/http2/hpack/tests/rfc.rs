//! RFC 7541 Appendix C: every example block, decoded, with the fields and the dynamic table
//! (entries, newest first, and size) the RFC lists after it.

use super::{decode, fields, hex, name_text, Field};
use crate::http2::hpack::Decoder;

/// The dynamic table's entries (newest first) as fields.
fn table(d: &Decoder) -> Vec<Field> {
    d.table()
        .entries()
        .map(|(n, v)| (name_text(n), v.to_vec()))
        .collect()
}

/// Decodes `block` on `d` and checks the fields, the table's entries and its size.
fn step(
    d: &mut Decoder,
    block: &str,
    want: &[(&str, &str)],
    entries: &[(&str, &str)],
    size: usize,
) {
    assert_eq!(decode(d, &hex(block)).unwrap(), fields(want));
    assert_eq!(table(d), fields(entries));
    assert_eq!(d.table_size(), size);
    assert_eq!(d.table_len(), entries.len());
}

#[test]
fn c2_1_literal_with_indexing() {
    let mut d = Decoder::new();
    let block = "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572";
    let field = [("custom-key", "custom-header")];
    step(&mut d, block, &field, &field, 55);
}

#[test]
fn c2_2_literal_without_indexing() {
    let mut d = Decoder::new();
    let block = "040c 2f73 616d 706c 652f 7061 7468";
    step(&mut d, block, &[(":path", "/sample/path")], &[], 0);
}

#[test]
fn c2_3_literal_never_indexed() {
    let mut d = Decoder::new();
    let block = "1008 7061 7373 776f 7264 0673 6563 7265 74";
    step(&mut d, block, &[("password", "secret")], &[], 0);
}

#[test]
fn c2_4_indexed() {
    let mut d = Decoder::new();
    step(&mut d, "82", &[(":method", "GET")], &[], 0);
}

/// The requests of C.3 (plain) and C.4 (Huffman): the same fields and tables.
fn requests(blocks: [&str; 3]) {
    let mut d = Decoder::new();
    let authority = (":authority", "www.example.com");
    let cache = ("cache-control", "no-cache");
    let custom = ("custom-key", "custom-value");
    let first = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        authority,
    ];
    step(&mut d, blocks[0], &first, &[authority], 57);
    let second = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        authority,
        cache,
    ];
    step(&mut d, blocks[1], &second, &[cache, authority], 110);
    let third = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        authority,
        custom,
    ];
    step(&mut d, blocks[2], &third, &[custom, cache, authority], 164);
}

#[test]
fn c3_requests_without_huffman() {
    requests([
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ]);
}

#[test]
fn c4_requests_with_huffman() {
    requests([
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ]);
}

/// The responses of C.5 (plain) and C.6 (Huffman), with the table at 256 bytes as the RFC
/// sets it: here by a size update (`3fe1 01`) before the first block, so the evictions
/// happen as the RFC lists them.
fn responses(blocks: [&str; 3]) {
    let mut d = Decoder::new();
    let date1 = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
    let date2 = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
    let private = ("cache-control", "private");
    let location = ("location", "https://www.example.com");
    let gzip = ("content-encoding", "gzip");
    let cookie = (
        "set-cookie",
        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    );
    let first = format!("3fe1 01 {}", blocks[0]);
    let s302 = (":status", "302");
    let s307 = (":status", "307");
    step(
        &mut d,
        &first,
        &[s302, private, date1, location],
        &[location, date1, private, s302],
        222,
    );
    assert_eq!(d.max_table_size(), 256);
    step(
        &mut d,
        blocks[1],
        &[s307, private, date1, location],
        &[s307, location, date1, private],
        222,
    );
    step(
        &mut d,
        blocks[2],
        &[(":status", "200"), private, date2, location, gzip, cookie],
        &[cookie, gzip, date2],
        215,
    );
}

#[test]
fn c5_responses_without_huffman() {
    responses([
        "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
         2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
         6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
         54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
         5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
         3d31",
    ]);
}

#[test]
fn c6_responses_with_huffman() {
    responses([
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
         77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
         9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ]);
}
