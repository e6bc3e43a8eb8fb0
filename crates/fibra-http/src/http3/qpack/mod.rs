//! QPACK (RFC 9204), the field compression of HTTP/3, as a server needs it **with no dynamic
//! table**: we advertise SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0 (and no blocked streams), so
//! a client may only use the static table and literals, and our encoder never uses the
//! client's table. Nothing then depends on the order in which streams arrive: the decoder
//! keeps no state between field sections, and no instruction is owed on either QPACK
//! stream (the decoder stream we open stays empty).
//!
//! - `table`: the static table (Appendix A, 99 entries; names classified and values as
//!   `HeaderValue`s at compile time) and the lookups the encoder needs;
//! - `primitive`: prefixed integers (up to 62 bits) and N-bit prefix string literals, with
//!   HPACK's Huffman code (`crate::huffman`);
//! - `decode`: the field section [`Decoder`] (§4.5), with the field section size limit;
//! - `encode`: the field section [`Encoder`] (static references and literals, Huffman
//!   where shorter when asked);
//! - `streams`: the checks of the client's encoder and decoder streams (§4.3, §4.4), fed
//!   as the bytes arrive;
//! - `fuzz` (with the `fuzzing` feature): the `qpack_decode` fuzz target's entry point,
//!   re-exported as `fibra_http::fuzz_qpack`.
//!
//! Fields come out as HPACK's do: a classified [`Name`] and a [`Value`] shared from the
//! static table or borrowed from the section.

use std::fmt;

use super::error::H3Error;
use crate::huffman::HuffmanError;

mod decode;
mod encode;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod primitive;
mod streams;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use crate::field::{Name, Pseudo, Value};
pub(crate) use decode::Decoder;
pub(crate) use encode::Encoder;
pub(crate) use streams::{DecoderStreamReader, EncoderStreamReader};

/// Why QPACK input was refused. [`QpackError::h3_error`] gives the code each one closes
/// the connection with; [`QpackError::SectionTooLarge`] is the one that does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QpackError {
    /// A field section's Required Insert Count is not 0: it needs dynamic-table entries,
    /// and with a capacity of 0 there can be none (§4.5.1.1: an encoded value no
    /// conforming encoder produces).
    RequiredInsertCount,
    /// A field section's Base is negative: the sign bit is set with a Required Insert
    /// Count of 0 (§4.5.1.2).
    NegativeBase,
    /// A static-table index past the table's 99 entries (§3.1).
    InvalidIndex,
    /// A reference to the dynamic table (T = 0, or a post-Base form): there is none
    /// (§2.2.3, invalid references).
    DynamicReference,
    /// An integer above 2^62 - 1, or with more continuation bytes than one that size needs.
    IntegerOverflow,
    /// The section ends inside a representation (or a string's length runs past its end).
    Truncated,
    /// A Huffman-coded string contains EOS.
    HuffmanEos,
    /// A Huffman-coded string ends in more than 7 bits of padding, or padding that is not
    /// all ones.
    HuffmanPadding,
    /// The decoded fields add up to more than the field section size limit we advertised
    /// (RFC 9114 §4.2.2 counts each name and value length plus 32). Not a QPACK error: the
    /// section is well formed and the decoder is unharmed. The server answers the request
    /// with 431 (Request Header Fields Too Large) and the connection goes on, as HTTP/2's
    /// does with the same limit; a caller that meets it on a response (a client) discards
    /// the response.
    SectionTooLarge,
    /// The encoder stream sets a dynamic table capacity above the 0 we allow (§4.3.1).
    CapacityAboveLimit,
    /// The encoder stream inserts an entry: with a capacity of 0 none fits (§4.3.2, §4.3.3).
    InsertWithoutTable,
    /// The encoder stream duplicates an entry: the table is empty (§4.3.4).
    DuplicateWithoutTable,
    /// The decoder stream acknowledges a field section: we never send one that needs
    /// acknowledging (one with a Required Insert Count above 0, §4.4.1).
    UnexpectedAcknowledgment,
    /// The decoder stream increments the Known Received Count: we never insert, so any
    /// increment, 0 included, is an error (§4.4.3).
    UnexpectedIncrement,
    /// A Stream Cancellation's stream ID does not fit in 62 bits.
    StreamIdOverflow,
}

impl QpackError {
    /// The error the connection closes with (RFC 9204 §6), or `None` for
    /// [`QpackError::SectionTooLarge`], which is answered with 431 instead.
    pub(crate) fn h3_error(self) -> Option<H3Error> {
        use QpackError::*;
        Some(match self {
            RequiredInsertCount | NegativeBase | InvalidIndex | DynamicReference
            | IntegerOverflow | Truncated | HuffmanEos | HuffmanPadding => {
                H3Error::QpackDecompressionFailed
            }
            SectionTooLarge => return None,
            CapacityAboveLimit | InsertWithoutTable | DuplicateWithoutTable => {
                H3Error::QpackEncoderStreamError
            }
            UnexpectedAcknowledgment | UnexpectedIncrement | StreamIdOverflow => {
                H3Error::QpackDecoderStreamError
            }
        })
    }
}

impl fmt::Display for QpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QpackError::RequiredInsertCount => "QPACK: non-zero Required Insert Count",
            QpackError::NegativeBase => "QPACK: negative Base",
            QpackError::InvalidIndex => "QPACK: static index past the table",
            QpackError::DynamicReference => "QPACK: dynamic table reference",
            QpackError::IntegerOverflow => "QPACK: integer overflow",
            QpackError::Truncated => "QPACK: truncated field section",
            QpackError::HuffmanEos => "QPACK: EOS in a Huffman-coded string",
            QpackError::HuffmanPadding => "QPACK: invalid Huffman padding",
            QpackError::SectionTooLarge => "QPACK: field section over the size limit",
            QpackError::CapacityAboveLimit => "QPACK: table capacity above the limit",
            QpackError::InsertWithoutTable => "QPACK: insert into a table of capacity 0",
            QpackError::DuplicateWithoutTable => "QPACK: duplicate in an empty table",
            QpackError::UnexpectedAcknowledgment => "QPACK: unexpected section acknowledgment",
            QpackError::UnexpectedIncrement => "QPACK: unexpected insert count increment",
            QpackError::StreamIdOverflow => "QPACK: stream ID overflow",
        })
    }
}

impl std::error::Error for QpackError {}

impl From<HuffmanError> for QpackError {
    fn from(e: HuffmanError) -> QpackError {
        match e {
            HuffmanError::Eos => QpackError::HuffmanEos,
            HuffmanError::Padding => QpackError::HuffmanPadding,
        }
    }
}
