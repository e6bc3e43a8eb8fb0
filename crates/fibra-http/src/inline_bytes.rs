//! [`InlineBytes`]: a short byte string kept where its value is (up to `N` bytes), a longer one
//! on the heap. A prepared head keeps its HTTP/1.1 lines this way
//! ([`PreparedHead`](crate::prepared::PreparedHead)), and the `fibra-files` cache its keys in
//! its slots: what a cache hit reads is then on the lines of memory it touches anyway, not
//! behind a pointer to an allocation of its own (on a site larger than the CPU caches, one
//! more wait for memory per request).

/// Up to `N` bytes (at most 255) in the value itself, more on the heap.
pub struct InlineBytes<const N: usize>(Repr<N>);

// The large variant is the point: the bytes live where the value is.
#[allow(clippy::large_enum_variant)]
enum Repr<const N: usize> {
    Inline { len: u8, bytes: [u8; N] },
    Heap(Box<[u8]>),
}

impl<const N: usize> InlineBytes<N> {
    /// Keeps `bytes`: inside the value when they fit, else on the heap.
    pub fn new(bytes: &[u8]) -> InlineBytes<N> {
        match u8::try_from(bytes.len()) {
            Ok(len) if bytes.len() <= N => {
                let mut inline = [0; N];
                inline[..bytes.len()].copy_from_slice(bytes);
                InlineBytes(Repr::Inline { len, bytes: inline })
            }
            _ => InlineBytes(Repr::Heap(bytes.into())),
        }
    }

    /// Whether the bytes are kept inside the value.
    #[cfg(test)]
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// The bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }
}

impl<const N: usize> std::fmt::Debug for InlineBytes<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::InlineBytes;

    fn round_trip<const N: usize>() {
        for len in [0, 1, N / 2, N - 1, N, N + 1, 1000] {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert_eq!(
                InlineBytes::<N>::new(&bytes).as_bytes(),
                &bytes[..],
                "{len} of {N}"
            );
        }
    }

    #[test]
    fn keeps_the_bytes_inline_or_on_the_heap() {
        round_trip::<46>();
        round_trip::<230>();
        round_trip::<255>();
    }
}
