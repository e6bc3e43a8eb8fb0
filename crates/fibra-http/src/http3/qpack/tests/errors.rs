//! Every way a field section is refused, and the code each error closes the connection
//! with: references to the dynamic table in all their forms, a non-zero Required Insert
//! Count, a negative Base, indices past the static table, integers past 62 bits, strings
//! longer than what is left, sections cut anywhere, bad Huffman strings, and the size limit.

use super::{
    decode, decode_new, fields, indexed, literal, name_ref, section, section_with, Repr, Str,
};
use crate::http3::qpack::primitive::put_int;
use crate::http3::qpack::{Decoder, QpackError};
use crate::http3::H3Error;

/// A valid section with one field of every kind the decoder takes.
fn valid() -> Vec<u8> {
    section(&[
        indexed(17),
        name_ref(1, Str::raw("/a/long/path/that/takes/a/while/to/say")),
        name_ref(0, Str::huffman("www.example.com")),
        literal(Str::raw("x-custom"), Str::raw("v")),
        literal(Str::huffman("x-coded"), Str::huffman("coded value")),
        Repr::NameRef {
            never: true,
            dynamic: false,
            index: 84,
            value: Str::raw("secret"),
        },
        Repr::LiteralName {
            never: true,
            name: Str::raw("x-secret"),
            value: Str::raw("s"),
        },
    ])
}

#[test]
fn the_valid_section_decodes() {
    assert_eq!(
        decode_new(&valid()),
        Ok(fields(&[
            (":method", "GET"),
            (":path", "/a/long/path/that/takes/a/while/to/say"),
            (":authority", "www.example.com"),
            ("x-custom", "v"),
            ("x-coded", "coded value"),
            ("authorization", "secret"),
            ("x-secret", "s"),
        ]))
    );
}

#[test]
fn dynamic_references_in_every_form() {
    let reprs = [
        Repr::Indexed {
            dynamic: true,
            index: 0,
        },
        Repr::PostBaseIndexed(0),
        Repr::NameRef {
            never: false,
            dynamic: true,
            index: 0,
            value: Str::raw("x"),
        },
        Repr::PostBaseNameRef {
            never: false,
            index: 0,
            value: Str::raw("x"),
        },
        Repr::PostBaseNameRef {
            never: true,
            index: 5,
            value: Str::raw("x"),
        },
    ];
    for r in reprs {
        // Alone, and after a valid field.
        let alone = section(std::slice::from_ref(&r));
        assert_eq!(
            decode_new(&alone),
            Err(QpackError::DynamicReference),
            "{r:?}"
        );
        let after = section(&[indexed(1), r.clone()]);
        assert_eq!(
            decode_new(&after),
            Err(QpackError::DynamicReference),
            "{r:?}"
        );
    }
}

#[test]
fn required_insert_count_must_be_zero() {
    for ric in [1, 2, 255, 1 << 40] {
        let s = section_with(ric, false, 0, &[indexed(17)]);
        assert_eq!(
            decode_new(&s),
            Err(QpackError::RequiredInsertCount),
            "{ric}"
        );
    }
}

#[test]
fn the_base_must_not_be_negative() {
    // Sign 1 with a Required Insert Count of 0: Base = 0 - Delta Base - 1.
    for delta in [0, 1, 500] {
        let s = section_with(0, true, delta, &[indexed(17)]);
        assert_eq!(decode_new(&s), Err(QpackError::NegativeBase), "{delta}");
    }
    // Sign 0: any Delta Base (unused without a table).
    let s = section_with(0, false, 1 << 61, &[indexed(17)]);
    assert_eq!(decode_new(&s), Ok(fields(&[(":method", "GET")])));
}

#[test]
fn indices_past_the_static_table() {
    for index in [99, 100, 1 << 20, crate::http3::varint::MAX] {
        assert_eq!(
            decode_new(&section(&[indexed(index)])),
            Err(QpackError::InvalidIndex)
        );
        assert_eq!(
            decode_new(&section(&[name_ref(index, Str::raw("x"))])),
            Err(QpackError::InvalidIndex)
        );
    }
}

#[test]
fn integer_overflow_everywhere() {
    // 2^62 where an integer is read: Required Insert Count, Delta Base, an index, a name
    // length, a value length.
    let mut too_big = Vec::new();
    put_int(&mut too_big, 0x00, 8, 1 << 62);
    assert_eq!(decode_new(&too_big), Err(QpackError::IntegerOverflow));
    let mut s = vec![0x00];
    put_int(&mut s, 0x00, 7, 1 << 62);
    assert_eq!(decode_new(&s), Err(QpackError::IntegerOverflow));
    let mut s = vec![0x00, 0x00];
    put_int(&mut s, 0xc0, 6, 1 << 62);
    assert_eq!(decode_new(&s), Err(QpackError::IntegerOverflow));
    let mut s = vec![0x00, 0x00];
    put_int(&mut s, 0x20, 3, 1 << 62);
    assert_eq!(decode_new(&s), Err(QpackError::IntegerOverflow));
    let mut s = vec![0x00, 0x00, 0xd1, 0x51];
    put_int(&mut s, 0x00, 7, 1 << 62);
    assert_eq!(decode_new(&s), Err(QpackError::IntegerOverflow));
    // Ten continuation bytes, even of zeros.
    let mut s = vec![0x00, 0x00, 0xff];
    s.extend_from_slice(&[0x80; 9]);
    s.push(0x00);
    assert_eq!(decode_new(&s), Err(QpackError::IntegerOverflow));
}

