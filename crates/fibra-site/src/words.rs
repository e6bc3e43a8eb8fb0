//! Byte strings read eight bytes at a time (SWAR: SIMD within a register), for the checks every
//! request goes through: which bytes of a word equal a given byte, ASCII lower case, and a
//! string's words (the last one zero-padded) without a copy through memory.

/// `0x01` in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x7f` in every byte.
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
/// `0x80` in every byte.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is zero, and of no other (no false positives, unlike
/// the cheaper test that only says whether there is one).
#[inline(always)]
pub fn zero_bytes(w: u64) -> u64 {
    !(((w & LOW7).wrapping_add(LOW7)) | w | LOW7)
}

/// The high bit of each byte of `w` equal to `b`.
#[inline(always)]
pub fn bytes_equal(w: u64, b: u8) -> u64 {
    zero_bytes(w ^ (ONES * u64::from(b)))
}

/// `w` with its ASCII capitals made small (other bytes, UTF-8's included, unchanged).
#[inline(always)]
pub fn to_lower(w: u64) -> u64 {
    // Without the high bits no byte carries into the next: at most 0x7f + 0x3f.
    let x = w & LOW7;
    // Bit 7 of `x + 0x3f` is set from 'A' (0x41) up, of `x + 0x25` from '[' (0x5b) up.
    let upper = (x.wrapping_add(ONES * 0x3f) & !x.wrapping_add(ONES * 0x25)) & !w & HIGH;
    w | (upper >> 2)
}

/// The word of `b` (fewer than 8 bytes, little-endian, zero-padded), from at most three loads.
#[inline(always)]
pub fn short_word(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n < 8);
    if n >= 4 {
        // Two overlapping 4-byte loads: the bytes they share are the same.
        let lo = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let hi = u64::from(u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]));
        lo | (hi << (8 * (n - 4)))
    } else if n > 0 {
        u64::from(b[0])
            | (u64::from(b[n / 2]) << (8 * (n / 2)))
            | (u64::from(b[n - 1]) << (8 * (n - 1)))
    } else {
        0
    }
}

/// The 8-byte word of `b` at `at` (which must have 8 bytes there).
#[inline(always)]
pub fn word_at(b: &[u8], at: usize) -> u64 {
    let w: [u8; 8] = b[at..at + 8].try_into().expect("8 bytes");
    u64::from_le_bytes(w)
}

/// The `i`-th word of `b`: 8 bytes, or the zero-padded rest for the last.
#[inline(always)]
pub fn nth_word(b: &[u8], i: usize) -> u64 {
    let at = 8 * i;
    if at + 8 <= b.len() {
        word_at(b, at)
    } else {
        short_word(&b[at..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytewise(w: u64, f: impl Fn(u8) -> bool) -> u64 {
        let mut m = 0;
        for (i, b) in w.to_le_bytes().into_iter().enumerate() {
            if f(b) {
                m |= 0x80 << (8 * i);
            }
        }
        m
    }

    #[test]
    fn equal_bytes_and_lower_case_agree_with_the_bytewise_answer() {
        // Every byte value in every position, next to neighbours that carry or borrow.
        for b in 0..=255u8 {
            for fill in [0x00u8, 0x01, 0x2e, 0x7f, 0x80, 0xff] {
                for pos in 0..8 {
                    let mut bytes = [fill; 8];
                    bytes[pos] = b;
                    let w = u64::from_le_bytes(bytes);
                    for probe in [0u8, b'%', b'.', b'/', b'\\', 0x80, 0xff] {
                        assert_eq!(bytes_equal(w, probe), bytewise(w, |x| x == probe));
                    }
                    let lower: Vec<u8> = bytes.iter().map(u8::to_ascii_lowercase).collect();
                    assert_eq!(to_lower(w).to_le_bytes().to_vec(), lower);
                }
            }
        }
    }

    #[test]
    fn words_read_every_length() {
        let s: Vec<u8> = (1..=40).collect();
        for n in 0..=s.len() {
            let b = &s[..n];
            for i in 0..n.div_ceil(8) {
                let mut padded = [0u8; 8];
                let part = &b[8 * i..n.min(8 * i + 8)];
                padded[..part.len()].copy_from_slice(part);
                assert_eq!(nth_word(b, i), u64::from_le_bytes(padded), "{n} {i}");
            }
        }
    }
}
