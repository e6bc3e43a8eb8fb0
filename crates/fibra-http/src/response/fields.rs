//! A handler's response fields as HTTP/2 and HTTP/3 send them: the ones that belong to one
//! HTTP/1.1 connection left out (RFC 9113 §8.2.2, RFC 9114 §4.2), and the ones the server
//! would otherwise add noted ([`Seen`]).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::prepared::{Encoding, PreparedRef};

/// Which of the fields the server may add a handler set.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct Seen {
    /// `content-type`.
    pub(crate) content_type: bool,
    /// `content-length`.
    pub(crate) content_length: bool,
    /// `date`.
    pub(crate) date: bool,
    /// `server`.
    pub(crate) server: bool,
}

/// Appends a response's fields to `out` in one protocol's encoding: a prepared head's
/// (never `Date`, `Server` or framing fields) as the block it keeps in `encoding`, made by
/// `encode` the first time; otherwise `headers` through `encode`. Returns the fields the
/// server would otherwise add that were there (`body_type`: whether the body names a media
/// type, which a prepared head's own `Content-Type` then replaces).
#[inline(always)]
pub(crate) fn put_fields(
    out: &mut Vec<u8>,
    prepared: Option<&PreparedRef>,
    headers: &HeaderMap,
    body_type: bool,
    encoding: Encoding,
    encode: impl Fn(&mut Vec<u8>, &HeaderMap) -> Seen,
) -> Seen {
    let Some(p) = prepared else {
        return encode(out, headers);
    };
    let head = p.head();
    out.extend_from_slice(head.encoded(encoding, |f| {
        let mut block = Vec::new();
        encode(&mut block, f);
        block
    }));
    Seen {
        content_type: body_type && head.fields().contains_key(header::CONTENT_TYPE),
        ..Seen::default()
    }
}

/// Whether a response field belongs to one HTTP/1.1 connection, not to a message: a
/// handler written for HTTP/1.1 may set it, HTTP/2 and HTTP/3 must not send it.
pub(crate) fn is_connection_specific(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "transfer-encoding" | "upgrade" | "keep-alive" | "proxy-connection"
    )
}

/// Hands each of `headers`' fields to `put` in order (the connection-specific ones left
/// out), noting the ones the server would otherwise add.
#[inline(always)]
pub(crate) fn each_field(
    headers: &HeaderMap,
    mut put: impl FnMut(&HeaderName, &HeaderValue),
) -> Seen {
    let mut seen = Seen::default();
    for (name, value) in headers {
        if *name == header::CONTENT_TYPE {
            seen.content_type = true;
        } else if *name == header::CONTENT_LENGTH {
            seen.content_length = true;
        } else if *name == header::DATE {
            seen.date = true;
        } else if *name == header::SERVER {
            seen.server = true;
        } else if is_connection_specific(name) {
            continue;
        }
        put(name, value);
    }
    seen
}
