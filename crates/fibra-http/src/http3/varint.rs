//! QUIC's variable-length integers (RFC 9000 §16), which HTTP/3 uses for frame types and
//! lengths, setting identifiers and values, stream types and push IDs.
//!
//! The two most significant bits of the first byte give the length (1, 2, 4 or 8 bytes);
//! the rest, big-endian, is the value, so values reach 2^62 - 1. An encoding need not be the
//! shortest: a decoder takes any length, an encoder writes the shortest.

/// The largest value a variable-length integer holds: 2^62 - 1.
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// The longest encoding, in bytes.
pub(crate) const MAX_LEN: usize = 8;

/// Decodes the integer at the start of `buf`: the value and the bytes it took, or `None`
/// when `buf` ends before the integer does (the caller waits for more input).
#[inline]
pub(crate) fn decode(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1 << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        value = value << 8 | u64::from(b);
    }
    Some((value, len))
}

/// The length of `value`'s shortest encoding.
///
/// # Panics
/// If `value` is above [`MAX`].
pub(crate) fn len(value: u64) -> usize {
    match value {
        0..=0x3f => 1,
        0x40..=0x3fff => 2,
        0x4000..=0x3fff_ffff => 4,
        _ => {
            assert!(
                value <= MAX,
                "{value} does not fit in a variable-length integer"
            );
            8
        }
    }
}

/// Appends `value`'s shortest encoding to `out`.
///
/// # Panics
/// If `value` is above [`MAX`]: what we encode (lengths, identifiers, codes) is ours or
/// was decoded from a varint, so a larger value is a bug here.
pub(crate) fn put(out: &mut Vec<u8>, value: u64) {
    match len(value) {
        1 => out.push(value as u8),
        2 => out.extend_from_slice(&(0x4000 | value as u16).to_be_bytes()),
        4 => out.extend_from_slice(&(0x8000_0000 | value as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | value).to_be_bytes()),
    }
}

/// Writes `value` into `slot` in exactly `slot.len()` bytes (1, 2, 4 or 8), a length a
/// caller reserved before it knew the value. RFC 9000 §16 allows the longer encoding.
///
/// # Panics
/// If `slot` has another length, or `value` needs more bytes.
pub(crate) fn put_in(slot: &mut [u8], value: u64) {
    assert!(
        len(value) <= slot.len(),
        "{value} does not fit in {} bytes",
        slot.len()
    );
    let tag: u64 = match slot.len() {
        1 => 0,
        2 => 1,
        4 => 2,
        8 => 3,
        n => panic!("no variable-length integer is {n} bytes long"),
    };
    let n = slot.len();
    let bytes = (tag << (8 * n - 2) | value).to_be_bytes();
    slot.copy_from_slice(&bytes[8 - n..]);
}

/// The identifiers HTTP/3 reserves in every space it defines (frame and stream types,
/// settings, error codes) so that peers exercise ignoring the unknown: `0x1f * N + 0x21`
/// (RFC 9114 §6.2.3, §7.2.8, §7.2.4.1, §8.1).
pub(crate) fn is_reserved(id: u64) -> bool {
    id >= 0x21 && (id - 0x21).is_multiple_of(0x1f)
}

/// The `n`th reserved identifier (see [`is_reserved`]), for a sender that greases: `n` is
/// taken modulo the number of reserved identifiers below 2^62.
pub(crate) fn reserved(n: u64) -> u64 {
    0x1f * (n % ((MAX - 0x21) / 0x1f + 1)) + 0x21
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, value);
        out
    }

    #[test]
    fn rfc9000_appendix_a1_examples() {
        let examples: [(&[u8], u64); 5] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            // The same value in two bytes: decoders take a longer encoding.
            (&[0x40, 0x25], 37),
        ];
        for (bytes, value) in examples {
            assert_eq!(decode(bytes), Some((value, bytes.len())), "{bytes:02x?}");
        }
        // The encoder writes the shortest form.
        assert_eq!(encoded(151_288_809_941_952_652), examples[0].0);
        assert_eq!(encoded(494_878_333), examples[1].0);
        assert_eq!(encoded(15_293), examples[2].0);
        assert_eq!(encoded(37), [0x25]);
    }

    #[test]
    fn edges_of_each_length_round_trip() {
        let edges = [
            (0, 1),
            (63, 1),
            (64, 2),
            (16_383, 2),
            (16_384, 4),
            (0x3fff_ffff, 4),
            (0x4000_0000, 8),
            (MAX, 8),
        ];
        for (value, n) in edges {
            let bytes = encoded(value);
            assert_eq!(bytes.len(), n, "{value}");
            assert_eq!(len(value), n);
            assert_eq!(decode(&bytes), Some((value, n)));
            // Trailing bytes are not the integer's.
            let mut longer = bytes.clone();
            longer.push(0xff);
            assert_eq!(decode(&longer), Some((value, n)));
            // Every prefix is too short.
            for cut in 0..n {
                assert_eq!(decode(&bytes[..cut]), None, "{value} cut at {cut}");
            }
        }
        assert_eq!(decode(&[0xff; 8]), Some((MAX, 8)));
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn values_above_2_pow_62_are_refused() {
        encoded(MAX + 1);
    }

    #[test]
    fn a_reserved_slot_takes_any_length() {
        for n in [1, 2, 4, 8] {
            let mut slot = vec![0; n];
            put_in(&mut slot, 37);
            assert_eq!(decode(&slot), Some((37, n)));
        }
        let mut slot = [0; 2];
        put_in(&mut slot, 16_383);
        assert_eq!(slot, [0x7f, 0xff]);
    }

    #[test]
    fn reserved_identifiers() {
        assert!(is_reserved(0x21));
        assert!(is_reserved(0x40));
        assert!(is_reserved(0x3fff_ffff_ffff_fffe));
        assert!(!is_reserved(0x20));
        assert!(!is_reserved(0x22));
        assert!(!is_reserved(0x00));
        assert_eq!(reserved(0), 0x21);
        assert_eq!(reserved(1), 0x40);
        for n in [0, 1, 7, 1 << 40, u64::MAX] {
            let id = reserved(n);
            assert!(is_reserved(id) && id <= MAX, "{n}: {id:#x}");
        }
    }
}
