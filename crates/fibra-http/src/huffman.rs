//! The Huffman code of RFC 7541 Appendix B, which HPACK (HTTP/2) and QPACK (HTTP/3, RFC 9204
//! §4.1.2) share for string literals: decoded for both, encoded for an encoder that asks.
//!
//! The code is canonical: within one length the codes are consecutive in symbol order, and
//! each length's first code follows the previous length's last. So the code lengths alone
//! define it ([`LENGTHS`]), and the tables the decoder needs are built from them at compile
//! time (`build`, which also proves the code complete):
//!
//! - `fast`: for every 10-bit prefix, the symbol and length of a code of at most 10 bits
//!   that starts it. Codes that short cover letters, digits and common punctuation: one
//!   lookup per symbol for nearly all of what clients send;
//! - per length (11 to 30 bits), the first code, the end of the range and where the
//!   length's symbols start in `sorted`: the rare long codes are found by comparing the
//!   next bits with each length's range, shortest first.
//!
//! Bits are taken from a 64-bit accumulator, refilled a word at a time.

use std::fmt;

/// Each symbol's code length in bits: octets 0x00 to 0xff, then EOS (RFC 7541 Appendix B).
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00..
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10..
     6, 10, 10, 12, 13,  6,  8, 11, 10, 10,  8, 11,  8,  6,  6,  6, // 0x20..
     5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8, 15,  6, 12, 10, // 0x30..
    13,  6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7, // 0x40..
     7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8, 13, 19, 13, 14,  6, // 0x50..
    15,  5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5, // 0x60..
     6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7, 15, 11, 14, 13, 28, // 0x70..
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80..
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90..
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0..
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0..
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0..
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0..
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0..
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0..
    30, // EOS
];

/// The EOS symbol, which must not appear in a string.
const EOS: u16 = 256;

/// The longest code, in bits (EOS and three control octets).
const MAX_LEN: usize = 30;

/// Prefix bits the `fast` table is indexed by.
const FAST_BITS: u32 = 10;

/// Each symbol's code, right-aligned: the canonical code of [`LENGTHS`].
const CODES: [u32; 257] = build().codes;

/// The decoding tables (see the module docs).
static TABLES: Tables = build();

/// What [`decode`] looks codes up in, built by [`build`].
struct Tables {
    /// Each symbol's code, right-aligned.
    codes: [u32; 257],
    /// For each `FAST_BITS`-bit prefix: `symbol << 4 | length` of the code of at most
    /// `FAST_BITS` bits it starts with, or 0 when its code is longer.
    fast: [u16; 1 << FAST_BITS],
    /// Per length: the first code of that length (right-aligned in that many bits).
    first: [u32; MAX_LEN + 1],
    /// Per length: one past the last code of that length.
    end: [u32; MAX_LEN + 1],
    /// Per length: the index in `sorted` of the length's first symbol.
    offset: [u16; MAX_LEN + 1],
    /// The symbols by code length, then symbol (which is code order).
    sorted: [u16; 257],
}

/// Assigns the canonical code and fills the decoding tables. Panics (at compile time) if
/// a symbol has no length in 1..=30 or the code is not complete (every 30-bit string starts
/// with a code), which [`decode`] relies on.
const fn build() -> Tables {
    let mut t = Tables {
        codes: [0; 257],
        fast: [0; 1 << FAST_BITS],
        first: [0; MAX_LEN + 1],
        end: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        sorted: [0; 257],
    };
    let mut code: u32 = 0;
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        t.first[len] = code;
        t.offset[len] = n as u16;
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] as usize == len {
                t.codes[sym] = code;
                t.sorted[n] = sym as u16;
                n += 1;
                if len as u32 <= FAST_BITS {
                    let spare = FAST_BITS - len as u32;
                    let mut k = 0;
                    while k < 1 << spare {
                        t.fast[((code << spare) | k) as usize] = (sym as u16) << 4 | len as u16;
                        k += 1;
                    }
                }
                code += 1;
            }
            sym += 1;
        }
        t.end[len] = code;
        code <<= 1;
        len += 1;
    }
    assert!(n == 257, "a symbol without a code length in 1..=30");
    assert!(t.end[MAX_LEN] == 1 << MAX_LEN, "the code is not complete");
    t
}

