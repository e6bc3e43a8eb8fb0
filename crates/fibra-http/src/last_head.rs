//! A connection's cache of its last request head, for HTTP/2 and HTTP/3: a client repeating
//! a request (polling, a benchmark) skips the decoding and the checks. As HTTP/1.1's head
//! cache, a block is kept the first time it comes, its request the second, and the request is
//! served from there on while the same bytes keep coming.
//!
//! A block's bytes decide its request only while the decoder's dynamic table is as it was:
//! the caller says how many changes the table has seen before and after each decoding
//! (HPACK's count; QPACK without a dynamic table, always 0).

use http::header::HeaderMap;
use http::{Method, Uri, Version};

use crate::request_fields::Decoded;

/// The connection's last request block, and its request once it came twice.
#[derive(Default)]
pub(crate) struct LastHead {
    block: Vec<u8>,
    changes: u64,
    request: Option<(KeptHead, Option<u64>)>,
}

/// What a kept request is made again from.
struct KeptHead {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
}

impl LastHead {
    /// `block`'s request: the kept one when `block` is byte for byte the last block and the
    /// table has not changed since (`changes` is its count of changes now), else what
    /// `decode` makes of it (the request, and the table's count of changes after decoding).
    /// Then keeps what the next call may reuse. A block that changed the table is not
    /// kept: the same bytes would decode differently against the new table.
    pub(crate) fn decode<E>(
        &mut self,
        block: &[u8],
        changes: u64,
        decode: impl FnOnce() -> Result<(Decoded, u64), E>,
    ) -> Result<Decoded, E> {
        let same = self.changes == changes && self.block == block;
        if same {
            if let Some((head, content_length)) = &self.request {
                return Ok(Decoded::Request(Box::new(head.copy()), *content_length));
            }
        }
        let (decoded, after) = decode()?;
        if after == changes {
            match &decoded {
                Decoded::Request(parts, content_length) if same => {
                    self.request = Some((KeptHead::of(parts), *content_length));
                }
                _ => {
                    self.block.clear();
                    self.block.extend_from_slice(block);
                    self.changes = changes;
                    self.request = None;
                }
            }
        } else {
            self.block.clear();
            self.request = None;
        }
        Ok(decoded)
    }

    /// Whether a request is kept (its block came twice).
    #[cfg(test)]
    pub(crate) fn holds_request(&self) -> bool {
        self.request.is_some()
    }

    /// Whether a block is kept.
    #[cfg(test)]
    pub(crate) fn holds_block(&self) -> bool {
        !self.block.is_empty()
    }
}

impl KeptHead {
    fn of(parts: &http::request::Parts) -> KeptHead {
        KeptHead {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            version: parts.version,
            headers: parts.headers.clone(),
        }
    }

    /// The request's parts, anew.
    fn copy(&self) -> http::request::Parts {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        req.into_parts().0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str) -> Decoded {
        let (parts, ()) = http::Request::get(path)
            .version(Version::HTTP_3)
            .body(())
            .unwrap()
            .into_parts();
        Decoded::Request(Box::new(parts), None)
    }

    fn path(d: &Decoded) -> String {
        match d {
            Decoded::Request(parts, _) => format!("{} {:?}", parts.uri, parts.version),
            _ => "not a request".into(),
        }
    }

    /// Decodes `block` through `last`, counting the decoder's calls in `calls`.
    fn through(last: &mut LastHead, block: &[u8], changes: u64, calls: &mut u32) -> String {
        let d = last
            .decode(block, changes, || {
                *calls += 1;
                Ok::<_, ()>((request(std::str::from_utf8(block).unwrap()), changes))
            })
            .unwrap();
        path(&d)
    }

    #[test]
    fn the_third_identical_block_is_not_decoded_and_keeps_its_version() {
        let mut last = LastHead::default();
        let mut calls = 0;
        for _ in 0..5 {
            assert_eq!(through(&mut last, b"/a", 0, &mut calls), "/a HTTP/3.0");
        }
        assert_eq!(calls, 2);
        // Another block is decoded, and so is the first one again.
        assert_eq!(through(&mut last, b"/b", 0, &mut calls), "/b HTTP/3.0");
        assert_eq!(through(&mut last, b"/a", 0, &mut calls), "/a HTTP/3.0");
        assert_eq!(calls, 4);
    }

    #[test]
    fn a_changed_table_is_decoded_again() {
        let mut last = LastHead::default();
        let mut calls = 0;
        through(&mut last, b"/a", 0, &mut calls);
        through(&mut last, b"/a", 0, &mut calls);
        through(&mut last, b"/a", 1, &mut calls);
        assert_eq!(calls, 3);
    }

    #[test]
    fn a_block_that_changes_the_table_is_not_kept() {
        let mut last = LastHead::default();
        let mut calls = 0;
        for _ in 0..3 {
            last.decode(b"/a", 0, || {
                calls += 1;
                Ok::<_, ()>((request("/a"), 1))
            })
            .unwrap();
        }
        assert_eq!(calls, 3);
    }

    #[test]
    fn an_error_keeps_nothing_and_is_returned() {
        let mut last = LastHead::default();
        assert_eq!(
            last.decode(b"/a", 0, || Err::<(Decoded, u64), _>(7)).err(),
            Some(7)
        );
        let mut calls = 0;
        through(&mut last, b"/a", 0, &mut calls);
        through(&mut last, b"/a", 0, &mut calls);
        assert_eq!(calls, 2);
    }
}
