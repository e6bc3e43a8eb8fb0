//! The codec's tests: the Huffman code (`huffman_code`). Shared here: a seeded PRNG.

mod huffman_code;

/// A small seeded PRNG (xorshift64*): deterministic tests without a dependency.
pub(super) struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; 0 is replaced).
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n` > 0).
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability 1/`n`.
    pub(super) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// `len` random bytes.
    pub(super) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}
