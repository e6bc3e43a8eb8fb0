//! The static table (RFC 7541 Appendix A) and the dynamic table (§2.3.2, §4).
//!
//! Static entries are built at compile time with their names classified and their values as
//! `HeaderValue`s, so an indexed static field hands out references and allocates nothing.
//! Dynamic entries are classified when they are inserted: a name as a [`Name`], a value as
//! a `HeaderValue` when it is a valid one.

use std::collections::VecDeque;

use http::HeaderValue;

use super::{Name, Value};
use crate::field::StaticEntry;

/// Entries in the static table; dynamic indices start after them.
pub(super) const STATIC_LEN: usize = 61;

/// The most a peer may set the dynamic table to: the SETTINGS_HEADER_TABLE_SIZE default,
/// which we never change.
pub(crate) const MAX_TABLE_SIZE: usize = 4096;

/// An entry's overhead in the table size (RFC 7541 §4.1).
pub(super) const ENTRY_OVERHEAD: usize = 32;

/// A static entry (shared with the other header codec: `crate::field`).
const fn entry(name: &'static str, value: &'static str) -> StaticEntry {
    StaticEntry::new(name, value)
}

/// The static table; index `i` (1-based) is `STATIC[i - 1]`.
pub(super) static STATIC: [StaticEntry; STATIC_LEN] = [
    entry(":authority", ""),
    entry(":method", "GET"),
    entry(":method", "POST"),
    entry(":path", "/"),
    entry(":path", "/index.html"),
    entry(":scheme", "http"),
    entry(":scheme", "https"),
    entry(":status", "200"),
    entry(":status", "204"),
    entry(":status", "206"),
    entry(":status", "304"),
    entry(":status", "400"),
    entry(":status", "404"),
    entry(":status", "500"),
    entry("accept-charset", ""),
    entry("accept-encoding", "gzip, deflate"),
    entry("accept-language", ""),
    entry("accept-ranges", ""),
    entry("accept", ""),
    entry("access-control-allow-origin", ""),
    entry("age", ""),
    entry("allow", ""),
    entry("authorization", ""),
    entry("cache-control", ""),
    entry("content-disposition", ""),
    entry("content-encoding", ""),
    entry("content-language", ""),
    entry("content-length", ""),
    entry("content-location", ""),
    entry("content-range", ""),
    entry("content-type", ""),
    entry("cookie", ""),
    entry("date", ""),
    entry("etag", ""),
    entry("expect", ""),
    entry("expires", ""),
    entry("from", ""),
    entry("host", ""),
    entry("if-match", ""),
    entry("if-modified-since", ""),
    entry("if-none-match", ""),
    entry("if-range", ""),
    entry("if-unmodified-since", ""),
    entry("last-modified", ""),
    entry("link", ""),
    entry("location", ""),
    entry("max-forwards", ""),
    entry("proxy-authenticate", ""),
    entry("proxy-authorization", ""),
    entry("range", ""),
    entry("referer", ""),
    entry("refresh", ""),
    entry("retry-after", ""),
    entry("server", ""),
    entry("set-cookie", ""),
    entry("strict-transport-security", ""),
    entry("transfer-encoding", ""),
    entry("user-agent", ""),
    entry("vary", ""),
    entry("via", ""),
    entry("www-authenticate", ""),
];

/// A dynamic-table entry.
#[derive(Debug)]
struct Entry {
    /// The name, classified when inserted.
    name: Name,
    /// The name's length in octets, for an entry that takes this name by index.
    name_len: usize,
    /// The value.
    value: EntryValue,
    /// Name length + value length + 32 (RFC 7541 §4.1).
    size: usize,
}

/// A dynamic-table entry's value.
#[derive(Debug)]
enum EntryValue {
    /// A valid `HeaderValue`, shared with the fields that index it.
    Header(HeaderValue),
    /// Bytes `HeaderValue` refuses (control octets): the request will be malformed.
    Raw(Box<[u8]>),
}

/// The decoder's dynamic table: a ring of entries, the newest first.
///
/// # Invariant
/// `size` is the sum of the entries' sizes and at most `max_size`, itself at most
/// [`MAX_TABLE_SIZE`].
#[derive(Debug)]
pub(super) struct Table {
    /// The entries, newest first: dynamic index 62 is `entries[0]`.
    entries: VecDeque<Entry>,
    /// The sum of the entries' sizes.
    size: usize,
    /// The size the peer last set (initially [`MAX_TABLE_SIZE`]).
    max_size: usize,
    /// Insertions and size updates so far: unchanged, the table is the same.
    changes: u64,
}

