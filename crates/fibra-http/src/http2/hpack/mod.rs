//! HPACK (RFC 7541), the header compression of HTTP/2, as a server needs it: a [`Decoder`]
//! for request header blocks (with the dynamic table a client may fill, up to the 4096 bytes
//! we allow) and a stateless encoder for response heads ([`encode_status`], [`encode_field`]:
//! literals that never enter the client's dynamic table, so there is no encoder state to
//! keep in step).
//!
//! The decoder classifies each field's name once ([`Name`], shared with QPACK in
//! `crate::field`): a static-table name is classified at compile time, a dynamic-table name
//! when its entry is inserted, so a field taken from a table costs a lookup and the
//! callback, with no parsing and no allocation.
//! Values come out as a [`Value`]: shared from the table (a `HeaderValue` the caller clones
//! for the price of a reference count) or the literal's bytes.
//!
//! - `table`: the static table (names classified, values as `HeaderValue`s) and the dynamic
//!   table (a ring, newest first, sized as RFC 7541 §4.1 counts);
//! - the canonical Huffman code of Appendix B is `crate::huffman`, shared with QPACK;
//! - `decode`: the decoder (integers, strings, the field representations of §6);
//! - `encode`: the response-side encoder.
//! - `fuzz` (with the `fuzzing` feature): the `hpack_decode` fuzz target's entry point,
//!   re-exported as `fibra_http::fuzz_hpack`.

use std::fmt;

use crate::huffman::HuffmanError;

mod decode;
mod encode;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use crate::field::{classify, Name, Value};
pub(crate) use decode::Decoder;
pub(crate) use encode::{encode_field, encode_status};

/// Why a header block could not be decoded. Every one is a connection error of type
/// COMPRESSION_ERROR (RFC 9113 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HpackError {
    /// Index 0, or an index past the static and dynamic tables.
    InvalidIndex,
    /// An integer that does not fit in 32 bits, or has more continuation bytes than one
    /// that does would need.
    IntegerOverflow,
    /// The block ends inside a field representation.
    Truncated,
    /// A Huffman-coded string contains EOS.
    HuffmanEos,
    /// A Huffman-coded string ends in more than 7 bits of padding, or padding that is not
    /// all ones.
    HuffmanPadding,
    /// A dynamic table size update after the block's first field.
    LateSizeUpdate,
    /// A dynamic table size update above the 4096 bytes we allow.
    SizeUpdateTooLarge,
    /// The decoder failed on an earlier block; its table is no longer the peer's.
    Failed,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HpackError::InvalidIndex => "HPACK: invalid index",
            HpackError::IntegerOverflow => "HPACK: integer overflow",
            HpackError::Truncated => "HPACK: truncated header block",
            HpackError::HuffmanEos => "HPACK: EOS in a Huffman-coded string",
            HpackError::HuffmanPadding => "HPACK: invalid Huffman padding",
            HpackError::LateSizeUpdate => "HPACK: table size update after a field",
            HpackError::SizeUpdateTooLarge => "HPACK: table size update above the limit",
            HpackError::Failed => "HPACK: decoder failed earlier",
        })
    }
}

impl std::error::Error for HpackError {}

impl From<HuffmanError> for HpackError {
    fn from(e: HuffmanError) -> HpackError {
        match e {
            HuffmanError::Eos => HpackError::HuffmanEos,
            HuffmanError::Padding => HpackError::HuffmanPadding,
        }
    }
}
