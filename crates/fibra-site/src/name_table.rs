//! [`NameTable`]: byte strings fixed when a configuration is built (host names, exact route
//! paths) to an index, looked up by requests a word at a time: the key is read once, into
//! words that are hashed and then compared, with no copy, no UTF-8 check and no call to
//! `memcmp`. Host names are looked up without regard to ASCII case, in the same pass.

use crate::words::{short_word, to_lower, word_at};

/// The longest key a lookup reads; longer ones are in no table (a host name has at most 253
/// bytes, and paths that long are not routed by an exact match).
pub const MAX_KEY: usize = 256;

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct NameTable {
    /// Open addressing, a power of two long (at most half full); `None`: empty.
    slots: Box<[Option<Slot>]>,
    len: usize,
}

/// The bytes of a key read as words, hashed and compared at once; the rest of a longer key is
/// compared byte by byte.
const HEAD: usize = 16;

#[derive(Debug, Clone)]
struct Slot {
    hash: u64,
    /// The key's first [`HEAD`] bytes as words (zero-padded).
    head: [u64; HEAD / 8],
    /// The whole key, when it is longer than [`HEAD`].
    long: Option<Box<[u8]>>,
    /// The key's length in bytes.
    bytes: usize,
    value: usize,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The first [`HEAD`] bytes of `key` as words (lower-cased if asked), zero-padded, and their
/// hash with the key's length.
#[inline(always)]
fn head_of(key: &[u8], lower: bool) -> ([u64; HEAD / 8], u64) {
    let mut words = [0u64; HEAD / 8];
    let n = key.len().min(HEAD);
    let full = n / 8;
    for (i, w) in words.iter_mut().enumerate().take(full) {
        *w = word_at(key, 8 * i);
    }
    if full < HEAD / 8 {
        words[full] = short_word(&key[8 * full..n]);
    }
    let mut hash = key.len() as u64;
    for w in &mut words {
        if lower {
            *w = to_lower(*w);
        }
        hash = (hash.rotate_left(5) ^ *w).wrapping_mul(SEED);
    }
    (words, hash)
}

impl NameTable {
    /// Adds `key` (as it is: lower-case host names before adding them) with `value`; a key
    /// added again takes the new value. Keys over [`MAX_KEY`] bytes are not added.
    pub fn insert(&mut self, key: &[u8], value: usize) {
        if key.len() > MAX_KEY {
            return;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let (head, hash) = head_of(key, false);
        if let Some(i) = self.position(key, false) {
            if let Some(s) = &mut self.slots[i] {
                s.value = value;
            }
            return;
        }
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some(Slot {
            hash,
            head,
            long: (key.len() > HEAD).then(|| key.into()),
            bytes: key.len(),
            value,
        });
        self.len += 1;
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![None; (old.len() * 2).max(8)].into_boxed_slice();
        let mask = self.slots.len() - 1;
        for s in old.into_vec().into_iter().flatten() {
            let mut i = s.hash as usize & mask;
            while self.slots[i].is_some() {
                i = (i + 1) & mask;
            }
            self.slots[i] = Some(s);
        }
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `key` (its ASCII capitals taken as small ones when `lower`).
    #[inline]
    pub fn get(&self, key: &[u8], lower: bool) -> Option<usize> {
        let i = self.position(key, lower)?;
        self.slots[i].as_ref().map(|s| s.value)
    }

    #[inline(always)]
    fn position(&self, key: &[u8], lower: bool) -> Option<usize> {
        if self.len == 0 || key.len() > MAX_KEY {
            return None;
        }
        let (head, hash) = head_of(key, lower);
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = self.slots[i].as_ref()?;
            if s.hash == hash && s.bytes == key.len() && s.head == head {
                match &s.long {
                    None => return Some(i),
                    Some(long) if same_rest(&long[HEAD..], &key[HEAD..], lower) => return Some(i),
                    Some(_) => {}
                }
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
        // Longer than the words read at once: the rest is compared too.
        let long_a = format!("{}a", "x".repeat(40));
        let long_b = format!("{}b", "x".repeat(40));
        t.insert(long_a.as_bytes(), 2000);
        assert_eq!(t.get(long_a.as_bytes(), false), Some(2000));
        assert_eq!(t.get(long_a.to_uppercase().as_bytes(), true), Some(2000));
        assert_eq!(t.get(long_b.as_bytes(), false), None);
        t.insert(b"site1.test", 7);
        assert_eq!(t.get(b"site1.test", false), Some(7));
    }
}
