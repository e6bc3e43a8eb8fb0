//! A field line as the header codecs hand it out (HPACK for HTTP/2, QPACK for HTTP/3): the
//! name classified once ([`Name`]), the value shared from a table entry or the literal's
//! bytes ([`Value`]).
//!
//! A static-table name is classified at compile time ([`classify_static`]), a dynamic-table
//! name when its entry is inserted, a literal name as it is decoded ([`classify`]), so the
//! request-head code that consumes fields matches on an enum instead of comparing bytes.

use http::{HeaderName, HeaderValue};

/// A field's name, classified once (for table entries: when they are inserted, so a name
/// taken from a dynamic table is never re-parsed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name {
    /// A name starting with `:`.
    Pseudo(Pseudo),
    /// A valid, lower-case field name.
    Header(HeaderName),
    /// Anything else: empty, upper case, or bytes a field name cannot have. Not a
    /// compression error: the request it is in is malformed (a stream error for the caller).
    Invalid,
}

/// The pseudo-header fields of HTTP/2 and HTTP/3 (RFC 9113 §8.3, RFC 9114 §4.3) and RFC
/// 8441's `:protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pseudo {
    /// `:method`
    Method,
    /// `:scheme`
    Scheme,
    /// `:authority`
    Authority,
    /// `:path`
    Path,
    /// `:status`
    Status,
    /// `:protocol` (extended CONNECT)
    Protocol,
    /// Any other name starting with `:`.
    Unknown,
}

impl Pseudo {
    /// The field name, colon included (`None` for [`Pseudo::Unknown`], which stands for
    /// many names).
    // Used by the HTTP/3 encoder's request side (so far by tests only).
    #[allow(dead_code)]
    pub(crate) fn as_str(self) -> Option<&'static str> {
        Some(match self {
            Pseudo::Method => ":method",
            Pseudo::Scheme => ":scheme",
            Pseudo::Authority => ":authority",
            Pseudo::Path => ":path",
            Pseudo::Status => ":status",
            Pseudo::Protocol => ":protocol",
            Pseudo::Unknown => return None,
        })
    }
}

/// A field's value: shared from a table entry (a cheap clone, no allocation) or the
/// literal's bytes (in the encoded block, or in the decoder's buffer when Huffman-coded),
/// valid during the callback.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    /// A table entry's value.
    Shared(&'a HeaderValue),
    /// A literal's bytes, or a dynamic-table value `HeaderValue` refused (control bytes).
    Raw(&'a [u8]),
}

impl Value<'_> {
    /// The value's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Value::Shared(v) => v.as_bytes(),
            Value::Raw(b) => b,
        }
    }
}

/// Classifies a name's bytes (see [`Name`]).
pub(crate) fn classify(name: &[u8]) -> Name {
    match name {
        [b':', rest @ ..] => Name::Pseudo(match rest {
            b"method" => Pseudo::Method,
            b"scheme" => Pseudo::Scheme,
            b"authority" => Pseudo::Authority,
            b"path" => Pseudo::Path,
            b"status" => Pseudo::Status,
            b"protocol" => Pseudo::Protocol,
            _ => Pseudo::Unknown,
        }),
        // `from_lowercase` refuses upper case (HTTP/2 and HTTP/3 forbid it) where
        // `from_bytes` would lower it.
        _ => HeaderName::from_lowercase(name).map_or(Name::Invalid, Name::Header),
    }
}

/// Classifies a static-table name at compile time, as [`classify`] does at run time. Panics
/// (at compile time, in a `static`) for a name that is not a valid lower-case field name or
/// a known pseudo-header: a static table has neither.
pub(crate) const fn classify_static(name: &'static str) -> Name {
    let b = name.as_bytes();
    if b[0] != b':' {
        return Name::Header(HeaderName::from_static(name));
    }
    const PSEUDO: [(&str, Pseudo); 6] = [
        (":method", Pseudo::Method),
        (":scheme", Pseudo::Scheme),
        (":authority", Pseudo::Authority),
        (":path", Pseudo::Path),
        (":status", Pseudo::Status),
        (":protocol", Pseudo::Protocol),
    ];
    let mut i = 0;
    while i < PSEUDO.len() {
        if bytes_eq(b, PSEUDO[i].0.as_bytes()) {
            return Name::Pseudo(PSEUDO[i].1);
        }
        i += 1;
    }
    panic!("not a pseudo-header field a static table has")
}

/// `a == b`, in a `const fn`.
const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A static-table entry (HPACK's, RFC 7541 Appendix A, or QPACK's, RFC 9204 Appendix A): the
/// name as the RFC writes it and classified at compile time, and the value.
pub(crate) struct StaticEntry {
    /// The name as the RFC writes it.
    pub(crate) text: &'static str,
    /// The name, classified.
    pub(crate) name: Name,
    /// The value.
    pub(crate) value: HeaderValue,
}

impl StaticEntry {
    /// The entry `name: value`, `name` classified at compile time.
    pub(crate) const fn new(name: &'static str, value: &'static str) -> StaticEntry {
        StaticEntry {
            text: name,
            name: classify_static(name),
            value: HeaderValue::from_static(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_run_time_classification_agree() {
        for name in [
            ":method",
            ":scheme",
            ":authority",
            ":path",
            ":status",
            ":protocol",
            "content-type",
            "x-forwarded-for",
        ] {
            assert_eq!(classify_static(name), classify(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn pseudo_names_round_trip() {
        for p in [
            Pseudo::Method,
            Pseudo::Scheme,
            Pseudo::Authority,
            Pseudo::Path,
            Pseudo::Status,
            Pseudo::Protocol,
        ] {
            let text = p.as_str().unwrap();
            assert_eq!(classify(text.as_bytes()), Name::Pseudo(p));
        }
        assert_eq!(Pseudo::Unknown.as_str(), None);
        assert_eq!(classify(b":bogus"), Name::Pseudo(Pseudo::Unknown));
        assert_eq!(classify(b"Upper"), Name::Invalid);
        assert_eq!(classify(b""), Name::Invalid);
    }
}