impl Table {
    /// An empty table of [`MAX_TABLE_SIZE`]. It allocates nothing until the first insertion
    /// (an entry is 96 bytes: room for the 128 that 4096 bytes can hold would cost every
    /// connection 12 KiB up front); the ring then grows by doubling, at most 6 times.
    pub(super) fn new() -> Table {
        Table {
            entries: VecDeque::new(),
            size: 0,
            max_size: MAX_TABLE_SIZE,
            changes: 0,
        }
    }

    /// How many times the table has changed (insertions, size updates).
    pub(super) fn changes(&self) -> u64 {
        self.changes
    }

    /// The field at `index` (1-based, static then dynamic), or `None` for 0 or past the end.
    #[inline]
    pub(super) fn field(&self, index: usize) -> Option<(&Name, Value<'_>)> {
        if index <= STATIC_LEN {
            let e = STATIC.get(index.wrapping_sub(1))?;
            Some((&e.name, Value::Shared(&e.value)))
        } else {
            let e = self.entries.get(index - STATIC_LEN - 1)?;
            Some((&e.name, e.value()))
        }
    }

    /// The name at `index` and its length in octets, or `None` for 0 or past the end.
    pub(super) fn name(&self, index: usize) -> Option<(&Name, usize)> {
        if index <= STATIC_LEN {
            let e = STATIC.get(index.wrapping_sub(1))?;
            Some((&e.name, e.text.len()))
        } else {
            let e = self.entries.get(index - STATIC_LEN - 1)?;
            Some((&e.name, e.name_len))
        }
    }

    /// Inserts a field (§4.4): evicts the oldest entries until it fits, and returns its
    /// entry's name and value. A field larger than the table empties it and is not
    /// inserted: then `Err` gives the name back.
    pub(super) fn insert(
        &mut self,
        name: Name,
        name_len: usize,
        value: &[u8],
    ) -> Result<(&Name, Value<'_>), Name> {
        self.changes += 1;
        let size = name_len + value.len() + ENTRY_OVERHEAD;
        if size > self.max_size {
            self.entries.clear();
            self.size = 0;
            return Err(name);
        }
        self.evict(self.max_size - size);
        let value = match HeaderValue::from_bytes(value) {
            Ok(v) => EntryValue::Header(v),
            Err(_) => EntryValue::Raw(value.into()),
        };
        // A buffer `http` copied into is made shared (an allocation) on its first clone: do
        // it now, so every clone a caller makes of a field taken from this entry is a
        // reference count.
        if let EntryValue::Header(v) = &value {
            drop(v.clone());
        }
        if let Name::Header(h) = &name {
            drop(h.clone());
        }
        self.size += size;
        self.entries.push_front(Entry {
            name,
            name_len,
            value,
            size,
        });
        let e = &self.entries[0];
        Ok((&e.name, e.value()))
    }

    /// Applies a dynamic table size update (§6.3); `max_size` is at most
    /// [`MAX_TABLE_SIZE`] (the caller checks).
    pub(super) fn set_max_size(&mut self, max_size: usize) {
        debug_assert!(max_size <= MAX_TABLE_SIZE);
        self.changes += 1;
        self.max_size = max_size;
        self.evict(max_size);
    }

    /// Evicts the oldest entries until the size is at most `target`.
    fn evict(&mut self, target: usize) {
        while self.size > target {
            match self.entries.pop_back() {
                Some(e) => self.size -= e.size,
                None => break,
            }
        }
    }

    /// The table's size as §4.1 counts it.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// The size the peer last set.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn max_size(&self) -> usize {
        self.max_size
    }

    /// The number of entries.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries' names and values, newest first (tests).
    #[cfg(test)]
    pub(super) fn entries(&self) -> impl Iterator<Item = (&Name, &[u8])> {
        self.entries.iter().map(|e| (&e.name, e.value_bytes()))
    }

    /// Panics unless the invariant holds (tests and the fuzz target).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn check(&self) {
        let sum: usize = self.entries.iter().map(|e| e.size).sum();
        assert_eq!(sum, self.size, "size is not the sum of the entries'");
        assert!(self.size <= self.max_size, "size above the maximum");
        assert!(self.max_size <= MAX_TABLE_SIZE, "maximum above the limit");
        for e in &self.entries {
            let value_len = e.value_bytes().len();
            assert_eq!(e.size, e.name_len + value_len + ENTRY_OVERHEAD);
        }
    }
}

impl Entry {
    /// The value's bytes.
    #[cfg(any(test, feature = "fuzzing"))]
    fn value_bytes(&self) -> &[u8] {
        match &self.value {
            EntryValue::Header(v) => v.as_bytes(),
            EntryValue::Raw(b) => b,
        }
    }

    /// The entry's value as handed out.
    fn value(&self) -> Value<'_> {
        match &self.value {
            EntryValue::Header(v) => Value::Shared(v),
            EntryValue::Raw(b) => Value::Raw(b),
        }
    }
}
