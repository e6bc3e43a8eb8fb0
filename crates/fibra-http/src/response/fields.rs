//! A handler's response fields as HTTP/2 and HTTP/3 send them: the ones that belong to one
//! HTTP/1.1 connection left out (RFC 9113 §8.2.2, RFC 9114 §4.2), and the ones the server
//! would otherwise add noted ([`Seen`]).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

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
