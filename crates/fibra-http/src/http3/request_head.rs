//! A request's field section (a HEADERS frame's payload) as the handler sees it:
//! QPACK-decoded, then checked and made into [`http::request::Parts`] by
//! [`crate::request_fields`], the same rules and the same request as HTTP/2's (RFC 9114
//! §4.2–4.3 repeat RFC 9113 §8.2–8.3), with version `HTTP/3.0`.

use std::sync::Mutex;

use http::header::HeaderMap;
use http::Version;

use super::qpack::{Decoder, QpackError};
use super::H3Error;
use crate::last_head::LastHead;
pub(crate) use crate::request_fields::{Decoded, LastTarget};
use crate::request_fields::{RequestFields, TrailerFields};

/// Decodes a request's field section. `max_section` is the limit the server advertised
/// (SETTINGS_MAX_FIELD_SECTION_SIZE, counted as RFC 9114 §4.2.2 counts): a larger section is
/// [`Decoded::TooLarge`], answered 431 with the connection kept. Any other QPACK error is the
/// connection's (`Err`, QPACK_DECOMPRESSION_FAILED).
pub(crate) fn decode_request(
    decoder: &mut Decoder,
    section: &[u8],
    max_section: usize,
    last_target: &mut LastTarget,
) -> Result<Decoded, H3Error> {
    let mut head = RequestFields::default();
    let decoded = decoder.decode(section, |name, value| {
        head.field(name, value, max_section, last_target)
    });
    match decoded {
        Ok(()) => Ok(head.finish(Version::HTTP_3)),
        Err(QpackError::SectionTooLarge) => Ok(Decoded::TooLarge),
        Err(e) => Err(e.h3_error().unwrap_or(H3Error::QpackDecompressionFailed)),
    }
}

/// A connection's caches of its last request section and target, which its request
/// streams' fibers share (they run on one worker, so the lock is not contended; a fiber
/// that finds it held decodes without the caches rather than wait).
#[derive(Default)]
pub(crate) struct LastHeads {
    section: LastHead,
    target: LastTarget,
}

/// Decodes a request's field section as [`decode_request`] does, or takes the request from
/// the connection's `last` section when this one is byte for byte the same (see
/// [`LastHead`]; with no dynamic table, a section's bytes decide its request).
pub(crate) fn decode_request_cached(
    decoder: &mut Decoder,
    section: &[u8],
    max_section: usize,
    last: &Mutex<LastHeads>,
) -> Result<Decoded, H3Error> {
    let Ok(mut last) = last.try_lock() else {
        return decode_request(decoder, section, max_section, &mut LastTarget::default());
    };
    let LastHeads {
        section: head,
        target,
    } = &mut *last;
    head.decode(section, 0, || {
        decode_request(decoder, section, max_section, target).map(|d| (d, 0))
    })
}

