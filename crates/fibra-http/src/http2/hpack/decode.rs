//! The header block decoder: integers (RFC 7541 §5.1), strings (§5.2) and the field
//! representations (§6), on the tables of `table`.
//!
//! A block is decoded in one pass over a slice holding all of it (the caller joins HEADERS
//! and CONTINUATION fragments), so nothing is resumable and a field cut short is an error.
//! The costs, by representation:
//!
//! - indexed field: one integer (one byte below index 127), a table lookup, the callback;
//! - literal without indexing: the value is a slice of the block, or of the decoder's
//!   scratch buffer when Huffman-coded (reused, so no allocation once it has grown); a
//!   literal name is classified, which allocates for a name `http` has no constant for;
//! - literal with incremental indexing: as above, plus the entry: the value copied into a
//!   `HeaderValue`, the name classified or cloned from the entry it indexes.

use super::table::{Table, MAX_TABLE_SIZE};
use super::{classify, HpackError, Name, Value};
use crate::huffman;

/// Continuation bytes an integer may have: enough for any 32-bit value.
const MAX_CONTINUATION: u32 = 5;

/// Scratch capacity kept between blocks; a larger buffer (a long Huffman-coded literal) is
/// freed at the end of its block, so an idle connection does not hold it.
const SCRATCH_KEPT: usize = 16 * 1024;

/// Decodes request header blocks, keeping the dynamic table between them.
#[derive(Debug)]
pub(crate) struct Decoder {
    /// The dynamic table (and the static one behind it).
    table: Table,
    /// Huffman-decoded strings, one at a time.
    scratch: Vec<u8>,
    /// Set by an error: the table may be half-updated, no longer the peer's.
    failed: bool,
}

impl Decoder {
    /// How many times the dynamic table has changed: a block decoded with this unchanged
    /// before and after changed nothing, and decodes to the same fields again while it
    /// stays unchanged.
    pub(crate) fn table_changes(&self) -> u64 {
        self.table.changes()
    }

    /// A decoder whose dynamic table may grow to 4096 bytes (the default
    /// SETTINGS_HEADER_TABLE_SIZE, which we never change).
    pub(crate) fn new() -> Decoder {
        Decoder {
            table: Table::new(),
            scratch: Vec::new(),
            failed: false,
        }
    }

    /// Decodes one complete header block (the concatenated HEADERS+CONTINUATION fragments),
    /// calling `f` for each field in order. Any HPACK error is a connection error
    /// COMPRESSION_ERROR for the caller; after an error the decoder is unusable (the
    /// connection ends): every later call fails with [`HpackError::Failed`].
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        mut f: impl FnMut(&Name, Value<'_>),
    ) -> Result<(), HpackError> {
        if self.failed {
            return Err(HpackError::Failed);
        }
        let result = self.decode_block(block, &mut f);
        self.failed = result.is_err();
        if self.scratch.capacity() > SCRATCH_KEPT {
            self.scratch = Vec::new();
        }
        result
    }

    /// The dynamic table's size (RFC 7541 §4.1).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn table_size(&self) -> usize {
        self.table.size()
    }

    /// The dynamic table's maximum size, as the peer last set it.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn max_table_size(&self) -> usize {
        self.table.max_size()
    }

    /// The number of entries in the dynamic table.
    #[cfg(test)]
    pub(crate) fn table_len(&self) -> usize {
        self.table.len()
    }

    /// The dynamic table (tests).
    #[cfg(test)]
    pub(super) fn table(&self) -> &Table {
        &self.table
    }

    /// Panics unless the dynamic table's invariant holds (tests and the fuzz target).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn check(&self) {
        self.table.check();
    }

    fn decode_block(
        &mut self,
        block: &[u8],
        f: &mut impl FnMut(&Name, Value<'_>),
    ) -> Result<(), HpackError> {
        let Decoder { table, scratch, .. } = self;
        let mut pos = 0;
        // Size updates are allowed only before the first field (§4.2).
        let mut field_seen = false;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let index = read_int(block, &mut pos, 7)?;
                let (name, value) = table.field(index).ok_or(HpackError::InvalidIndex)?;
                f(name, value);
            } else if first & 0x40 != 0 {
                // Literal with incremental indexing (§6.2.1). The name is taken (cloned)
                // before the insertion, which may evict the entry it comes from (§4.4).
                let index = read_int(block, &mut pos, 6)?;
                let (name, name_len) = if index == 0 {
                    let text = read_string(block, &mut pos, scratch)?;
                    (classify(text), text.len())
                } else {
                    let (name, len) = table.name(index).ok_or(HpackError::InvalidIndex)?;
                    (name.clone(), len)
                };
                let value = read_string(block, &mut pos, scratch)?;
                match table.insert(name, name_len, value) {
                    Ok((name, value)) => f(name, value),
                    Err(name) => f(&name, Value::Raw(value)),
                }
            } else if first & 0x20 != 0 {
                // Dynamic table size update (§6.3).
                if field_seen {
                    return Err(HpackError::LateSizeUpdate);
                }
                let size = read_int(block, &mut pos, 5)?;
                if size > MAX_TABLE_SIZE {
                    return Err(HpackError::SizeUpdateTooLarge);
                }
                table.set_max_size(size);
                continue;
            } else {
                // Literal without indexing (§6.2.2) or never indexed (§6.2.3): the same to
                // a decoder that does not forward fields.
                let index = read_int(block, &mut pos, 4)?;
                if index == 0 {
                    let name = classify(read_string(block, &mut pos, scratch)?);
                    let value = read_string(block, &mut pos, scratch)?;
                    f(&name, Value::Raw(value));
                } else {
                    let (name, _) = table.name(index).ok_or(HpackError::InvalidIndex)?;
                    let value = read_string(block, &mut pos, scratch)?;
                    f(name, Value::Raw(value));
                }
            }
            field_seen = true;
        }
        Ok(())
    }
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new()
    }
}

