//! [`RenderedHead`]: a cached file's `200` field lines, rendered once and kept inside its cache
//! entry.
//!
//! A whole-file response copies these bytes into the write buffer on every request. Kept in
//! an allocation of their own, they were reached through a pointer read from the entry: on a
//! site larger than the CPU caches, a second wait for memory after the wait for the entry.
//! Kept in the entry itself, right after its reference count (which the cache hit has just
//! touched), they are on the same or the next lines of memory. Heads longer than
//! [`INLINE_BYTES`] (long `Cache-Control` values, long media types) go on the heap as before.

/// Longest head kept inside the entry. A typical file's fields (`ETag`, `Last-Modified`,
/// `Content-Type`, `Accept-Ranges`, maybe `Vary` and `Cache-Control`) take 130-220 bytes.
pub const INLINE_BYTES: usize = 230;

/// Field lines as sent on HTTP/1.1 (each ending in CRLF).
pub struct RenderedHead(Repr);

// The large variant is the point: the bytes live where the value is (see the module docs).
#[allow(clippy::large_enum_variant)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE_BYTES] },
    Heap(Box<[u8]>),
}

impl RenderedHead {
    /// Keeps `lines`: inside the value when they fit, else on the heap.
    pub fn new(lines: &[u8]) -> RenderedHead {
        match u8::try_from(lines.len()) {
            Ok(len) if lines.len() <= INLINE_BYTES => {
                let mut bytes = [0; INLINE_BYTES];
                bytes[..lines.len()].copy_from_slice(lines);
                RenderedHead(Repr::Inline { len, bytes })
            }
            _ => RenderedHead(Repr::Heap(lines.into())),
        }
    }

    /// The field lines.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }
}

impl std::fmt::Debug for RenderedHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RenderedHead")
            .field(&String::from_utf8_lossy(self.as_bytes()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{RenderedHead, INLINE_BYTES};

    #[test]
    fn keeps_the_lines_inline_or_on_the_heap() {
        for len in [
            0,
            1,
            100,
            INLINE_BYTES - 1,
            INLINE_BYTES,
            INLINE_BYTES + 1,
            1000,
        ] {
            let lines: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert_eq!(
                RenderedHead::new(&lines).as_bytes(),
                &lines[..],
                "{len} bytes"
            );
        }
    }
}
