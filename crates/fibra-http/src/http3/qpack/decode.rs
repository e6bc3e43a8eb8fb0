//! The field section decoder (RFC 9204 §4.5), for a connection that allows no dynamic table.
//!
//! A section is decoded in one pass over a slice holding all of it (a HEADERS frame's
//! payload), so nothing is resumable and a representation cut short is an error. With no
//! dynamic table the decoder keeps nothing between sections but a scratch buffer: sections
//! may be decoded in any order, none is ever blocked, and none needs acknowledging.
//!
//! The representations, by first bits:
//!
//! - `1T`: indexed field line; the static table when T = 1, else an error;
//! - `01NT`: literal with name reference; the name from the static table when T = 1;
//! - `001NH`: literal with literal name;
//! - `0001`, `0000N`: post-Base forms, which reference the dynamic table: an error.
//!
//! The N (never-index) bit matters to an intermediary that re-encodes; a server that does
//! not forward fields ignores it.

use super::primitive::{read_int, read_string};
use super::table;
use super::{Name, QpackError, Value};
use crate::field::classify;

/// The overhead RFC 9114 §4.2.2 counts per field in a field section's size (RFC 7541
/// §4.1's entry overhead, as SETTINGS_MAX_HEADER_LIST_SIZE counted in HTTP/2).
pub(crate) const FIELD_OVERHEAD: u64 = 32;

/// Scratch capacity kept between sections; a larger buffer (a long Huffman-coded literal)
/// is freed at the end of its section, so an idle connection does not hold it.
const SCRATCH_KEPT: usize = 16 * 1024;

/// Decodes field sections on a connection whose dynamic table capacity is 0.
#[derive(Debug)]
pub(crate) struct Decoder {
    /// Huffman-decoded strings, one at a time.
    scratch: Vec<u8>,
    /// The field section size limit (SETTINGS_MAX_FIELD_SECTION_SIZE as we advertise it);
    /// `u64::MAX` for none.
    max_size: u64,
}

impl Decoder {
    /// A decoder refusing sections larger than `max_size` as RFC 9114 §4.2.2 counts
    /// (`u64::MAX`: no limit).
    pub(crate) fn new(max_size: u64) -> Decoder {
        Decoder {
            scratch: Vec::new(),
            max_size,
        }
    }

    /// Decodes one field section (a HEADERS frame's payload), calling `f` for each field in
    /// order. Every error but [`QpackError::SectionTooLarge`] is a connection error
    /// QPACK_DECOMPRESSION_FAILED for the caller ([`QpackError::h3_error`]); that one means
    /// the fields so far add up to more than the limit, and decoding stops there. Either
    /// way the decoder stays usable: it has no table to fall out of step with the peer's.
    pub(crate) fn decode(
        &mut self,
        section: &[u8],
        mut f: impl FnMut(&Name, Value<'_>),
    ) -> Result<(), QpackError> {
        let result = self.decode_section(section, &mut f);
        if self.scratch.capacity() > SCRATCH_KEPT {
            self.scratch = Vec::new();
        }
        result
    }

    fn decode_section(
        &mut self,
        section: &[u8],
        f: &mut impl FnMut(&Name, Value<'_>),
    ) -> Result<(), QpackError> {
        let mut pos = 0;
        // The prefix (§4.5.1). A Required Insert Count of 0 is encoded as 0; with no
        // dynamic table (MaxEntries = 0) any other encoded value is past the full range.
        if read_int(section, &mut pos, 8)? != 0 {
            return Err(QpackError::RequiredInsertCount);
        }
        // The Base is unused without a table, but read to its end (an integer cut short or
        // too large is as wrong here as anywhere). With a Required Insert Count of 0 a
        // sign bit of 1 would make the Base negative.
        let negative = *section.get(pos).ok_or(QpackError::Truncated)? & 0x80 != 0;
        read_int(section, &mut pos, 7)?;
        if negative {
            return Err(QpackError::NegativeBase);
        }
        let Decoder { scratch, max_size } = self;
        let mut size: u64 = 0;
        let mut count = |name_len: usize, value_len: usize| {
            size = size.saturating_add(name_len as u64 + value_len as u64 + FIELD_OVERHEAD);
            if size > *max_size {
                Err(QpackError::SectionTooLarge)
            } else {
                Ok(())
            }
        };
        while let Some(&first) = section.get(pos) {
            if first & 0x80 != 0 {
                // Indexed field line (§4.5.2).
                if first & 0x40 == 0 {
                    return Err(QpackError::DynamicReference);
                }
                let index = read_int(section, &mut pos, 6)?;
                let e = table::field(index).ok_or(QpackError::InvalidIndex)?;
                count(e.text.len(), e.value.len())?;
                f(&e.name, Value::Shared(&e.value));
            } else if first & 0x40 != 0 {
                // Literal field line with name reference (§4.5.4).
                if first & 0x10 == 0 {
                    return Err(QpackError::DynamicReference);
                }
                let index = read_int(section, &mut pos, 4)?;
                let e = table::field(index).ok_or(QpackError::InvalidIndex)?;
                let value = read_string(section, &mut pos, 8, scratch)?;
                count(e.text.len(), value.len())?;
                f(&e.name, Value::Raw(value));
            } else if first & 0x20 != 0 {
                // Literal field line with literal name (§4.5.6).
                let text = read_string(section, &mut pos, 4, scratch)?;
                let (name, name_len) = (classify(text), text.len());
                let value = read_string(section, &mut pos, 8, scratch)?;
                count(name_len, value.len())?;
                f(&name, Value::Raw(value));
            } else {
                // Indexed field line with post-Base index (0001, §4.5.3) or literal with
                // post-Base name reference (0000, §4.5.5): entries at or above the Base,
                // which a Required Insert Count of 0 leaves none of.
                return Err(QpackError::DynamicReference);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(d: &mut Decoder, section: &[u8]) -> Result<Vec<(Name, Vec<u8>)>, QpackError> {
        let mut out = Vec::new();
        d.decode(section, |n, v| out.push((n.clone(), v.as_bytes().to_vec())))?;
        Ok(out)
    }

    #[test]
    fn an_empty_section_is_its_prefix() {
        let mut d = Decoder::new(u64::MAX);
        assert_eq!(fields(&mut d, &[0x00, 0x00]), Ok(vec![]));
        // Any Delta Base with sign 0 is allowed (and unused).
        assert_eq!(fields(&mut d, &[0x00, 0x7f, 0x80, 0x01]), Ok(vec![]));
    }

    #[test]
    fn a_large_scratch_buffer_is_not_kept() {
        let mut d = Decoder::new(u64::MAX);
        let mut section = vec![0x00, 0x00, 0x5f, 0x1d];
        super::super::primitive::put_string(&mut section, 0, 8, &[b'a'; 40_000], true);
        assert_eq!(fields(&mut d, &section).unwrap()[0].1.len(), 40_000);
        assert_eq!(d.scratch.capacity(), 0);
    }
}
