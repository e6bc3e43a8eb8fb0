//! The codec's tests: RFC 7541 Appendix C (`rfc`), errors, limits and name classification
//! (`errors`), the encoder's output (`encoder`), and differential tests against the
//! `loona-hpack` crate (`differential`); the Huffman code's are `crate::huffman`'s. Shared here: a
//! representation-level encoder (every representation of §6, Huffman or not, unlike the
//! production encoder), a seeded PRNG and helpers that turn decoded fields into comparable
//! values.

use super::encode::encode_int;
use super::{Decoder, HpackError, Name};
use crate::field::Pseudo;
use crate::huffman;

mod differential;
mod encoder;
mod errors;
mod rfc;

pub(super) use crate::test_codec::{fields, hex, Field};

/// The text of a classified name (what the RFC's examples list).
pub(super) fn name_text(name: &Name) -> String {
    match name {
        Name::Pseudo(p) => match p {
            Pseudo::Method => ":method",
            Pseudo::Scheme => ":scheme",
            Pseudo::Authority => ":authority",
            Pseudo::Path => ":path",
            Pseudo::Status => ":status",
            Pseudo::Protocol => ":protocol",
            Pseudo::Unknown => ":<unknown>",
        }
        .to_string(),
        Name::Header(h) => h.as_str().to_string(),
        Name::Invalid => "<invalid>".to_string(),
    }
}

/// Decodes `block`, collecting its fields.
pub(super) fn decode(d: &mut Decoder, block: &[u8]) -> Result<Vec<Field>, HpackError> {
    let mut fields = Vec::new();
    d.decode(block, |name, value| {
        fields.push((name_text(name), value.as_bytes().to_vec()))
    })?;
    d.check();
    Ok(fields)
}

/// How a literal field asks the decoder to treat its table (§6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// With incremental indexing.
    Incremental,
    /// Without indexing.
    Without,
    /// Never indexed.
    Never,
}

/// A literal's name: an index or a string (Huffman-coded when the flag is set).
#[derive(Debug, Clone)]
pub(super) enum NameRef {
    /// Taken from the table.
    Index(usize),
    /// A string literal.
    Literal(Vec<u8>, bool),
}

/// One representation of §6.
#[derive(Debug, Clone)]
pub(super) enum Repr {
    /// An indexed field.
    Indexed(usize),
    /// A literal field; the value is Huffman-coded when the flag is set.
    Literal(Kind, NameRef, Vec<u8>, bool),
    /// A dynamic table size update.
    SizeUpdate(usize),
}

/// Appends one representation to `out`.
pub(super) fn encode_repr(out: &mut Vec<u8>, repr: &Repr) {
    match repr {
        Repr::Indexed(i) => encode_int(out, 0x80, 7, *i),
        Repr::SizeUpdate(size) => encode_int(out, 0x20, 5, *size),
        Repr::Literal(kind, name, value, huffman) => {
            let (flags, prefix) = match kind {
                Kind::Incremental => (0x40, 6),
                Kind::Without => (0x00, 4),
                Kind::Never => (0x10, 4),
            };
            match name {
                NameRef::Index(i) => encode_int(out, flags, prefix, *i),
                NameRef::Literal(text, h) => {
                    out.push(flags);
                    encode_string(out, text, *h);
                }
            }
            encode_string(out, value, *huffman);
        }
    }
}

/// A block of representations.
pub(super) fn encode_block(reprs: &[Repr]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in reprs {
        encode_repr(&mut out, r);
    }
    out
}

/// A string literal (§5.2), Huffman-coded or not.
pub(super) fn encode_string(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
    if huffman {
        encode_int(out, 0x80, 7, huffman::encoded_len(s));
        huffman::encode(s, out);
    } else {
        encode_int(out, 0x00, 7, s.len());
        out.extend_from_slice(s);
    }
}

pub(super) use crate::test_codec::Rng;
