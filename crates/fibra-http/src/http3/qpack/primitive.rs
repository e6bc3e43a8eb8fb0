//! QPACK's primitives (RFC 9204 §4.1): HPACK's prefixed integers, here up to 62 bits, and
//! string literals whose prefix may start mid-byte ("N-bit prefix" strings), read from a
//! slice holding all of them or, for the instruction streams, a byte at a time.

use super::QpackError;
use crate::http3::varint;
use crate::huffman;

/// The rest of a prefixed integer whose prefix was all ones: continuation bytes, 7 bits
/// each, least significant first (RFC 7541 §5.1), taken one at a time so the integer may
/// arrive split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Continuation {
    /// The value so far.
    value: u64,
    /// Where the next byte's 7 bits go.
    shift: u32,
}

impl Continuation {
    /// Starts after a prefix of `prefix` (all ones).
    pub(super) fn new(prefix: u8) -> Continuation {
        Continuation {
            value: u64::from(prefix),
            shift: 0,
        }
    }

    /// Takes the next byte: the integer when it was the last, `None` when more follow.
    /// Errors with [`QpackError::IntegerOverflow`] as soon as the value passes 2^62 - 1
    /// (RFC 9204 §4.1.1 asks for 62 bits), or after 9 continuation bytes, which hold 63
    /// bits: more could only be redundant zeros, and are refused so that an integer is
    /// bounded in length as well as in value.
    pub(super) fn push(&mut self, b: u8) -> Result<Option<u64>, QpackError> {
        if self.shift > 56 {
            return Err(QpackError::IntegerOverflow);
        }
        // At most 255 + (2^63 - 1): no overflow of u64.
        self.value += u64::from(b & 0x7f) << self.shift;
        if self.value > varint::MAX {
            return Err(QpackError::IntegerOverflow);
        }
        self.shift += 7;
        Ok((b & 0x80 == 0).then_some(self.value))
    }
}

/// Reads an integer with a `prefix_bits`-bit prefix at `buf[*pos]`, moving `pos` past it.
#[inline]
pub(super) fn read_int(buf: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<u64, QpackError> {
    let max_prefix = ((1u16 << prefix_bits) - 1) as u8;
    let prefix = *buf.get(*pos).ok_or(QpackError::Truncated)? & max_prefix;
    *pos += 1;
    if prefix < max_prefix {
        return Ok(u64::from(prefix));
    }
    let mut rest = Continuation::new(prefix);
    loop {
        let b = *buf.get(*pos).ok_or(QpackError::Truncated)?;
        *pos += 1;
        if let Some(value) = rest.push(b)? {
            return Ok(value);
        }
    }
}

/// Reads an `n`-bit prefix string literal at `buf[*pos]` (the Huffman flag, then the length
/// with an `n - 1`-bit prefix, then the bytes), moving `pos` past it: a slice of `buf`, or
/// of `scratch` when Huffman-coded. A length past the end of `buf` is
/// [`QpackError::Truncated`], before anything is copied or decoded.
pub(super) fn read_string<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    n: u32,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], QpackError> {
    let huffman = *buf.get(*pos).ok_or(QpackError::Truncated)? & (1 << (n - 1)) != 0;
    let len = read_int(buf, pos, n - 1)?;
    // `read_int` leaves `pos` at most at the end of `buf`.
    let rest = &buf[*pos..];
    let bytes = usize::try_from(len)
        .ok()
        .and_then(|len| rest.get(..len))
        .ok_or(QpackError::Truncated)?;
    *pos += bytes.len();
    if !huffman {
        return Ok(bytes);
    }
    scratch.clear();
    huffman::decode(bytes, scratch)?;
    Ok(scratch)
}

/// Appends an integer with a `prefix_bits`-bit prefix, the first byte's other bits `flags`
/// (HPACK's encoding, shared: `crate::prefixed_int`).
pub(super) use crate::prefixed_int::put as put_int;

