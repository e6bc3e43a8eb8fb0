//! Errors (each a COMPRESSION_ERROR for the connection), the table's limits and eviction,
//! how values come out (shared or raw), and how names are classified.

use http::header::{self, HeaderName};

use super::{decode, encode_block, encode_repr, fields, Kind, NameRef, Repr};
use crate::field::Pseudo;
use crate::http2::hpack::table::STATIC;
use crate::http2::hpack::{classify, Decoder, HpackError, Name, Value};

fn decode_new(block: &[u8]) -> Result<Vec<super::Field>, HpackError> {
    decode(&mut Decoder::new(), block)
}

fn literal(kind: Kind, name: &str, value: &str) -> Repr {
    Repr::Literal(
        kind,
        NameRef::Literal(name.as_bytes().to_vec(), false),
        value.as_bytes().to_vec(),
        false,
    )
}

#[test]
fn index_zero() {
    assert_eq!(decode_new(&[0x80]), Err(HpackError::InvalidIndex));
}

#[test]
fn index_past_the_tables() {
    // 62 with an empty dynamic table; a literal's name index too.
    assert_eq!(decode_new(&[0xbe]), Err(HpackError::InvalidIndex));
    assert_eq!(decode_new(&[0x7e, 0x00]), Err(HpackError::InvalidIndex));
    assert_eq!(
        decode_new(&[0x0f, 0x2f, 0x00]),
        Err(HpackError::InvalidIndex)
    );
    // With one entry, 62 is valid and 63 is not.
    let mut d = Decoder::new();
    let insert = encode_block(&[literal(Kind::Incremental, "x-a", "1")]);
    decode(&mut d, &insert).unwrap();
    assert_eq!(decode(&mut d, &[0xbe]).unwrap(), fields(&[("x-a", "1")]));
    assert_eq!(decode(&mut d, &[0xbf]), Err(HpackError::InvalidIndex));
    // A huge index is past the tables too, not an overflow of anything.
    let mut block = Vec::new();
    encode_repr(&mut block, &Repr::Indexed(u32::MAX as usize));
    assert_eq!(decode_new(&block), Err(HpackError::InvalidIndex));
}

