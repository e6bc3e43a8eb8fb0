//! The `hpack_decode` fuzz target's entry point (only with the `fuzzing` feature; the
//! codec itself is internal).

use super::{encode_field, Decoder, HpackError, Name};

/// Splits `data` into header blocks and decodes them in sequence on one decoder, as the
/// blocks of one connection, checking after each that the dynamic table's size is the sum
/// of its entries' and within the limits the peer set and we allow.
///
/// Input: blocks, each a length byte and that many bytes (255: the rest of the input). A
/// block that fails must leave the decoder failing every later block; the next block then
/// starts a new decoder. A block that decodes is checked once more: its fields with valid
/// names, encoded by our encoder and decoded by a new decoder, come back unchanged.
pub fn decode_blocks(data: &[u8]) {
    let mut decoder = Decoder::new();
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let n = if len == 255 {
            tail.len()
        } else {
            usize::from(len).min(tail.len())
        };
        let (block, next) = tail.split_at(n);
        rest = next;
        let mut fields = Vec::new();
        let result = decoder.decode(block, |name, value| {
            fields.push((name.clone(), value.as_bytes().to_vec()));
        });
        decoder.check();
        assert!(decoder.table_size() <= decoder.max_table_size());
        match result {
            Ok(()) => round_trip(&fields),
            Err(_) => {
                assert_eq!(decoder.decode(b"", |_, _| {}), Err(HpackError::Failed));
                decoder = Decoder::new();
            }
        }
    }
}

/// Encodes the fields with header names (sensitive every other one) and decodes them again.
fn round_trip(fields: &[(Name, Vec<u8>)]) {
    let mut block = Vec::new();
    let mut want = Vec::new();
    for (i, (name, value)) in fields.iter().enumerate() {
        if let Name::Header(h) = name {
            encode_field(&mut block, h, value, i % 2 == 1);
            want.push((name.clone(), value.clone()));
        }
    }
    let mut got = Vec::new();
    Decoder::new()
        .decode(&block, |name, value| {
            got.push((name.clone(), value.as_bytes().to_vec()))
        })
        .expect("our encoding decodes");
    assert_eq!(got, want, "the round trip changed the fields");
}
