//! The Huffman code: codes checked against RFC 7541 Appendix B, every symbol decoded,
//! round trips of random strings, and the rejections §5.2 requires.

use super::{code, decode, encode, encoded_len, HuffmanError};

/// A small seeded PRNG (xorshift64*): deterministic tests without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn decoded(src: &[u8]) -> Result<Vec<u8>, HuffmanError> {
    let mut out = Vec::new();
    decode(src, &mut out).map(|()| out)
}

/// Left-aligns `bits` bits of `value` after `acc` (a bit string as `(value, length)`).
fn bit_string(parts: &[(u64, u32)]) -> Vec<u8> {
    let mut acc: u128 = 0;
    let mut len = 0;
    for &(value, bits) in parts {
        acc = acc << bits | u128::from(value);
        len += bits;
    }
    assert_eq!(len % 8, 0, "not whole bytes");
    (0..len / 8)
        .map(|i| (acc >> (len - 8 - 8 * i)) as u8)
        .collect()
}

#[test]
fn codes_are_appendix_b() {
    // A sample of Appendix B across lengths 5 to 30 (the rest follows from the lengths by
    // the canonical assignment, and the examples of C.4 and C.6 use many more).
    let rfc: [(usize, u32, u8); 12] = [
        (0x00, 0x1ff8, 13),
        (0x0a, 0x3fff_fffc, 30),
        (b' ' as usize, 0x14, 6),
        (b'!' as usize, 0x3f8, 10),
        (b'0' as usize, 0x0, 5),
        (b'A' as usize, 0x21, 6),
        (b'\\' as usize, 0x7fff0, 19),
        (b'a' as usize, 0x3, 5),
        (b'~' as usize, 0x1ffd, 13),
        (0x80, 0xfffe6, 20),
        (0xff, 0x3ff_ffee, 26),
        (256, 0x3fff_ffff, 30),
    ];
    for (sym, want_code, want_len) in rfc {
        assert_eq!(code(sym), (want_code, want_len), "symbol {sym:#x}");
    }
}

#[test]
fn every_symbol_decodes() {
    for sym in 0..256 {
        let (c, len) = code(sym);
        let len = u32::from(len);
        // The code, then ones to the byte boundary.
        let pad = (8 - len % 8) % 8;
        let bytes = bit_string(&[(u64::from(c), len), ((1 << pad) - 1, pad)]);
        assert_eq!(decoded(&bytes), Ok(vec![sym as u8]), "symbol {sym:#x}");
        // Twice in a row, and after a 5-bit code: other alignments.
        let bytes = bit_string(&[
            (u64::from(c), len),
            (u64::from(c), len),
            (0b00011, 5),
            (
                (1 << ((8 - (2 * len + 5) % 8) % 8)) - 1,
                (8 - (2 * len + 5) % 8) % 8,
            ),
        ]);
        assert_eq!(
            decoded(&bytes),
            Ok(vec![sym as u8, sym as u8, b'a']),
            "symbol {sym:#x} twice"
        );
    }
}

#[test]
fn random_strings_round_trip() {
    let mut rng = Rng(7541);
    for i in 0..2000 {
        let len = rng.below(if i % 10 == 0 { 600 } else { 40 });
        // Mostly header-like text, sometimes any byte (the long codes).
        let s: Vec<u8> = if rng.below(3) == 0 {
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            (0..len).map(|_| b' ' + (rng.next() % 95) as u8).collect()
        };
        let mut coded = Vec::new();
        encode(&s, &mut coded);
        assert_eq!(coded.len(), encoded_len(&s));
        assert_eq!(decoded(&coded), Ok(s));
    }
}

#[test]
fn empty_and_padding_limits() {
    assert_eq!(decoded(b""), Ok(vec![]));
    // "0  ": 5 + 6 + 6 bits, then 7 bits of padding (the most allowed).
    let bytes = bit_string(&[(0x0, 5), (0x14, 6), (0x14, 6), (0x7f, 7)]);
    assert_eq!(decoded(&bytes), Ok(b"0  ".to_vec()));
}

#[test]
fn eos_is_rejected() {
    // EOS alone (30 ones) with 2 bits of padding.
    assert_eq!(decoded(&[0xff; 4]), Err(HuffmanError::Eos));
    // After a symbol: 'a' (5 bits), EOS, 5 bits of padding.
    let bytes = bit_string(&[(0x3, 5), (0x3fff_ffff, 30), (0x1f, 5)]);
    assert_eq!(decoded(&bytes), Err(HuffmanError::Eos));
}

#[test]
fn long_padding_is_rejected() {
    // 'a' then 11 ones; a whole byte of ones after a string that ends on a byte boundary.
    assert_eq!(decoded(&[0x1f, 0xff]), Err(HuffmanError::Padding));
    let mut coded = Vec::new();
    encode(b"aaaaaaaa", &mut coded); // 40 bits: no padding
    assert_eq!(coded.len(), 5);
    coded.push(0xff);
    assert_eq!(decoded(&coded), Err(HuffmanError::Padding));
    // 27 ones: a prefix of EOS, but far too long.
    let bytes = bit_string(&[(0x3, 5), (0x7ff_ffff, 27)]);
    assert_eq!(decoded(&bytes), Err(HuffmanError::Padding));
}

#[test]
fn padding_not_ones_is_rejected() {
    // 'a' (00011) then 000.
    assert_eq!(decoded(&[0x18]), Err(HuffmanError::Padding));
    // 'a' then 110.
    assert_eq!(decoded(&[0x1e]), Err(HuffmanError::Padding));
    // One zero bit after seven ones (a full byte, and not ones).
    let bytes = bit_string(&[(0x3, 5), (0x3, 5), (0x3f, 6)]);
    assert_eq!(decoded(&bytes), Ok(b"aa".to_vec()));
    assert_eq!(decoded(&[0xfe]), Err(HuffmanError::Padding));
}
