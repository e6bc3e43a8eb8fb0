//! The encoder's output, decoded by our decoder: every status, fields named by the static
//! table and by literal, the never-indexed flag; nothing enters the peer's table.

use http::header::{self, HeaderName};

use super::{decode, fields};
use crate::http2::hpack::{encode_field, encode_status, Decoder};

#[test]
fn every_status_decodes() {
    let mut d = Decoder::new();
    for status in 100..=999u16 {
        let mut block = Vec::new();
        encode_status(&mut block, status);
        let text = status.to_string();
        assert_eq!(
            decode(&mut d, &block).unwrap(),
            fields(&[(":status", &text)])
        );
        let indexed = matches!(status, 200 | 204 | 206 | 304 | 400 | 404 | 500);
        assert_eq!(block.len() == 1, indexed, "{status}");
    }
    assert_eq!(d.table_len(), 0);
}

#[test]
fn fields_decode_and_nothing_is_indexed() {
    let long = "x".repeat(300);
    let list = [
        (header::CONTENT_TYPE, "text/html"),
        (header::SET_COOKIE, "id=1"),
        (header::WWW_AUTHENTICATE, "Basic"),
        (HeaderName::from_static("x-long"), long.as_str()),
        (HeaderName::from_static("x-empty"), ""),
    ];
    let mut block = Vec::new();
    encode_status(&mut block, 404);
    for (i, (name, value)) in list.iter().enumerate() {
        encode_field(&mut block, name, value.as_bytes(), i % 2 == 1);
    }
    let mut want = vec![(":status", "404")];
    want.extend(list.iter().map(|(n, v)| (n.as_str(), *v)));
    let mut d = Decoder::new();
    assert_eq!(decode(&mut d, &block).unwrap(), fields(&want));
    assert_eq!(d.table_len(), 0);
}

#[test]
fn sensitive_fields_are_never_indexed() {
    // The representation's first four bits: 0001 never indexed, 0000 without indexing.
    let mut block = Vec::new();
    encode_field(&mut block, &header::AUTHORIZATION, b"secret", true);
    assert_eq!(block[0] & 0xf0, 0x10);
    block.clear();
    encode_field(
        &mut block,
        &HeaderName::from_static("x-token"),
        b"secret",
        true,
    );
    assert_eq!(block[0], 0x10);
    block.clear();
    encode_field(&mut block, &header::AUTHORIZATION, b"x", false);
    assert_eq!(block[0] & 0xf0, 0x00);
}
