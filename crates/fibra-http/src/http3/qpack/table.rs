//! The static table (RFC 9204 Appendix A): 99 entries, indexed from 0, built at compile time
//! with names classified and values as `HeaderValue`s, so an indexed field hands out
//! references and allocates nothing. And the reverse lookups the encoder needs: a name's
//! entries, a status code's entry.
//!
//! There is no dynamic table: we allow it no capacity.

use crate::field::StaticEntry;

/// Entries in the static table.
pub(super) const STATIC_LEN: usize = 99;

/// A static entry (shared with the other header codec: `crate::field`).
const fn entry(name: &'static str, value: &'static str) -> StaticEntry {
    StaticEntry::new(name, value)
}

/// The static table; index `i` is `STATIC[i]`.
pub(super) static STATIC: [StaticEntry; STATIC_LEN] = [
    entry(":authority", ""),
    entry(":path", "/"),
    entry("age", "0"),
    entry("content-disposition", ""),
    entry("content-length", "0"),
    entry("cookie", ""),
    entry("date", ""),
    entry("etag", ""),
    entry("if-modified-since", ""),
    entry("if-none-match", ""),
    entry("last-modified", ""),
    entry("link", ""),
    entry("location", ""),
    entry("referer", ""),
    entry("set-cookie", ""),
    entry(":method", "CONNECT"),
    entry(":method", "DELETE"),
    entry(":method", "GET"),
    entry(":method", "HEAD"),
    entry(":method", "OPTIONS"),
    entry(":method", "POST"),
    entry(":method", "PUT"),
    entry(":scheme", "http"),
    entry(":scheme", "https"),
    entry(":status", "103"),
    entry(":status", "200"),
    entry(":status", "304"),
    entry(":status", "404"),
    entry(":status", "503"),
    entry("accept", "*/*"),
    entry("accept", "application/dns-message"),
    entry("accept-encoding", "gzip, deflate, br"),
    entry("accept-ranges", "bytes"),
    entry("access-control-allow-headers", "cache-control"),
    entry("access-control-allow-headers", "content-type"),
    entry("access-control-allow-origin", "*"),
    entry("cache-control", "max-age=0"),
    entry("cache-control", "max-age=2592000"),
    entry("cache-control", "max-age=604800"),
    entry("cache-control", "no-cache"),
    entry("cache-control", "no-store"),
    entry("cache-control", "public, max-age=31536000"),
    entry("content-encoding", "br"),
    entry("content-encoding", "gzip"),
    entry("content-type", "application/dns-message"),
    entry("content-type", "application/javascript"),
    entry("content-type", "application/json"),
    entry("content-type", "application/x-www-form-urlencoded"),
    entry("content-type", "image/gif"),
    entry("content-type", "image/jpeg"),
    entry("content-type", "image/png"),
    entry("content-type", "text/css"),
    entry("content-type", "text/html; charset=utf-8"),
    entry("content-type", "text/plain"),
    entry("content-type", "text/plain;charset=utf-8"),
    entry("range", "bytes=0-"),
    entry("strict-transport-security", "max-age=31536000"),
    entry(
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    entry(
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    entry("vary", "accept-encoding"),
    entry("vary", "origin"),
    entry("x-content-type-options", "nosniff"),
    entry("x-xss-protection", "1; mode=block"),
    entry(":status", "100"),
    entry(":status", "204"),
    entry(":status", "206"),
    entry(":status", "302"),
    entry(":status", "400"),
    entry(":status", "403"),
    entry(":status", "421"),
    entry(":status", "425"),
    entry(":status", "500"),
    entry("accept-language", ""),
    entry("access-control-allow-credentials", "FALSE"),
    entry("access-control-allow-credentials", "TRUE"),
    entry("access-control-allow-headers", "*"),
    entry("access-control-allow-methods", "get"),
    entry("access-control-allow-methods", "get, post, options"),
    entry("access-control-allow-methods", "options"),
    entry("access-control-expose-headers", "content-length"),
    entry("access-control-request-headers", "content-type"),
    entry("access-control-request-method", "get"),
    entry("access-control-request-method", "post"),
    entry("alt-svc", "clear"),
    entry("authorization", ""),
    entry(
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    entry("early-data", "1"),
    entry("expect-ct", ""),
    entry("forwarded", ""),
    entry("if-range", ""),
    entry("origin", ""),
    entry("purpose", "prefetch"),
    entry("server", ""),
    entry("timing-allow-origin", "*"),
    entry("upgrade-insecure-requests", "1"),
    entry("user-agent", ""),
    entry("x-forwarded-for", ""),
    entry("x-frame-options", "deny"),
    entry("x-frame-options", "sameorigin"),
];

/// The static field at `index`, or `None` past the table.
#[inline]
pub(super) fn field(index: u64) -> Option<&'static StaticEntry> {
    STATIC.get(usize::try_from(index).ok()?)
}

/// The indices of the static entries named `name`, in table order (the first is the
/// cheapest to refer to), or `None` when the table has no such name. Written out as a
/// `match` (a decision on length, then a comparison) rather than searched; a test checks it
/// against the table.
pub(super) fn name_indices(name: &str) -> Option<&'static [u8]> {
    Some(match name {
        ":authority" => &[0],
        ":path" => &[1],
        "age" => &[2],
        "content-disposition" => &[3],
        "content-length" => &[4],
        "cookie" => &[5],
        "date" => &[6],
        "etag" => &[7],
        "if-modified-since" => &[8],
        "if-none-match" => &[9],
        "last-modified" => &[10],
        "link" => &[11],
        "location" => &[12],
        "referer" => &[13],
        "set-cookie" => &[14],
        ":method" => &[15, 16, 17, 18, 19, 20, 21],
        ":scheme" => &[22, 23],
        ":status" => &[24, 25, 26, 27, 28, 63, 64, 65, 66, 67, 68, 69, 70, 71],
        "accept" => &[29, 30],
        "accept-encoding" => &[31],
        "accept-ranges" => &[32],
        "access-control-allow-headers" => &[33, 34, 75],
        "access-control-allow-origin" => &[35],
        "cache-control" => &[36, 37, 38, 39, 40, 41],
        "content-encoding" => &[42, 43],
        "content-type" => &[44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54],
        "range" => &[55],
        "strict-transport-security" => &[56, 57, 58],
        "vary" => &[59, 60],
        "x-content-type-options" => &[61],
        "x-xss-protection" => &[62],
        "accept-language" => &[72],
        "access-control-allow-credentials" => &[73, 74],
        "access-control-allow-methods" => &[76, 77, 78],
        "access-control-expose-headers" => &[79],
        "access-control-request-headers" => &[80],
        "access-control-request-method" => &[81, 82],
        "alt-svc" => &[83],
        "authorization" => &[84],
        "content-security-policy" => &[85],
        "early-data" => &[86],
        "expect-ct" => &[87],
        "forwarded" => &[88],
        "if-range" => &[89],
        "origin" => &[90],
        "purpose" => &[91],
        "server" => &[92],
        "timing-allow-origin" => &[93],
        "upgrade-insecure-requests" => &[94],
        "user-agent" => &[95],
        "x-forwarded-for" => &[96],
        "x-frame-options" => &[97, 98],
        _ => return None,
    })
}

/// The index of the static entry `:status: status`, for the 14 codes the table has.
pub(super) fn status_index(status: u16) -> Option<u8> {
    Some(match status {
        103 => 24,
        200 => 25,
        304 => 26,
        404 => 27,
        503 => 28,
        100 => 63,
        204 => 64,
        206 => 65,
        302 => 66,
        400 => 67,
        403 => 68,
        421 => 69,
        425 => 70,
        500 => 71,
        _ => return None,
    })
}
