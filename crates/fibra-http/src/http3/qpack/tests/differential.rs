//! Differential tests against the `wtransport-proto` crate's QPACK (a dev-dependency): an
//! independent static-table-only encoder and decoder, with its own copy of the static table
//! and its own Huffman code (`httlib-huffman`). Its decoder returns a map of UTF-8 strings,
//! so the heads compared have unique names and text values.
//!
//! - every static entry, encoded by each side, decodes to the same field on the other;
//! - random heads from a seeded PRNG: its encoder (Huffman-coded where shorter) → our
//!   decoder, and our encoder (plain and Huffman-coded) → its decoder.

use std::collections::HashMap;

use wtransport_proto::qpack::{Decoder as TheirDecoder, Encoder as TheirEncoder};

use super::{decode_new, Field, Rng};
use crate::field::{classify, Name};
use crate::http3::qpack::table::STATIC;
use crate::http3::qpack::Encoder;

/// A head as text pairs.
type Head = Vec<(String, String)>;

/// Our encoding of `head` (names either pseudo-headers or valid field names).
fn ours(e: Encoder, head: &Head) -> Vec<u8> {
    let mut out = Vec::new();
    e.prefix(&mut out);
    for (name, value) in head {
        match classify(name.as_bytes()) {
            Name::Pseudo(p) => e.pseudo(&mut out, p, value.as_bytes()),
            Name::Header(h) => e.field(&mut out, &h, value.as_bytes(), false),
            Name::Invalid => panic!("{name} is not a field name"),
        }
    }
    out
}

/// Their encoding of `head`.
fn theirs(head: &Head) -> Vec<u8> {
    TheirEncoder::encode(head.iter().map(|(n, v)| (n.as_str(), v.as_str()))).into_vec()
}

/// `head` as our decoder's fields.
fn as_fields(head: &Head) -> Vec<Field> {
    head.iter()
        .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
        .collect()
}

/// `head` as their decoder's map.
fn as_map(head: &Head) -> HashMap<String, String> {
    head.iter().cloned().collect()
}

#[test]
fn every_static_entry_both_ways() {
    for (i, e) in STATIC.iter().enumerate() {
        let head = vec![(e.text.to_string(), e.value.to_str().unwrap().to_string())];
        let from_them = theirs(&head);
        assert_eq!(decode_new(&from_them), Ok(as_fields(&head)), "entry {i}");
        for encoder in [Encoder::new(), Encoder::with_huffman()] {
            let from_us = ours(encoder, &head);
            let got = TheirDecoder::decode(&from_us).unwrap();
            assert_eq!(got, as_map(&head), "entry {i}");
        }
    }
}

/// Names for generated heads: pseudo-headers, static-table names, names the table lacks.
const NAMES: &[&str] = &[
    ":method",
    ":scheme",
    ":authority",
    ":path",
    ":status",
    "content-type",
    "cache-control",
    "accept",
    "accept-encoding",
    "access-control-allow-headers",
    "strict-transport-security",
    "set-cookie",
    "cookie",
    "user-agent",
    "vary",
    "x-frame-options",
    "te",
    "x-request-id",
    "sec-ch-ua-platform",
    "priority",
];

/// A random value for `name`: one of the static table's for that name, empty, or text
/// (sometimes long, sometimes of characters with long Huffman codes).
fn value(rng: &mut Rng, name: &str) -> String {
    let table: Vec<&str> = STATIC
        .iter()
        .filter(|e| e.text == name)
        .map(|e| e.value.to_str().unwrap())
        .collect();
    match rng.below(6) {
        0 | 1 if !table.is_empty() => rng.pick(&table).to_string(),
        2 => String::new(),
        3 => (0..rng.below(300))
            .map(|_| char::from(b' ' + rng.below(95) as u8))
            .collect(),
        4 => (0..rng.below(20))
            .map(|_| *rng.pick(&['{', '}', '<', '>', '^', '`', '|', '~', '\\']))
            .collect(),
        _ => (0..rng.below(40))
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect(),
    }
}

/// A head of up to 12 fields with distinct names.
fn head(rng: &mut Rng) -> Head {
    let mut names: Vec<&str> = NAMES.to_vec();
    let mut head = Vec::new();
    for _ in 0..rng.below(13) {
        let name = names.swap_remove(rng.below(names.len()));
        head.push((name.to_string(), value(rng, name)));
    }
    head
}

#[test]
fn their_encoder_our_decoder() {
    let mut rng = Rng::new(0x9204);
    for _ in 0..2000 {
        let head = head(&mut rng);
        assert_eq!(decode_new(&theirs(&head)), Ok(as_fields(&head)), "{head:?}");
    }
}

#[test]
fn our_encoder_their_decoder() {
    let mut rng = Rng::new(0x9114);
    for _ in 0..2000 {
        let head = head(&mut rng);
        for encoder in [Encoder::new(), Encoder::with_huffman()] {
            let got = TheirDecoder::decode(ours(encoder, &head)).unwrap();
            assert_eq!(got, as_map(&head), "{head:?}");
        }
    }
}