/// Decodes a trailer section: `Ok(None)` if it is malformed (a pseudo-header field, a
/// connection-specific field, a bad value) or larger than `max_section`, which makes the
/// request malformed (RFC 9114 §4.1.2); `Err` for a QPACK error, the connection's.
pub(crate) fn decode_trailers(
    decoder: &mut Decoder,
    section: &[u8],
    max_section: usize,
) -> Result<Option<HeaderMap>, H3Error> {
    let mut fields = TrailerFields::default();
    match decoder.decode(section, |name, value| {
        fields.field(name, value, max_section)
    }) {
        Ok(()) => Ok(fields.finish()),
        Err(QpackError::SectionTooLarge) => Ok(None),
        Err(e) => Err(e.h3_error().unwrap_or(H3Error::QpackDecompressionFailed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::Pseudo;
    use crate::http3::qpack::Encoder;
    use http::header::{HeaderName, HOST};
    use http::Method;

    /// A request section: the pseudo-header fields, then `fields`.
    fn section(pseudo: &[(Pseudo, &str)], fields: &[(&str, &str)]) -> Vec<u8> {
        let e = Encoder::with_huffman();
        let mut out = Vec::new();
        e.prefix(&mut out);
        for (p, v) in pseudo {
            e.pseudo(&mut out, *p, v.as_bytes());
        }
        for (n, v) in fields {
            let name = HeaderName::from_bytes(n.as_bytes()).unwrap();
            e.field(&mut out, &name, v.as_bytes(), false);
        }
        out
    }

    const GET: &[(Pseudo, &str)] = &[
        (Pseudo::Method, "GET"),
        (Pseudo::Scheme, "https"),
        (Pseudo::Authority, "example.com:8443"),
        (Pseudo::Path, "/a/b?c=d"),
    ];

    fn decode(section: &[u8], max: usize) -> Result<Decoded, H3Error> {
        decode_request(
            &mut Decoder::new(u64::MAX),
            section,
            max,
            &mut LastTarget::default(),
        )
    }

    #[test]
    fn a_request_is_in_origin_form_with_authority_as_host_and_version_3() {
        let s = section(GET, &[("accept", "*/*"), ("content-length", "5")]);
        let Ok(Decoded::Request(parts, len)) = decode(&s, 16_384) else {
            panic!("not a request");
        };
        assert_eq!(parts.method, Method::GET);
        assert_eq!(parts.uri, "/a/b?c=d");
        assert_eq!(parts.version, Version::HTTP_3);
        assert_eq!(parts.headers[HOST], "example.com:8443");
        assert_eq!(parts.headers["accept"], "*/*");
        assert_eq!(len, Some(5));
    }

    #[test]
    fn malformed_requests_are_refused_as_such() {
        let no_scheme = &[(Pseudo::Method, "GET"), (Pseudo::Path, "/")];
        let cases = [
            section(no_scheme, &[]),
            section(GET, &[("connection", "close")]),
            section(GET, &[("te", "gzip")]),
            section(GET, &[("host", "other.example")]),
            section(GET, &[("content-length", "x")]),
            section(&[(Pseudo::Method, "GET"), (Pseudo::Status, "200")], &[]),
            section(&[(Pseudo::Method, "GET"), (Pseudo::Path, "relative")], &[]),
        ];
        for (i, s) in cases.iter().enumerate() {
            assert!(
                matches!(decode(s, 16_384), Ok(Decoded::Malformed)),
                "case {i}"
            );
        }
        // A pseudo-header field after a regular one.
        let mut late = section(GET, &[("accept", "*/*")]);
        Encoder::new().pseudo(&mut late, Pseudo::Path, b"/again");
        assert!(matches!(decode(&late, 16_384), Ok(Decoded::Malformed)));
    }

    #[test]
    fn a_section_over_the_limit_is_too_large_and_the_decoder_goes_on() {
        let long = "x".repeat(1_000);
        let s = section(GET, &[("cookie", &long)]);
        assert!(matches!(decode(&s, 512), Ok(Decoded::TooLarge)));
        // The limit the decoder itself was made with gives the same answer.
        let mut small = Decoder::new(512);
        let mut last = LastTarget::default();
        let r = decode_request(&mut small, &s, usize::MAX, &mut last);
        assert!(matches!(r, Ok(Decoded::TooLarge)));
        let fine = section(GET, &[]);
        let r = decode_request(&mut small, &fine, usize::MAX, &mut last);
        assert!(matches!(r, Ok(Decoded::Request(..))));
    }

    #[test]
    fn a_dynamic_table_reference_is_the_connections_error() {
        // Indexed field line, T = 0 (dynamic), index 0.
        assert_eq!(
            decode(&[0x00, 0x00, 0x80], 16_384).err(),
            Some(H3Error::QpackDecompressionFailed)
        );
        // A Required Insert Count above 0.
        assert_eq!(
            decode(&[0x02, 0x00, 0xd1], 16_384).err(),
            Some(H3Error::QpackDecompressionFailed)
        );
    }

    #[test]
    fn trailers_take_regular_fields_only() {
        let mut d = Decoder::new(u64::MAX);
        let ok = section(&[], &[("grpc-status", "0")]);
        let map = decode_trailers(&mut d, &ok, 16_384).unwrap().unwrap();
        assert_eq!(map["grpc-status"], "0");
        let pseudo = section(&[(Pseudo::Path, "/")], &[]);
        assert_eq!(decode_trailers(&mut d, &pseudo, 16_384), Ok(None));
        let conn = section(&[], &[("connection", "close")]);
        assert_eq!(decode_trailers(&mut d, &conn, 16_384), Ok(None));
        assert_eq!(decode_trailers(&mut d, &ok, 8), Ok(None));
    }
}
