//! [`StaticPaths`]: the routes without parameters, looked up by their exact path before the
//! radix tree — one hash and one compare instead of the tree's walk and its parameter list.
//!
//! The tree would find the same route: a path equal to a static pattern matches that route
//! there too (static segments win over parameters), and every route is in the tree as well,
//! which keeps finding conflicts when routes are added. The hash is a multiply-rotate one
//! over 8-byte words (the keys are the app's own patterns, fixed when the router is built;
//! a request's path is only looked up, never inserted, so a path chosen to collide costs one
//! lookup, not a growing table).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Exact paths of the parameterless routes, to the routes' indexes.
#[derive(Debug, Clone, Default)]
pub(super) struct StaticPaths {
    map: HashMap<Box<str>, usize, BuildHasherDefault<WordHasher>>,
}

impl StaticPaths {
    /// Adds `pattern` if it has no parameter (`{`).
    pub(super) fn add(&mut self, pattern: &str, index: usize) {
        if !pattern.contains('{') {
            self.map.insert(pattern.into(), index);
        }
    }

    /// The route whose pattern is exactly `path`.
    #[inline]
    pub(super) fn get(&self, path: &str) -> Option<usize> {
        if self.map.is_empty() {
            return None;
        }
        self.map.get(path).copied()
    }
}

/// A hash over 8-byte words (FxHash's step: rotate, xor, multiply).
#[derive(Default)]
struct WordHasher(u64);

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
    use super::StaticPaths;

    #[test]
    fn exact_static_paths_only() {
        let mut s = StaticPaths::default();
        s.add("/plaintext", 0);
        s.add("/users/{id}", 1);
        s.add("/a/b/c/d/e/f/g/h/i", 2);
        assert_eq!(s.get("/plaintext"), Some(0));
        assert_eq!(s.get("/plaintext/"), None);
        assert_eq!(s.get("/users/{id}"), None);
        assert_eq!(s.get("/a/b/c/d/e/f/g/h/i"), Some(2));
        assert_eq!(s.get("/a/b/c/d/e/f/g/h/j"), None);
    }
}
