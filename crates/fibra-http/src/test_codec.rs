//! What the header codecs' tests share (HPACK's, QPACK's): the field they compare, fields
//! from text pairs, the bytes of an RFC's hex dump, and a small seeded PRNG for the
//! randomized tests.

/// A decoded field as the tests compare it: the name's text as classified (`<invalid>` for
/// an invalid name) and the value's bytes.
pub(crate) type Field = (String, Vec<u8>);

/// Fields from (name, value) text pairs.
pub(crate) fn fields(list: &[(&str, &str)]) -> Vec<Field> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect()
}

/// The bytes of a hex dump (whitespace ignored), as RFC 7541 and RFC 9204 print them.
pub(crate) fn hex(dump: &str) -> Vec<u8> {
    let digits: Vec<u8> = dump.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// A small seeded PRNG (xorshift64*): deterministic tests without a dependency.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; 0 is replaced).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability 1/`n`.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// `len` random bytes.
    pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// One of `items`.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
