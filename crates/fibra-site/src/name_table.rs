//! [`NameTable`]: byte strings fixed when a configuration is built (host names, exact route
//! paths) to an index, looked up by requests a word at a time: the key's first 16 bytes are
//! read once, into two words that are hashed and then compared, with no copy, no UTF-8 check
//! and no call to `memcmp` (a longer key's rest is compared after). Host names are looked up without regard to ASCII case, in the same pass.

use crate::words::{short_word, to_lower, word_at};

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct NameTable {
    /// Open addressing, a power of two long (at most half full).
    slots: Box<[Slot]>,
    /// Per slot, the bytes of its key after the first [`HEAD`] (empty for shorter keys).
    rest: Box<[Box<[u8]>]>,
    len: usize,
}

/// The bytes of a key read as two words, hashed and compared at once; the rest of a longer
/// key is compared byte by byte.
const HEAD: usize = 16;

/// A slot's `bytes` when it is empty.
const EMPTY: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    hash: u64,
    /// The key's first [`HEAD`] bytes as two words (zero-padded).
    head: (u64, u64),
    /// The key's length in bytes ([`EMPTY`]: no key).
    bytes: u32,
    value: u32,
}

const VACANT: Slot = Slot {
    hash: 0,
    head: (0, 0),
    bytes: EMPTY,
    value: 0,
};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The first [`HEAD`] bytes of `key` as two words (lower-cased if asked, zero-padded), and
/// their hash with the key's length.
#[inline(always)]
fn head_of(key: &[u8], lower: bool) -> ((u64, u64), u64) {
    let n = key.len();
    let (w0, w1) = if n >= HEAD {
        (word_at(key, 0), word_at(key, 8))
    } else if n > 8 {
        // The last 8 bytes, shifted down to the ones after the first word.
        (word_at(key, 0), word_at(key, n - 8) >> (8 * (HEAD - n)))
    } else if n == 8 {
        (word_at(key, 0), 0)
    } else {
        (short_word(key), 0)
    };
    let (w0, w1) = match lower {
        true => (to_lower(w0), to_lower(w1)),
        false => (w0, w1),
    };
    let hash = (n as u64 ^ w0).wrapping_mul(SEED);
    let hash = (hash.rotate_left(5) ^ w1).wrapping_mul(SEED);
    ((w0, w1), hash)
}

impl NameTable {
    /// Adds `key` (as it is: lower-case host names before adding them) with `value`; a key
    /// added again takes the new value.
    pub fn insert(&mut self, key: &[u8], value: usize) {
        let value = u32::try_from(value).expect("a table of fewer than 2^32 entries");
        if let Some(i) = self.position(key, false) {
            self.slots[i].value = value;
            return;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let (head, hash) = head_of(key, false);
        let i = self.vacant(hash);
        self.slots[i] = Slot {
            hash,
            head,
            bytes: key.len() as u32,
            value,
        };
        self.rest[i] = key.get(HEAD..).unwrap_or_default().into();
        self.len += 1;
    }

    /// The first vacant slot from `hash`'s.
    fn vacant(&self, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        while self.slots[i].bytes != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(8);
        let slots = std::mem::replace(&mut self.slots, vec![VACANT; size].into_boxed_slice());
        let rest = std::mem::replace(&mut self.rest, vec![Box::default(); size].into());
        for (s, r) in slots.iter().zip(rest.into_vec()) {
            if s.bytes != EMPTY {
                let i = self.vacant(s.hash);
                self.slots[i] = *s;
                self.rest[i] = r;
            }
        }
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `key` (its ASCII capitals taken as small ones when `lower`).
    #[inline(always)]
    pub fn get(&self, key: &[u8], lower: bool) -> Option<usize> {
        let i = self.position(key, lower)?;
        Some(self.slots[i].value as usize)
    }

    #[inline(always)]
    fn position(&self, key: &[u8], lower: bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let (head, hash) = head_of(key, lower);
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = &self.slots[i];
            if s.hash == hash && s.bytes as usize == key.len() && s.head == head {
                if key.len() <= HEAD || same_rest(&self.rest[i], &key[HEAD..], lower) {
                    return Some(i);
                }
            } else if s.bytes == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

/// Whether the bytes of a long key after its head are `stored`'s.
fn same_rest(stored: &[u8], key: &[u8], lower: bool) -> bool {
    match lower {
        true => stored.eq_ignore_ascii_case(key),
        false => stored == key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_it_holds_and_nothing_else() {
        let mut t = NameTable::default();
        assert_eq!(t.get(b"a", false), None);
        let keys: Vec<String> = (0..100).map(|i| format!("site{i}.test")).collect();
        for (i, k) in keys.iter().enumerate() {
            t.insert(k.as_bytes(), i);
        }
        t.insert(b"", 1000);
        t.insert(b"exactly8", 1001);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(t.get(k.as_bytes(), false), Some(i));
            assert_eq!(t.get(k.to_uppercase().as_bytes(), true), Some(i));
            assert_eq!(t.get(k.to_uppercase().as_bytes(), false), None);
        }
        assert_eq!(t.get(b"", false), Some(1000));
        assert_eq!(t.get(b"exactly8", false), Some(1001));
        assert_eq!(
            t.get(b"exactly8\0", false),
            None,
            "the length is part of the key"
        );
        assert_eq!(t.get(b"site1.tes", false), None);
        assert_eq!(t.get(&[b'a'; 300], false), None);
        // No length is too long to be a key.
        t.insert(&[b'a'; 300], 3000);
        assert_eq!(t.get(&[b'a'; 300], false), Some(3000));
        assert_eq!(t.get(&[b'A'; 300], true), Some(3000));
        assert_eq!(t.get(&[b'a'; 299], false), None);
        // Longer than the words read at once: the rest is compared too.
        let long_a = format!("{}a", "x".repeat(40));
        let long_b = format!("{}b", "x".repeat(40));
        t.insert(long_a.as_bytes(), 2000);
        assert_eq!(t.get(long_a.as_bytes(), false), Some(2000));
        assert_eq!(t.get(long_a.to_uppercase().as_bytes(), true), Some(2000));
        assert_eq!(t.get(long_b.as_bytes(), false), None);
        // Every length around the words' edges, differing only in the last byte.
        let mut by_len = NameTable::default();
        for n in 1..=40 {
            let key: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            by_len.insert(&key, n);
        }
        for n in 1..=40 {
            let mut key: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert_eq!(by_len.get(&key, false), Some(n), "{n}");
            key.make_ascii_uppercase();
            assert_eq!(by_len.get(&key, true), Some(n), "{n}");
            key[n - 1] = b'#';
            assert_eq!(by_len.get(&key, true), None, "{n}");
        }
        t.insert(b"site1.test", 7);
        assert_eq!(t.get(b"site1.test", false), Some(7));
    }
}