/// Reads an integer with a `prefix_bits`-bit prefix (§5.1) at `block[*pos]`, moving `pos`
/// past it.
#[inline]
fn read_int(block: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<usize, HpackError> {
    let max_prefix = (1u8 << prefix_bits) - 1;
    let prefix = *block.get(*pos).ok_or(HpackError::Truncated)? & max_prefix;
    *pos += 1;
    if prefix < max_prefix {
        return Ok(usize::from(prefix));
    }
    read_continuation(block, pos, prefix)
}

/// The rest of an integer whose prefix is all ones: at most [`MAX_CONTINUATION`] bytes,
/// and a value that fits in 32 bits (no index, length or size a block can use is larger).
fn read_continuation(block: &[u8], pos: &mut usize, prefix: u8) -> Result<usize, HpackError> {
    let mut value = u64::from(prefix);
    for i in 0..MAX_CONTINUATION {
        let b = *block.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        value += u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return u32::try_from(value)
                .ok()
                .and_then(|v| usize::try_from(v).ok())
                .ok_or(HpackError::IntegerOverflow);
        }
    }
    Err(HpackError::IntegerOverflow)
}

/// Reads a string literal (§5.2) at `block[*pos]`, moving `pos` past it: a slice of the
/// block, or of `scratch` when Huffman-coded.
fn read_string<'a>(
    block: &'a [u8],
    pos: &mut usize,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], HpackError> {
    let huffman = *block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = read_int(block, pos, 7)?;
    // `read_int` leaves `pos` at most at the end of the block.
    let bytes = block[*pos..].get(..len).ok_or(HpackError::Truncated)?;
    *pos += len;
    if !huffman {
        return Ok(bytes);
    }
    scratch.clear();
    huffman::decode(bytes, scratch)?;
    Ok(scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(bytes: &[u8], prefix_bits: u32) -> Result<(usize, usize), HpackError> {
        let mut pos = 0;
        read_int(bytes, &mut pos, prefix_bits).map(|v| (v, pos))
    }

    #[test]
    fn integers() {
        // RFC 7541 C.1.1 to C.1.3.
        assert_eq!(int(&[0x0a], 5), Ok((10, 1)));
        assert_eq!(int(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
        assert_eq!(int(&[0x2a], 8 - 1), Ok((42, 1)));
        // The prefix's other bits are not the integer's.
        assert_eq!(int(&[0xea], 5), Ok((10, 1)));
        // A redundant zero continuation is allowed, within the byte limit.
        assert_eq!(int(&[0x1f, 0x80, 0x00], 5), Ok((31, 3)));
        // The largest 32-bit value, and one more.
        assert_eq!(
            int(&[0x7f, 0x80, 0xff, 0xff, 0xff, 0x0f], 7),
            Ok((u32::MAX as usize, 6))
        );
        assert_eq!(
            int(&[0x7f, 0x81, 0xff, 0xff, 0xff, 0x0f], 7),
            Err(HpackError::IntegerOverflow)
        );
        // Too many continuation bytes, even of zeros.
        assert_eq!(
            int(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 5),
            Err(HpackError::IntegerOverflow)
        );
        // Cut short.
        assert_eq!(int(&[0x1f], 5), Err(HpackError::Truncated));
        assert_eq!(int(&[0x1f, 0x9a], 5), Err(HpackError::Truncated));
        assert_eq!(int(&[], 5), Err(HpackError::Truncated));
    }

    #[test]
    fn strings() {
        let mut scratch = Vec::new();
        let mut pos = 0;
        let block = b"\x03abcX";
        assert_eq!(read_string(block, &mut pos, &mut scratch), Ok(&b"abc"[..]));
        assert_eq!(pos, 4);
        let mut pos = 0;
        assert_eq!(
            read_string(b"\x04abc", &mut pos, &mut scratch),
            Err(HpackError::Truncated)
        );
        // "www.example.com", Huffman-coded (C.4.1).
        let coded = b"\x8c\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff";
        let mut pos = 0;
        assert_eq!(
            read_string(coded, &mut pos, &mut scratch),
            Ok(&b"www.example.com"[..])
        );
        assert_eq!(pos, coded.len());
    }
}
