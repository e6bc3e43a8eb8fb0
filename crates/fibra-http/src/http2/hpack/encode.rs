//! The response-side encoder: stateless. Every field is a literal that the peer does not
//! insert into its dynamic table (or the static table's index, for common statuses), so
//! there is no encoder table to keep in step with the peer's, and the SETTINGS value it
//! announces for its table never matters. Strings are not Huffman-coded: response heads
//! are small next to their bodies, and the copy is cheaper than the coding.

use http::HeaderName;

/// `:status` (indexed for 200, 204, 206, 304, 400, 404, 500; else literal without
/// indexing, name index 8).
pub(crate) fn encode_status(out: &mut Vec<u8>, status: u16) {
    let index = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if index != 0 {
        out.push(0x80 | index);
        return;
    }
    let digits = crate::digits::itoa_buf(u64::from(status));
    let digits = digits.as_slice();
    out.extend_from_slice(&[0x08, digits.len() as u8]);
    out.extend_from_slice(digits);
}

/// One field as a literal without indexing (never indexed when `sensitive`), its name by
/// static-table index when the static table has the name, else literal; no Huffman.
pub(crate) fn encode_field(out: &mut Vec<u8>, name: &HeaderName, value: &[u8], sensitive: bool) {
    let flags = if sensitive { 0x10 } else { 0x00 };
    let name = name.as_str();
    match static_name_index(name) {
        // The common case in one append: the index (15..=61 needs two bytes with a 4-bit
        // prefix) and a value length under 127.
        Some(index) if value.len() < 0x7f => {
            out.reserve(3 + value.len());
            out.extend_from_slice(&[flags | 0x0f, index - 0x0f, value.len() as u8]);
            out.extend_from_slice(value);
            return;
        }
        Some(index) => encode_int(out, flags, 4, usize::from(index)),
        None => {
            out.push(flags);
            encode_string(out, name.as_bytes());
        }
    }
    encode_string(out, value);
}

/// A string literal (§5.2), not Huffman-coded.
fn encode_string(out: &mut Vec<u8>, s: &[u8]) {
    encode_int(out, 0x00, 7, s.len());
    out.extend_from_slice(s);
}

/// An integer with a `prefix_bits`-bit prefix (§5.1), the first byte's other bits `flags`.
#[inline]
pub(super) fn encode_int(out: &mut Vec<u8>, flags: u8, prefix_bits: u32, value: usize) {
    crate::prefixed_int::put(out, flags, prefix_bits, value as u64);
}

/// The index of the static-table entry (RFC 7541 Appendix A) with this (non-pseudo) name.
pub(super) fn static_name_index(name: &str) -> Option<u8> {
    Some(match name {
        "accept-charset" => 15,
        "accept-encoding" => 16,
        "accept-language" => 17,
        "accept-ranges" => 18,
        "accept" => 19,
        "access-control-allow-origin" => 20,
        "age" => 21,
        "allow" => 22,
        "authorization" => 23,
        "cache-control" => 24,
        "content-disposition" => 25,
        "content-encoding" => 26,
        "content-language" => 27,
        "content-length" => 28,
        "content-location" => 29,
        "content-range" => 30,
        "content-type" => 31,
        "cookie" => 32,
        "date" => 33,
        "etag" => 34,
        "expect" => 35,
        "expires" => 36,
        "from" => 37,
        "host" => 38,
        "if-match" => 39,
        "if-modified-since" => 40,
        "if-none-match" => 41,
        "if-range" => 42,
        "if-unmodified-since" => 43,
        "last-modified" => 44,
        "link" => 45,
        "location" => 46,
        "max-forwards" => 47,
        "proxy-authenticate" => 48,
        "proxy-authorization" => 49,
        "range" => 50,
        "referer" => 51,
        "refresh" => 52,
        "retry-after" => 53,
        "server" => 54,
        "set-cookie" => 55,
        "strict-transport-security" => 56,
        "transfer-encoding" => 57,
        "user-agent" => 58,
        "vary" => 59,
        "via" => 60,
        "www-authenticate" => 61,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http2::hpack::table::STATIC;

    #[test]
    fn static_names_match_the_table() {
        for (i, e) in STATIC.iter().enumerate() {
            if !e.text.starts_with(':') {
                assert_eq!(static_name_index(e.text), Some(i as u8 + 1), "{}", e.text);
            }
        }
        assert_eq!(static_name_index("x-custom"), None);
        assert_eq!(static_name_index(":path"), None);
    }

    #[test]
    fn status_bytes() {
        let mut out = Vec::new();
        encode_status(&mut out, 200);
        encode_status(&mut out, 500);
        encode_status(&mut out, 302);
        encode_status(&mut out, 103);
        assert_eq!(out, b"\x88\x8e\x08\x03302\x08\x03103");
    }

    #[test]
    fn field_bytes() {
        let mut out = Vec::new();
        encode_field(&mut out, &http::header::CONTENT_TYPE, b"text/plain", false);
        assert_eq!(out, b"\x0f\x10\x0atext/plain");
        out.clear();
        encode_field(&mut out, &http::header::SET_COOKIE, b"a=b", true);
        assert_eq!(out, b"\x1f\x28\x03a=b");
        out.clear();
        let name = HeaderName::from_static("x-a");
        encode_field(&mut out, &name, b"", false);
        assert_eq!(out, b"\x00\x03x-a\x00");
        out.clear();
        // A 127-byte value: the length takes a continuation byte.
        encode_field(&mut out, &name, &[b'v'; 127], false);
        assert_eq!(&out[..8], b"\x00\x03x-a\x7f\x00v");
    }
}
