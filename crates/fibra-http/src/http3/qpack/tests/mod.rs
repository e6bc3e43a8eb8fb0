//! The codec's tests: RFC 9204's static table and examples (`rfc`), every rejection
//! (`errors`), encoder-to-decoder round trips (`round_trip`), the instruction streams
//! (`streams`), and differential tests against the `wtransport-proto` crate
//! (`differential`). Shared here: a representation-level encoder (every representation of §4.5,
//! the dynamic ones included, Huffman or not, unlike the production encoder), a seeded
//! PRNG and helpers that turn decoded fields into comparable values.

use super::primitive::{put_int, put_string};
use super::{Decoder, Name, QpackError};

mod differential;
mod errors;
mod rfc;
mod round_trip;
mod streams;

pub(super) use crate::test_codec::{fields, hex, Field};

/// The text of a classified name.
pub(super) fn name_text(name: &Name) -> String {
    match name {
        Name::Pseudo(p) => p.as_str().unwrap_or(":<unknown>").to_string(),
        Name::Header(h) => h.as_str().to_string(),
        Name::Invalid => "<invalid>".to_string(),
    }
}

/// Decodes `section` on `d`, collecting its fields.
pub(super) fn decode(d: &mut Decoder, section: &[u8]) -> Result<Vec<Field>, QpackError> {
    let mut fields = Vec::new();
    d.decode(section, |name, value| {
        fields.push((name_text(name), value.as_bytes().to_vec()))
    })?;
    Ok(fields)
}

/// Decodes `section` on a new decoder without a size limit.
pub(super) fn decode_new(section: &[u8]) -> Result<Vec<Field>, QpackError> {
    decode(&mut Decoder::new(u64::MAX), section)
}

/// A string as a representation carries it: the bytes, Huffman-coded when the flag is set.
#[derive(Debug, Clone)]
pub(super) struct Str(pub(super) Vec<u8>, pub(super) bool);

impl Str {
    /// `s` as it is.
    pub(super) fn raw(s: &str) -> Str {
        Str(s.as_bytes().to_vec(), false)
    }

    /// `s` Huffman-coded.
    pub(super) fn huffman(s: &str) -> Str {
        Str(s.as_bytes().to_vec(), true)
    }
}

/// One field line representation of §4.5 (`dynamic`: T = 0; `never`: the N bit).
#[derive(Debug, Clone)]
pub(super) enum Repr {
    /// Indexed field line.
    Indexed { dynamic: bool, index: u64 },
    /// Indexed field line with post-Base index.
    PostBaseIndexed(u64),
    /// Literal field line with name reference.
    NameRef {
        never: bool,
        dynamic: bool,
        index: u64,
        value: Str,
    },
    /// Literal field line with post-Base name reference.
    PostBaseNameRef { never: bool, index: u64, value: Str },
    /// Literal field line with literal name.
    LiteralName { never: bool, name: Str, value: Str },
}

/// A static indexed field line.
pub(super) fn indexed(index: u64) -> Repr {
    Repr::Indexed {
        dynamic: false,
        index,
    }
}

/// A literal with a static name reference.
pub(super) fn name_ref(index: u64, value: Str) -> Repr {
    Repr::NameRef {
        never: false,
        dynamic: false,
        index,
        value,
    }
}

/// A literal with a literal name.
pub(super) fn literal(name: Str, value: Str) -> Repr {
    Repr::LiteralName {
        never: false,
        name,
        value,
    }
}

/// Appends a string literal with an `n`-bit prefix, exactly as flagged (unlike
/// `put_string`, Huffman-coded even when that is longer).
fn put_str(out: &mut Vec<u8>, flags: u8, n: u32, s: &Str) {
    if s.1 {
        let mut coded = Vec::new();
        crate::huffman::encode(&s.0, &mut coded);
        put_int(out, flags | 1 << (n - 1), n - 1, coded.len() as u64);
        out.extend_from_slice(&coded);
    } else {
        put_string(out, flags, n, &s.0, false);
    }
}

/// Appends one representation.
pub(super) fn put_repr(out: &mut Vec<u8>, repr: &Repr) {
    let n = |never: bool, bit: u8| if never { bit } else { 0 };
    match repr {
        Repr::Indexed { dynamic, index } => {
            let t = if *dynamic { 0 } else { 0x40 };
            put_int(out, 0x80 | t, 6, *index);
        }
        Repr::PostBaseIndexed(index) => put_int(out, 0x10, 4, *index),
        Repr::NameRef {
            never,
            dynamic,
            index,
            value,
        } => {
            let t = if *dynamic { 0 } else { 0x10 };
            put_int(out, 0x40 | n(*never, 0x20) | t, 4, *index);
            put_str(out, 0, 8, value);
        }
        Repr::PostBaseNameRef {
            never,
            index,
            value,
        } => {
            put_int(out, n(*never, 0x08), 3, *index);
            put_str(out, 0, 8, value);
        }
        Repr::LiteralName { never, name, value } => {
            put_str(out, 0x20 | n(*never, 0x10), 4, name);
            put_str(out, 0, 8, value);
        }
    }
}

/// A field section: the prefix (Required Insert Count as encoded, sign, Delta Base), then
/// the representations.
pub(super) fn section_with(ric: u64, sign: bool, delta: u64, reprs: &[Repr]) -> Vec<u8> {
    let mut out = Vec::new();
    put_int(&mut out, 0, 8, ric);
    put_int(&mut out, if sign { 0x80 } else { 0 }, 7, delta);
    for r in reprs {
        put_repr(&mut out, r);
    }
    out
}

/// A field section with the prefix 0, 0.
pub(super) fn section(reprs: &[Repr]) -> Vec<u8> {
    section_with(0, false, 0, reprs)
}

pub(super) use crate::test_codec::Rng;
