//! `Range: bytes=...` parsing (RFC 9110 §14.1.2, §14.2).
//!
//! Policy for several satisfiable ranges: the header is **ignored and the whole file is sent
//! with 200** (RFC 9110 §14.2 lets a server ignore `Range`). `multipart/byteranges` would defeat
//! the single `sendfile` per response, is rarely used by real clients, and its main use is
//! amplification attacks. A list whose ranges are all unsatisfiable is a 416; a list with exactly
//! one satisfiable range is served as that single range.

/// What a `Range` header asks of a representation of a given length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// No usable `Range` (absent, malformed, other unit, several ranges): send 200 and the whole.
    Full,
    /// One satisfiable range: `start..=end`, both within the file. Send 206.
    Single {
        /// First byte offset.
        start: u64,
        /// Last byte offset, inclusive.
        end: u64,
    },
    /// Nothing satisfiable: send 416 with `Content-Range: bytes */LEN`.
    Unsatisfiable,
}

/// More specs than this in one header and the header is ignored (defence against range lists
/// built to burn CPU).
const MAX_SPECS: usize = 32;

/// Parses a `Range` header value against a representation of `len` bytes.
pub fn parse_range(value: &[u8], len: u64) -> RangeRequest {
    let Some(specs) = strip_unit(value) else {
        return RangeRequest::Full;
    };
    let mut found: Option<(u64, u64)> = None;
    let mut satisfiable = 0usize;
    let mut count = 0usize;
    for spec in specs.split(|&b| b == b',') {
        let spec = trim(spec);
        if spec.is_empty() {
            continue; // the list rule allows empty elements
        }
        count += 1;
        if count > MAX_SPECS {
            return RangeRequest::Full;
        }
        match parse_spec(spec, len) {
            Spec::Invalid => return RangeRequest::Full,
            Spec::Unsatisfiable => {}
            Spec::Range(s, e) => {
                satisfiable += 1;
                found = Some((s, e));
            }
        }
    }
    match (count, satisfiable, found) {
        (0, _, _) => RangeRequest::Full,
        (_, 0, _) => RangeRequest::Unsatisfiable,
        (_, 1, Some((start, end))) => RangeRequest::Single { start, end },
        _ => RangeRequest::Full,
    }
}

enum Spec {
    Invalid,
    Unsatisfiable,
    Range(u64, u64),
}

fn parse_spec(spec: &[u8], len: u64) -> Spec {
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return Spec::Invalid;
    };
    let (first, last) = (trim(&spec[..dash]), trim(&spec[dash + 1..]));
    if first.is_empty() {
        // suffix-range: the last N bytes
        let Some(n) = parse_num(last) else {
            return Spec::Invalid;
        };
        if n == 0 || len == 0 {
            return Spec::Unsatisfiable;
        }
        return Spec::Range(len - n.min(len), len - 1);
    }
    let Some(start) = parse_num(first) else {
        return Spec::Invalid;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match parse_num(last) {
            Some(e) if e >= start => e,
            _ => return Spec::Invalid,
        }
    };
    if start >= len {
        return Spec::Unsatisfiable;
    }
    Spec::Range(start, end.min(len - 1))
}

/// `bytes=` (unit case-insensitive, optional whitespace around `=`), returning the spec list.
fn strip_unit(value: &[u8]) -> Option<&[u8]> {
    let value = trim(value);
    let eq = value.iter().position(|&b| b == b'=')?;
    if !trim(&value[..eq]).eq_ignore_ascii_case(b"bytes") {
        return None;
    }
    Some(&value[eq + 1..])
}

/// Decimal digits only; values too large for u64 saturate (they are then simply "very far").
fn parse_num(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |e| e + 1);
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::RangeRequest::*;
    use super::*;

    fn r(v: &str, len: u64) -> RangeRequest {
        parse_range(v.as_bytes(), len)
    }

    #[test]
    fn single_ranges() {
        assert_eq!(r("bytes=0-99", 1000), Single { start: 0, end: 99 });
        assert_eq!(
            r("bytes=100-", 1000),
            Single {
                start: 100,
                end: 999
            }
        );
        assert_eq!(
            r("bytes=-100", 1000),
            Single {
                start: 900,
                end: 999
            }
        );
        assert_eq!(r("bytes=-5000", 1000), Single { start: 0, end: 999 });
        assert_eq!(
            r("bytes=990-5000", 1000),
            Single {
                start: 990,
                end: 999
            }
        );
        assert_eq!(r("Bytes = 5-5", 10), Single { start: 5, end: 5 });
        assert_eq!(
            r("bytes=0-99999999999999999999999", 10),
            Single { start: 0, end: 9 }
        );
        assert_eq!(r("bytes=0-0, ,", 10), Single { start: 0, end: 0 });
        assert_eq!(r("bytes=0-1,50-60", 10), Single { start: 0, end: 1 });
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(r("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(r("bytes=1000-2000", 1000), Unsatisfiable);
        assert_eq!(r("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(r("bytes=0-", 0), Unsatisfiable);
        assert_eq!(r("bytes=-10", 0), Unsatisfiable);
        assert_eq!(r("bytes=99999999999999999999999-", 10), Unsatisfiable);
        assert_eq!(r("bytes=20-30, 40-50", 10), Unsatisfiable);
    }

    #[test]
    fn ignored_headers() {
        for v in [
            "",
            "bytes=",
            "bytes=,",
            "items=0-1",
            "bytes 0-1",
            "bytes=a-1",
            "bytes=5-1",
            "bytes=1",
            "bytes=--1",
            "bytes=0x1-2",
            "bytes=+1-2",
            "bytes=0-1,2-3",
        ] {
            assert_eq!(r(v, 100), Full, "{v:?}");
        }
        let many = format!("bytes={}", vec!["0-0"; 40].join(","));
        assert_eq!(r(&many, 100), Full);
    }
}
