//! The `qpack_decode` fuzz target's entry point (only with the `fuzzing` feature; the
//! codec itself is internal).

use http::HeaderName;

use super::decode::FIELD_OVERHEAD;
use super::{Decoder, DecoderStreamReader, Encoder, EncoderStreamReader, Name, QpackError};

/// Splits `data` into field sections and decodes them in sequence on one decoder, as the
/// sections of one connection, checking what a decoder without a dynamic table promises:
///
/// - a section that decodes adds up to no more than the size limit, and its fields with
///   valid names, encoded by our encoder (plain and Huffman-coded, sensitive every other
///   one) and decoded again, come back unchanged;
/// - an error leaves the decoder usable (an empty section decodes after it);
/// - every section is also fed to the encoder- and decoder-stream readers, whole and split
///   in two where its first byte says, and both ways must agree.
///
/// Input: the first byte sets the size limit (255: none; else 64 bytes per unit), then
/// sections, each a length byte and that many bytes (255: the rest of the input).
pub fn decode_sections(data: &[u8]) {
    let Some((&limit, mut rest)) = data.split_first() else {
        return;
    };
    let max_size = if limit == 255 {
        u64::MAX
    } else {
        u64::from(limit) * 64
    };
    let mut decoder = Decoder::new(max_size);
    while let Some((&len, tail)) = rest.split_first() {
        let n = if len == 255 {
            tail.len()
        } else {
            usize::from(len).min(tail.len())
        };
        let (section, next) = tail.split_at(n);
        rest = next;
        let mut fields = Vec::new();
        let mut size = 0u64;
        let result = decoder.decode(section, |name, value| {
            size += name_len(name) + value.as_bytes().len() as u64 + FIELD_OVERHEAD;
            fields.push((name.clone(), value.as_bytes().to_vec()));
        });
        match result {
            Ok(()) => {
                assert!(size <= max_size || name_lens_unknown(&fields));
                round_trip(&fields);
            }
            Err(QpackError::SectionTooLarge) => {}
            Err(e) => {
                assert!(e.h3_error().is_some());
                assert_eq!(decoder.decode(&[0, 0], |_, _| {}), Ok(()));
            }
        }
        streams(section);
    }
}

/// A classified name's length, where the classification keeps it.
fn name_len(name: &Name) -> u64 {
    match name {
        Name::Pseudo(p) => p.as_str().map_or(0, str::len) as u64,
        Name::Header(h) => h.as_str().len() as u64,
        Name::Invalid => 0,
    }
}

/// Whether some names' lengths were not counted by [`name_len`] (invalid or unknown
/// pseudo-header names, whose text the classification drops).
fn name_lens_unknown(fields: &[(Name, Vec<u8>)]) -> bool {
    fields
        .iter()
        .any(|(n, _)| matches!(n, Name::Invalid | Name::Pseudo(super::Pseudo::Unknown)))
}

/// Encodes the fields with header names and decodes them again, both ways.
fn round_trip(fields: &[(Name, Vec<u8>)]) {
    let want: Vec<(HeaderName, Vec<u8>)> = fields
        .iter()
        .filter_map(|(n, v)| match n {
            Name::Header(h) => Some((h.clone(), v.clone())),
            _ => None,
        })
        .collect();
    for encoder in [Encoder::new(), Encoder::with_huffman()] {
        let mut section = Vec::new();
        encoder.prefix(&mut section);
        for (i, (name, value)) in want.iter().enumerate() {
            encoder.field(&mut section, name, value, i % 2 == 1);
        }
        let mut got = Vec::new();
        Decoder::new(u64::MAX)
            .decode(&section, |name, value| {
                if let Name::Header(h) = name {
                    got.push((h.clone(), value.as_bytes().to_vec()));
                }
            })
            .expect("our encoding decodes");
        assert_eq!(got, want, "the round trip changed the fields");
    }
}

/// Feeds `bytes` to both stream readers whole and split in two: the outcomes must agree.
fn streams(bytes: &[u8]) {
    let cut = bytes
        .first()
        .map_or(0, |&b| usize::from(b) % (bytes.len() + 1));
    let mut whole = EncoderStreamReader::new();
    let mut split = EncoderStreamReader::new();
    let a = whole.feed(bytes);
    let b = split
        .feed(&bytes[..cut])
        .and_then(|()| split.feed(&bytes[cut..]));
    assert_eq!(a, b);
    let (mut ids_whole, mut ids_split) = (Vec::new(), Vec::new());
    let mut whole = DecoderStreamReader::new();
    let mut split = DecoderStreamReader::new();
    let a = whole.feed(bytes, |id| ids_whole.push(id));
    let b = split
        .feed(&bytes[..cut], |id| ids_split.push(id))
        .and_then(|()| split.feed(&bytes[cut..], |id| ids_split.push(id)));
    assert_eq!(a, b);
    assert_eq!(ids_whole, ids_split);
}