#[test]
fn integer_overflow() {
    // 2^32 + 126 as an index; a string length of 2^35-ish; 6 continuation bytes.
    assert_eq!(
        decode_new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        decode_new(&[0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        decode_new(&[0x3f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]),
        Err(HpackError::IntegerOverflow)
    );
}

#[test]
fn truncated_blocks() {
    let reprs = [
        Repr::SizeUpdate(4096),
        Repr::Indexed(2),
        literal(Kind::Incremental, "custom-key", "custom-value"),
        Repr::Literal(
            Kind::Without,
            NameRef::Index(4),
            vec![b'/'; 200], // a two-byte length
            false,
        ),
        Repr::Literal(
            Kind::Never,
            NameRef::Literal(b"x-huffman".to_vec(), true),
            b"www.example.com".to_vec(),
            true,
        ),
        Repr::Indexed(62 + 30), // two-byte index, past the table: cut before it only
    ];
    // The block's field boundaries.
    let mut block = Vec::new();
    let mut ends = vec![0];
    for r in &reprs {
        encode_repr(&mut block, r);
        ends.push(block.len());
    }
    for cut in 0..block.len() {
        let result = decode_new(&block[..cut]);
        if ends.contains(&cut) {
            assert!(result.is_ok(), "cut at boundary {cut}: {result:?}");
        } else {
            assert_eq!(result, Err(HpackError::Truncated), "cut at {cut}");
        }
    }
    assert_eq!(decode_new(&block), Err(HpackError::InvalidIndex));
}

#[test]
fn size_updates() {
    // At the start: any number, up to 4096.
    let ok = encode_block(&[
        Repr::SizeUpdate(0),
        Repr::SizeUpdate(4096),
        Repr::Indexed(2),
    ]);
    assert_eq!(decode_new(&ok).unwrap(), fields(&[(":method", "GET")]));
    // After a field.
    let late = encode_block(&[Repr::Indexed(2), Repr::SizeUpdate(100)]);
    assert_eq!(decode_new(&late), Err(HpackError::LateSizeUpdate));
    // Over the limit.
    let over = encode_block(&[Repr::SizeUpdate(4097)]);
    assert_eq!(decode_new(&over), Err(HpackError::SizeUpdateTooLarge));
    // A later block may start with one again.
    let mut d = Decoder::new();
    decode(&mut d, &encode_block(&[Repr::Indexed(2)])).unwrap();
    decode(&mut d, &encode_block(&[Repr::SizeUpdate(100)])).unwrap();
    assert_eq!(d.max_table_size(), 100);
}

#[test]
fn a_failed_decoder_stays_failed() {
    let mut d = Decoder::new();
    assert_eq!(decode(&mut d, &[0x80]), Err(HpackError::InvalidIndex));
    assert_eq!(decode(&mut d, &[0x82]), Err(HpackError::Failed));
    assert_eq!(decode(&mut d, &[]), Err(HpackError::Failed));
}

#[test]
fn eviction_counts_pseudo_names_by_their_text() {
    let mut d = Decoder::new();
    // ":path" + "/a" + 32 = 39; "x-b" + "22" + 32 = 37.
    let block = encode_block(&[
        Repr::SizeUpdate(39 + 37),
        Repr::Literal(Kind::Incremental, NameRef::Index(4), b"/a".to_vec(), false),
        literal(Kind::Incremental, "x-b", "22"),
    ]);
    decode(&mut d, &block).unwrap();
    assert_eq!((d.table_len(), d.table_size()), (2, 76));
    // One byte more than fits evicts the oldest.
    decode(
        &mut d,
        &encode_block(&[literal(Kind::Incremental, "x-c", "333")]),
    )
    .unwrap();
    assert_eq!((d.table_len(), d.table_size()), (2, 38 + 37));
    assert_eq!(
        decode(&mut d, &[0xbe, 0xbf]).unwrap(),
        fields(&[("x-c", "333"), ("x-b", "22")])
    );
    // Shrinking the table evicts; zero empties it.
    decode(&mut d, &encode_block(&[Repr::SizeUpdate(40)])).unwrap();
    assert_eq!((d.table_len(), d.table_size()), (1, 38));
    decode(&mut d, &encode_block(&[Repr::SizeUpdate(0)])).unwrap();
    assert_eq!((d.table_len(), d.table_size()), (0, 0));
}

#[test]
fn an_entry_larger_than_the_table_empties_it() {
    let mut d = Decoder::new();
    decode(
        &mut d,
        &encode_block(&[literal(Kind::Incremental, "x-a", "1")]),
    )
    .unwrap();
    let big = "v".repeat(4096 - 32 - 3 + 1);
    let block = encode_block(&[literal(Kind::Incremental, "x-b", &big)]);
    // Still a field, but not an entry; and what was there is gone.
    assert_eq!(decode(&mut d, &block).unwrap(), fields(&[("x-b", &big)]));
    assert_eq!((d.table_len(), d.table_size()), (0, 0));
    // Exactly the table's size fits.
    let block = encode_block(&[literal(Kind::Incremental, "x-b", &big[1..])]);
    decode(&mut d, &block).unwrap();
    assert_eq!((d.table_len(), d.table_size()), (1, 4096));
}

#[test]
fn a_name_index_to_the_entry_the_insertion_evicts() {
    // §4.4: the name is taken before the entry it comes from is evicted.
    let mut d = Decoder::new();
    let block = encode_block(&[
        Repr::SizeUpdate(50),
        literal(Kind::Incremental, "x-name", "1"),
        Repr::Literal(Kind::Incremental, NameRef::Index(62), b"2".to_vec(), false),
    ]);
    let got = decode(&mut d, &block).unwrap();
    assert_eq!(got, fields(&[("x-name", "1"), ("x-name", "2")]));
    assert_eq!(decode(&mut d, &[0xbe]).unwrap(), fields(&[("x-name", "2")]));
    assert_eq!(d.table_len(), 1);
}

#[test]
fn values_are_shared_from_tables_and_raw_from_literals() {
    let mut d = Decoder::new();
    let block = encode_block(&[
        Repr::Indexed(16), // accept-encoding: gzip, deflate
        literal(Kind::Incremental, "x-ok", "fine"),
        literal(Kind::Incremental, "x-ctl", "a\x01b"),
        literal(Kind::Without, "x-lit", "plain"),
        Repr::Literal(Kind::Never, NameRef::Index(32), b"c=1".to_vec(), true),
        Repr::Indexed(63),
        Repr::Indexed(62),
    ]);
    let mut kinds = Vec::new();
    d.decode(&block, |_, value| {
        kinds.push((matches!(value, Value::Shared(_)), value.as_bytes().to_vec()))
    })
    .unwrap();
    let want: Vec<(bool, Vec<u8>)> = [
        (true, "gzip, deflate"),
        (true, "fine"),
        (false, "a\x01b"), // HeaderValue refuses control bytes: kept raw
        (false, "plain"),
        (false, "c=1"),
        (true, "fine"),
        (false, "a\x01b"),
    ]
    .iter()
    .map(|&(shared, v)| (shared, v.as_bytes().to_vec()))
    .collect();
    assert_eq!(kinds, want);
}

#[test]
fn names_are_classified() {
    assert_eq!(
        classify(b"content-type"),
        Name::Header(header::CONTENT_TYPE)
    );
    assert_eq!(
        classify(b"x-custom"),
        Name::Header(HeaderName::from_static("x-custom"))
    );
    assert_eq!(classify(b"Content-Type"), Name::Invalid);
    assert_eq!(classify(b"x-Custom"), Name::Invalid);
    assert_eq!(classify(b""), Name::Invalid);
    assert_eq!(classify(b"a b"), Name::Invalid);
    assert_eq!(classify(b"a:b"), Name::Invalid);
    assert_eq!(classify(b"caf\xc3\xa9"), Name::Invalid);
    assert_eq!(classify(b":foo"), Name::Pseudo(Pseudo::Unknown));
    assert_eq!(classify(b":"), Name::Pseudo(Pseudo::Unknown));
    assert_eq!(classify(b":Path"), Name::Pseudo(Pseudo::Unknown));
    assert_eq!(classify(b":protocol"), Name::Pseudo(Pseudo::Protocol));
    for (name, pseudo) in [
        (":method", Pseudo::Method),
        (":scheme", Pseudo::Scheme),
        (":authority", Pseudo::Authority),
        (":path", Pseudo::Path),
        (":status", Pseudo::Status),
    ] {
        assert_eq!(classify(name.as_bytes()), Name::Pseudo(pseudo));
    }
}

#[test]
fn static_names_are_classified_as_at_run_time() {
    for (i, e) in STATIC.iter().enumerate() {
        assert_eq!(
            e.name,
            classify(e.text.as_bytes()),
            "static entry {}",
            i + 1
        );
        if let Name::Header(h) = &e.name {
            assert_eq!(h.as_str(), e.text);
        }
    }
    assert_eq!(STATIC[0].name, Name::Pseudo(Pseudo::Authority));
    assert_eq!(STATIC[30].name, Name::Header(header::CONTENT_TYPE));
    assert_eq!(STATIC[60].name, Name::Header(header::WWW_AUTHENTICATE));
}

#[test]
fn invalid_names_decode_and_are_kept_in_the_table() {
    // Not an HPACK error: the fields come out as Invalid / Unknown, and an entry keeps its
    // classification (and its size by the text).
    let mut d = Decoder::new();
    let block = encode_block(&[
        literal(Kind::Incremental, "Upper", "1"),
        literal(Kind::Without, "", "2"),
        literal(Kind::Incremental, ":foo", "3"),
        Repr::Indexed(63),
        Repr::Indexed(62),
    ]);
    let got = decode(&mut d, &block).unwrap();
    let want = [
        ("<invalid>", "1"),
        ("<invalid>", "2"),
        (":<unknown>", "3"),
        ("<invalid>", "1"),
        (":<unknown>", "3"),
    ];
    assert_eq!(got, fields(&want));
    assert_eq!(d.table_size(), (5 + 1 + 32) + (4 + 1 + 32));
}