/// Appends `s` as an `n`-bit prefix string literal, the first byte's other bits `flags`:
/// Huffman-coded when `huffman` is set and that is shorter, else as it is.
pub(super) fn put_string(out: &mut Vec<u8>, flags: u8, n: u32, s: &[u8], huffman: bool) {
    if huffman {
        let coded = huffman::encoded_len(s);
        if coded < s.len() {
            put_int(out, flags | 1 << (n - 1), n - 1, coded as u64);
            huffman::encode(s, out);
            return;
        }
    }
    put_int(out, flags, n - 1, s.len() as u64);
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(bytes: &[u8], prefix_bits: u32) -> Result<(u64, usize), QpackError> {
        let mut pos = 0;
        read_int(bytes, &mut pos, prefix_bits).map(|v| (v, pos))
    }

    fn put(prefix_bits: u32, value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_int(&mut out, 0, prefix_bits, value);
        out
    }

    #[test]
    fn integers() {
        // RFC 7541 C.1.1 to C.1.3, and an 8-bit prefix (QPACK's Required Insert Count).
        assert_eq!(int(&[0x0a], 5), Ok((10, 1)));
        assert_eq!(int(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
        assert_eq!(int(&[0x2a], 8), Ok((42, 1)));
        assert_eq!(int(&[0xff, 0x00], 8), Ok((255, 2)));
        // The other bits of the first byte are not the integer's.
        assert_eq!(int(&[0xea], 5), Ok((10, 1)));
        // Cut short.
        assert_eq!(int(&[], 5), Err(QpackError::Truncated));
        assert_eq!(int(&[0x1f], 5), Err(QpackError::Truncated));
        assert_eq!(int(&[0x1f, 0x9a], 5), Err(QpackError::Truncated));
    }

    #[test]
    fn integers_up_to_62_bits() {
        for prefix_bits in [3, 4, 5, 6, 7, 8] {
            for value in [0, 1, 6, 7, 127, 128, 255, 256, 1 << 32, varint::MAX] {
                let bytes = put(prefix_bits, value);
                assert_eq!(int(&bytes, prefix_bits), Ok((value, bytes.len())));
                for cut in 0..bytes.len() {
                    assert_eq!(int(&bytes[..cut], prefix_bits), Err(QpackError::Truncated));
                }
            }
            // One more than 62 bits, and far more.
            let mut over = put(prefix_bits, varint::MAX);
            let last = over.len() - 1;
            over[last] += 1;
            assert_eq!(int(&over, prefix_bits), Err(QpackError::IntegerOverflow));
        }
        // u64::MAX's continuation bytes: refused once the value passes 2^62 - 1, not at
        // the end.
        let mut huge = vec![0x7f];
        huge.extend_from_slice(&[0xff; 9]);
        huge.push(0x01);
        assert_eq!(int(&huge, 7), Err(QpackError::IntegerOverflow));
        // Redundant zero continuations: allowed up to 9 bytes, not 10.
        let mut zeros = vec![0x1f];
        zeros.extend_from_slice(&[0x80; 8]);
        zeros.push(0x00);
        assert_eq!(int(&zeros, 5), Ok((31, 10)));
        zeros.insert(1, 0x80);
        assert_eq!(int(&zeros, 5), Err(QpackError::IntegerOverflow));
    }

    #[test]
    fn continuation_byte_at_a_time() {
        let bytes = put(6, 1_000_000);
        let mut c = Continuation::new(63);
        let (last, middle) = bytes[1..].split_last().unwrap();
        for &b in middle {
            assert_eq!(c.push(b), Ok(None));
        }
        assert_eq!(c.push(*last), Ok(Some(1_000_000)));
    }

    #[test]
    fn strings_with_every_prefix() {
        let mut scratch = Vec::new();
        for n in [4, 6, 8] {
            for huffman in [false, true] {
                for s in [&b""[..], b"a", b"www.example.com", &[b'z'; 300]] {
                    let mut out = vec![];
                    // Flags above the prefix must not disturb it.
                    let flags = !((1u16 << n) - 1) as u8 & 0xa0;
                    put_string(&mut out, flags, n, s, huffman);
                    out.push(0xee);
                    let mut pos = 0;
                    let got = read_string(&out, &mut pos, n, &mut scratch).unwrap();
                    assert_eq!(got, s);
                    assert_eq!(pos, out.len() - 1);
                }
            }
        }
    }

    #[test]
    fn string_lengths_are_bounded_by_the_input() {
        let mut scratch = Vec::new();
        let mut pos = 0;
        assert_eq!(
            read_string(b"\x04abc", &mut pos, 8, &mut scratch),
            Err(QpackError::Truncated)
        );
        // A length of 2^62 - 1, Huffman-coded or not.
        for flag in [0x00, 0x80] {
            let mut huge = Vec::new();
            put_int(&mut huge, flag, 7, varint::MAX);
            huge.extend_from_slice(b"abc");
            let mut pos = 0;
            assert_eq!(
                read_string(&huge, &mut pos, 8, &mut scratch),
                Err(QpackError::Truncated)
            );
        }
    }
}
