//! The bytes a parsed request target (`http::Uri`) is built over.
//!
//! `Uri::try_from(&str)` copies the target into an allocation of its own, freed when the
//! request is done: a `malloc` and a `free` per request. Here each worker thread copies targets
//! one after the other into a buffer of its own and hands each out as a shared slice of it
//! (`BytesMut::split` + `freeze`): a reference count up and down instead. Once the targets
//! handed out are all dropped, the buffer is reused from its start without a new allocation
//! (`BytesMut::reserve` reclaims a buffer nothing else holds); while one is still held (a
//! request kept by a handler, the parser's target cache), the next buffer is a new one and
//! the old one is freed with the last target in it.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// Size of each thread's target buffer: about a hundred typical targets per allocation.
const BUFFER_BYTES: usize = 4096;

/// Targets longer than this get their own allocation, as before: a long one would use up a
/// shared buffer for little gain.
const SHARED_MAX: usize = 512;

thread_local! {
    static TARGETS: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// `target` as `Bytes`: a slice of this thread's target buffer, or (long targets, or a thread
/// being torn down) a copy of its own.
pub(crate) fn target_bytes(target: &[u8]) -> Bytes {
    if target.len() > SHARED_MAX {
        return Bytes::copy_from_slice(target);
    }
    TARGETS
        .try_with(|buf| {
            let mut buf = buf.borrow_mut();
            if buf.capacity() - buf.len() < target.len() {
                buf.reserve(BUFFER_BYTES);
            }
            buf.extend_from_slice(target);
            buf.split().freeze()
        })
        .unwrap_or_else(|_| Bytes::copy_from_slice(target))
}

#[cfg(test)]
mod tests {
    use super::{target_bytes, BUFFER_BYTES, SHARED_MAX};

    #[test]
    fn each_target_keeps_its_own_bytes_across_buffers() {
        // Enough targets to fill several buffers, some held to the end (the buffer they are
        // in cannot be reused) and the rest dropped at once (theirs can).
        let mut held = Vec::new();
        for i in 0..(BUFFER_BYTES / 8) * 4 {
            let t = format!("/p/{i}");
            let b = target_bytes(t.as_bytes());
            assert_eq!(b, t.as_bytes());
            if i % 97 == 0 {
                held.push((t, b));
            }
        }
        for (t, b) in &held {
            assert_eq!(
                b,
                t.as_bytes(),
                "a held target changed when its buffer was reused"
            );
        }
    }

    #[test]
    fn long_and_empty_targets() {
        let long = vec![b'a'; SHARED_MAX + 1];
        assert_eq!(target_bytes(&long), &long[..]);
        let limit = vec![b'b'; SHARED_MAX];
        assert_eq!(target_bytes(&limit), &limit[..]);
        assert!(target_bytes(b"").is_empty());
    }
}
