//! A request's header block as the handler sees it: HPACK-decoded, checked and made into
//! [`http::request::Parts`] by [`crate::request_fields`], through the connection's caches of
//! its last request block ([`LastHead`]) and target.

use http::header::HeaderMap;
use http::Version;

use super::hpack::{Decoder, HpackError};
pub(super) use crate::last_head::LastHead;
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
/// changed since (see [`LastHead`]).
pub(super) fn decode_request_cached(
    decoder: &mut Decoder,
    block: &[u8],
    max_list: usize,
    last_target: &mut LastTarget,
    last: &mut LastHead,
) -> Result<Decoded, HpackError> {
    let before = decoder.table_changes();
    last.decode(block, before, || {
        let decoded = decode_request(decoder, block, max_list, last_target)?;
        Ok((decoded, decoder.table_changes()))
    })
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
        assert!(last.holds_request(), "kept");
        // Another block in between: the kept one is dropped, the next /a decoded again.
        assert_eq!(
            target_of(&decode(&block(b"/b", false), &mut decoder, &mut last)),
            "/b \"localhost\""
        );
        assert!(!last.holds_request());
        // A block that inserts into the table is never kept (it changes the table each
        // time), and a table change makes the same bytes decode anew.
        let c = block(b"/c", true);
        for _ in 0..3 {
            assert_eq!(
                target_of(&decode(&c, &mut decoder, &mut last)),
                "/c \"localhost\""
            );
            assert!(!last.holds_request() && !last.holds_block());
        }
        for _ in 0..3 {
            assert_eq!(
                target_of(&decode(&a, &mut decoder, &mut last)),
                "/a \"localhost\""
            );
        }
        assert!(last.holds_request());
    }
}
