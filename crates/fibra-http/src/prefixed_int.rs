//! Integers with an N-bit prefix (RFC 7541 §5.1, which RFC 9204 §4.1.1 reuses): the encoder
//! HPACK and QPACK share.

/// Appends `value` with a `prefix_bits`-bit prefix (1 to 8), the first byte's other bits
/// `flags`: in the prefix if it fits, else the prefix all ones and the rest in 7-bit groups,
/// least significant first.
#[inline]
pub(crate) fn put(out: &mut Vec<u8>, flags: u8, prefix_bits: u32, value: u64) {
    let max_prefix = (1u64 << prefix_bits) - 1;
    if value < max_prefix {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}