#[test]
fn string_lengths_past_the_section() {
    // A value length one past the end; the largest length there is; a name likewise.
    let mut s = vec![0x00, 0x00, 0x51, 0x05];
    s.extend_from_slice(b"/abc");
    assert_eq!(decode_new(&s), Err(QpackError::Truncated));
    let mut s = vec![0x00, 0x00, 0x51];
    put_int(&mut s, 0x80, 7, crate::http3::varint::MAX);
    s.extend_from_slice(b"abc");
    assert_eq!(decode_new(&s), Err(QpackError::Truncated));
    let mut s = vec![0x00, 0x00];
    put_int(&mut s, 0x28, 3, crate::http3::varint::MAX);
    assert_eq!(decode_new(&s), Err(QpackError::Truncated));
}

#[test]
fn a_section_cut_anywhere_is_truncated() {
    let whole = valid();
    // A cut between two representations leaves a shorter valid section; every other cut
    // is inside one (or inside the prefix).
    let mut boundaries = Vec::new();
    let mut d = Decoder::new(u64::MAX);
    for cut in 0..whole.len() {
        match decode(&mut d, &whole[..cut]) {
            Ok(_) => boundaries.push(cut),
            Err(e) => assert_eq!(e, QpackError::Truncated, "cut at {cut}"),
        }
    }
    // The prefix's end, then the end of each of the first six fields.
    assert_eq!(boundaries.len(), 7, "{boundaries:?}");
    assert_eq!(boundaries[0], 2);
}

#[test]
fn bad_huffman_strings() {
    // A value of one byte of all ones: 8 bits of padding.
    let s = [0x00, 0x00, 0x51, 0x81, 0xff];
    assert_eq!(decode_new(&s), Err(QpackError::HuffmanPadding));
    // EOS (30 ones) and 2 bits of padding, as a name.
    let s = [0x00, 0x00, 0x2c, 0xff, 0xff, 0xff, 0xff, 0x00];
    assert_eq!(decode_new(&s), Err(QpackError::HuffmanEos));
    // 'a' (00011) then 000: padding not all ones.
    let s = [0x00, 0x00, 0x51, 0x81, 0x18];
    assert_eq!(decode_new(&s), Err(QpackError::HuffmanPadding));
}

#[test]
fn the_size_limit() {
    // `:method: GET` counts 7 + 3 + 32 = 42; `x-custom: v` 8 + 1 + 32 = 41.
    let s = section(&[indexed(17), literal(Str::raw("x-custom"), Str::raw("v"))]);
    let mut d = Decoder::new(83);
    assert_eq!(decode(&mut d, &s).map(|f| f.len()), Ok(2));
    let mut d = Decoder::new(82);
    let mut got = Vec::new();
    let r = d.decode(&s, |n, _| got.push(n.clone()));
    assert_eq!(r, Err(QpackError::SectionTooLarge));
    // Decoding stopped at the field that crossed the limit.
    assert_eq!(got.len(), 1);
    // The decoder is unharmed: the next section decodes.
    assert_eq!(
        decode(&mut d, &section(&[indexed(17)])).map(|f| f.len()),
        Ok(1)
    );
    // Empty names and values still count 32 each.
    let empty = literal(Str::raw(""), Str::raw(""));
    let empties = section(&[empty.clone(), empty.clone(), empty]);
    assert_eq!(
        decode(&mut Decoder::new(95), &empties),
        Err(QpackError::SectionTooLarge)
    );
    assert!(decode(&mut Decoder::new(96), &empties).is_ok());
}

#[test]
fn after_an_error_the_decoder_goes_on() {
    // No table, so no state an error could leave half-changed.
    let mut d = Decoder::new(u64::MAX);
    assert!(decode(&mut d, &section(&[Repr::PostBaseIndexed(0)])).is_err());
    assert!(decode(&mut d, &valid()).is_ok());
}

#[test]
fn errors_map_to_rfc_codes() {
    use QpackError::*;
    for e in [
        RequiredInsertCount,
        NegativeBase,
        InvalidIndex,
        DynamicReference,
        IntegerOverflow,
        Truncated,
        HuffmanEos,
        HuffmanPadding,
    ] {
        assert_eq!(
            e.h3_error(),
            Some(H3Error::QpackDecompressionFailed),
            "{e:?}"
        );
    }
    assert_eq!(SectionTooLarge.h3_error(), None);
    for e in [
        CapacityAboveLimit,
        InsertWithoutTable,
        DuplicateWithoutTable,
    ] {
        assert_eq!(
            e.h3_error(),
            Some(H3Error::QpackEncoderStreamError),
            "{e:?}"
        );
    }
    for e in [
        UnexpectedAcknowledgment,
        UnexpectedIncrement,
        StreamIdOverflow,
    ] {
        assert_eq!(
            e.h3_error(),
            Some(H3Error::QpackDecoderStreamError),
            "{e:?}"
        );
    }
}
