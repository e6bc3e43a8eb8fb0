//! A request's header block as the handler sees it: HPACK-decoded, checked and made into
//! [`http::request::Parts`] by [`crate::request_fields`]; and the connection's caches of
//! its last request block and target.

use http::header::HeaderMap;
use http::{Method, Uri, Version};

use super::hpack::{Decoder, HpackError};
pub(super) use crate::request_fields::{Decoded, LastTarget};
use crate::request_fields::{RequestFields, TrailerFields};

/// Decodes a request's header block; an HPACK error is the connection's (COMPRESSION_ERROR).
pub(super) fn decode_request(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
    last_target: &mut LastTarget,
) -> Result<Decoded, HpackError> {
    let mut head = RequestFields::default();
    decoder.decode(block, |name, value| {
        head.field(name, value, max_list, last_target)
    })?;
    Ok(head.finish(Version::HTTP_2))
}

/// Decodes a request's header block as [`decode_request`] does, or takes the request from
/// `last` when the block is byte for byte the one before it and the dynamic table has not
/// changed since (then the block decodes to the same fields: it cannot have changed the
/// table, or the table would differ). As HTTP/1.1's head cache, a block is kept the first
/// time, its request the second, and served from there on: a client repeating a request
/// (polling, a benchmark) skips the decoding and the checks.
pub(super) fn decode_request_cached(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
    last_target: &mut LastTarget,
    last: &mut LastHead,
) -> Result<Decoded, HpackError> {
    let before = decoder.table_changes();
    let same = last.changes == before && last.block == block;
    if same {
        if let Some((head, content_length)) = &last.request {
            return Ok(Decoded::Request(Box::new(head.copy()), *content_length));
        }
    }
    let decoded = decode_request(decoder, block, max_list, last_target)?;
    if decoder.table_changes() == before {
        match &decoded {
            Decoded::Request(parts, content_length) if same => {
                last.request = Some((KeptHead::of(parts), *content_length));
            }
            _ => {
                last.block.clear();
                last.block.extend_from_slice(block);
                last.changes = before;
                last.request = None;
            }
        }
    } else {
        last.block.clear();
        last.request = None;
    }
    Ok(decoded)
}

/// The connection's last request block, and its request once it came twice.
#[derive(Default)]
pub(super) struct LastHead {
    block: Vec<u8>,
    changes: u64,
    request: Option<(KeptHead, Option<u64>)>,
}

/// What a kept request is made again from.
struct KeptHead {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
}

impl KeptHead {
    fn of(parts: &http::request::Parts) -> KeptHead {
        KeptHead {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
        }
    }

    /// The request's parts, anew.
    fn copy(&self) -> http::request::Parts {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = Version::HTTP_2;
        *req.headers_mut() = self.headers.clone();
        req.into_parts().0
    }
}

/// Decodes a trailer block; `None` if it is malformed (a pseudo-header field, a bad name
/// or value) or too large.
pub(super) fn decode_trailers(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
) -> Result<Option<HeaderMap>, HpackError> {
    let mut fields = TrailerFields::default();
    decoder.decode(block, |name, value| fields.field(name, value, max_list))?;
    Ok(fields.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GET of `path` for localhost: static-table fields and `:authority` as a literal,
    /// with incremental indexing if `index`.
    fn block(path: &[u8], index: bool) -> Vec<u8> {
        let mut b = vec![0x82, 0x86, 0x04, path.len() as u8];
        b.extend_from_slice(path);
        b.extend_from_slice(&[if index { 0x41 } else { 0x01 }, 9]);
        b.extend_from_slice(b"localhost");
        b
    }

    fn target_of(d: &Decoded) -> String {
        match d {
            Decoded::Request(parts, _) => format!("{} {:?}", parts.uri, parts.headers["host"]),
            _ => "not a request".into(),
        }
    }

    #[test]
    fn a_repeated_block_is_served_from_its_third_time_while_the_table_stays() {
        let mut decoder = Decoder::new();
        let (mut target, mut last) = (LastTarget::default(), LastHead::default());
        let mut decode = |b: &[u8], decoder: &mut Decoder, last: &mut LastHead| {
            decode_request_cached(decoder, b, 16_384, &mut target, last).unwrap()
        };
        let a = block(b"/a", false);
        for round in 0..4 {
            assert_eq!(
                target_of(&decode(&a, &mut decoder, &mut last)),
                "/a \"localhost\"",
                "{round}"
            );
        }
        assert!(last.request.is_some(), "kept");
        // Another block in between: the kept one is dropped, the next /a decoded again.
        assert_eq!(
            target_of(&decode(&block(b"/b", false), &mut decoder, &mut last)),
            "/b \"localhost\""
        );
        assert!(last.request.is_none());
        // A block that inserts into the table is never kept (it changes the table each
        // time), and a table change makes the same bytes decode anew.
        let c = block(b"/c", true);
        for _ in 0..3 {
            assert_eq!(
                target_of(&decode(&c, &mut decoder, &mut last)),
                "/c \"localhost\""
            );
            assert!(last.request.is_none() && last.block.is_empty());
        }
        for _ in 0..3 {
            assert_eq!(
                target_of(&decode(&a, &mut decoder, &mut last)),
                "/a \"localhost\""
            );
        }
        assert!(last.request.is_some());
    }
}
