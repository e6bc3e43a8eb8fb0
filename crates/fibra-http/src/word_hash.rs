//! [`WordHasher`]: a multiply-rotate hash over 8-byte words (FxHash's step), for tables whose
//! keys are fixed when they are built (a router's paths, a site file's host names) and which
//! requests only look up. A key chosen to collide then costs its one lookup, never a growing
//! table, so SipHash's flood resistance buys nothing there, while it costs several times as
//! many instructions per short key.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed with [`WordHasher`].
pub type WordMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// See the module docs.
#[derive(Default, Debug, Clone, Copy)]
pub struct WordHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl WordHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_find_what_they_hold() {
        let mut m: WordMap<Box<str>, usize> = WordMap::default();
        for (i, k) in ["a", "a.test", "exactly8", "longer than eight bytes"]
            .iter()
            .enumerate()
        {
            m.insert((*k).into(), i);
        }
        assert_eq!(m.get("exactly8"), Some(&2));
        assert_eq!(m.get("longer than eight bytes"), Some(&3));
        assert_eq!(m.get("b"), None);
    }
}
