//! HPACK (RFC 7541), the header compression of HTTP/2, as a server needs it.
//!
//! - `huffman`: the canonical Huffman code of Appendix B, decoded with a table built at
//!   compile time.

use std::fmt;

mod huffman;
#[cfg(test)]
mod tests;

/// Why a header block could not be decoded. Every one is a connection error of type
/// COMPRESSION_ERROR (RFC 9113 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HpackError {
    /// A Huffman-coded string contains EOS.
    HuffmanEos,
    /// A Huffman-coded string ends in more than 7 bits of padding, or padding that is not
    /// all ones.
    HuffmanPadding,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HpackError::HuffmanEos => "HPACK: EOS in a Huffman-coded string",
            HpackError::HuffmanPadding => "HPACK: invalid Huffman padding",
        })
    }
}

impl std::error::Error for HpackError {}