/// Why a Huffman-coded string could not be decoded (RFC 7541 §5.2). The codec it is part of
/// maps it to its own error (HPACK: COMPRESSION_ERROR; QPACK: QPACK_DECOMPRESSION_FAILED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// The string contains EOS.
    Eos,
    /// The string ends in more than 7 bits of padding, or padding that is not all ones.
    Padding,
}

impl fmt::Display for HuffmanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HuffmanError::Eos => "EOS in a Huffman-coded string",
            HuffmanError::Padding => "invalid Huffman padding",
        })
    }
}

impl std::error::Error for HuffmanError {}

/// Decodes the Huffman-coded `src`, appending the octets to `out`. Errors: EOS in the
/// data, or padding that is longer than 7 bits or not a prefix of EOS (all ones).
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    // The shortest code is 5 bits.
    out.reserve(src.len() * 8 / 5);
    let t = &TABLES;
    // The next `bits` bits of input, left-aligned. The bits after them are zero past the
    // end of the input, and otherwise the input's next bits or zero (a word refill leaves
    // a partial byte there, which the next refill puts back unchanged).
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut rest = src;
    loop {
        // Keep at least MAX_LEN bits while input lasts, so a code longer than what is left
        // means the input has ended.
        if bits < MAX_LEN as u32 {
            if let Some((word, _)) = rest.split_first_chunk::<8>() {
                acc |= u64::from_be_bytes(*word) >> bits;
                let take = (63 - bits) / 8;
                bits += take * 8;
                rest = &rest[take as usize..];
            } else {
                while let Some((&b, tail)) = rest.split_first() {
                    if bits > 56 {
                        break;
                    }
                    acc |= u64::from(b) << (56 - bits);
                    bits += 8;
                    rest = tail;
                }
            }
        }
        let e = t.fast[(acc >> (64 - FAST_BITS)) as usize];
        let (sym, len) = if e != 0 {
            (e >> 4, u32::from(e & 15))
        } else {
            long_code(t, acc)
        };
        if len > bits {
            // The input has ended: what is left is padding, at most 7 bits of ones.
            return if bits <= 7 && acc == !(u64::MAX >> bits) {
                Ok(())
            } else {
                Err(HuffmanError::Padding)
            };
        }
        if sym == EOS {
            return Err(HuffmanError::Eos);
        }
        out.push(sym as u8);
        acc <<= len;
        bits -= len;
    }
}

/// The symbol and length of the code longer than `FAST_BITS` that starts `acc`.
fn long_code(t: &Tables, acc: u64) -> (u16, u32) {
    let mut len = FAST_BITS as usize + 1;
    // Canonical: a prefix that is no shorter code is at least the first code of its length,
    // and the code is complete, so the loop ends by MAX_LEN.
    loop {
        let code = (acc >> (64 - len)) as u32;
        if code < t.end[len] || len == MAX_LEN {
            let i = usize::from(t.offset[len]) + (code - t.first[len]) as usize;
            return (t.sorted[i], len as u32);
        }
        len += 1;
    }
}

/// Appends the Huffman coding of `src` to `out`, padded with ones to a byte boundary (the
/// most significant bits of EOS, RFC 7541 §5.2).
pub(crate) fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut bits = 0;
    for &b in src {
        let len = u32::from(LENGTHS[usize::from(b)]);
        acc = acc << len | u64::from(CODES[usize::from(b)]);
        bits += len;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push((acc << (8 - bits)) as u8 | 0xff >> bits);
    }
}

/// The length in bytes of `src` Huffman-coded: an encoder compares it with `src.len()` to
/// choose the shorter form.
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(LENGTHS[usize::from(b)]))
        .sum();
    bits.div_ceil(8)
}

/// A symbol's code and length (tests).
#[cfg(test)]
fn code(sym: usize) -> (u32, u8) {
    (CODES[sym], LENGTHS[sym])
}

#[cfg(test)]
mod tests;
