//! Conditional requests (RFC 9110 §13): validators, `If-*` evaluation in the §13.2.2 order,
//! and `If-Range`.
//!
//! ETags are strong and built from inode, size and mtime (like nginx's `"mtime-size"`), so
//! two different files, or one file before and after an edit, never share a tag; a precompressed
//! sibling is a different file and therefore gets its own tag automatically.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::range::trim;

/// The `If-*` request headers that matter to a file response (first value of each).
#[derive(Debug, Clone, Copy, Default)]
pub struct Conditionals<'a> {
    /// `If-Match`.
    pub if_match: Option<&'a [u8]>,
    /// `If-None-Match`.
    pub if_none_match: Option<&'a [u8]>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<&'a [u8]>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<&'a [u8]>,
    /// `If-Range`.
    pub if_range: Option<&'a [u8]>,
}

/// The outcome of evaluating preconditions against the selected representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Serve normally; `range_allowed` is false when `If-Range` did not match (send the whole).
    Proceed {
        /// Whether a `Range` header may be honoured.
        range_allowed: bool,
    },
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// Builds the strong ETag (quotes included) for a file's identity.
pub fn make_etag(ino: u64, size: u64, mtime: SystemTime) -> String {
    let d = mtime.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    format!(
        "\"{:x}-{:x}-{:x}.{:x}\"",
        ino,
        size,
        d.as_secs(),
        d.subsec_nanos()
    )
}

/// Evaluates the preconditions of a GET/HEAD request (RFC 9110 §13.2.2, steps 1-5).
/// `etag` is this representation's strong tag; `modified` its mtime (sub-seconds ignored).
pub fn evaluate(c: &Conditionals<'_>, etag: &[u8], modified: SystemTime) -> Precondition {
    let modified = whole_seconds(modified);
    // 1. If-Match; 2. otherwise If-Unmodified-Since.
    if let Some(v) = c.if_match {
        if !etag_list_matches(v, etag, true) {
            return Precondition::Failed;
        }
    } else if let Some(since) = c.if_unmodified_since.and_then(parse_date) {
        if modified > since {
            return Precondition::Failed;
        }
    }
    // 3. If-None-Match; 4. otherwise If-Modified-Since. For GET/HEAD a "false" is a 304.
    if let Some(v) = c.if_none_match {
        if etag_list_matches(v, etag, false) {
            return Precondition::NotModified;
        }
    } else if let Some(since) = c.if_modified_since.and_then(parse_date) {
        if modified <= since {
            return Precondition::NotModified;
        }
    }
    // 5. If-Range (only meaningful together with Range; the caller ignores it otherwise).
    let range_allowed = match c.if_range {
        None => true,
        Some(v) => if_range_matches(v, etag, modified),
    };
    Precondition::Proceed { range_allowed }
}

/// `If-Range` holds either one strong entity tag (weak tags never match) or an HTTP-date that
/// must equal `Last-Modified` exactly.
fn if_range_matches(value: &[u8], etag: &[u8], modified: SystemTime) -> bool {
    let v = trim(value);
    if v.starts_with(b"\"") {
        return v == etag;
    }
    if v.starts_with(b"W/") {
        return false;
    }
    parse_date(v) == Some(modified)
}

/// Does a comma-separated entity-tag list (or `*`) contain `etag`? `strong` selects the strong
/// comparison (If-Match), else the weak one (If-None-Match).
pub fn etag_list_matches(list: &[u8], etag: &[u8], strong: bool) -> bool {
    let list = trim(list);
    if list == b"*" {
        return true;
    }
    let mut rest = list;
    loop {
        rest = skip_separators(rest);
        if rest.is_empty() {
            return false;
        }
        let weak = rest.starts_with(b"W/");
        let body = if weak { &rest[2..] } else { rest };
        // An entity-tag is `"` etagc* `"`: find the closing quote.
        if !body.starts_with(b"\"") {
            return false; // malformed list: treat as no match
        }
        let Some(close) = body[1..].iter().position(|&b| b == b'"') else {
            return false;
        };
        let tag = &body[..close + 2];
        if tag == etag && !(strong && weak) {
            return true;
        }
        rest = &body[close + 2..];
    }
}

fn skip_separators(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .take_while(|&&b| b == b',' || b == b' ' || b == b'\t')
        .count();
    &s[n..]
}

fn parse_date(v: &[u8]) -> Option<SystemTime> {
    let s = std::str::from_utf8(trim(v)).ok()?;
    httpdate::parse_http_date(s).ok()
}

/// Truncates to whole seconds: HTTP dates have no sub-second part.
pub fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => UNIX_EPOCH,
    }
}

#[cfg(test)]
mod tests {
    use super::Precondition::*;
    use super::*;

    const TAG: &[u8] = b"\"abc\"";
    const LM: &str = "Wed, 21 Oct 2015 07:28:00 GMT";
    const EARLIER: &str = "Wed, 21 Oct 2015 07:27:59 GMT";
    const LATER: &str = "Wed, 21 Oct 2015 07:28:01 GMT";

    fn lm() -> SystemTime {
        httpdate::parse_http_date(LM).unwrap() + Duration::from_millis(700)
    }

    fn eval(c: Conditionals<'_>) -> Precondition {
        evaluate(&c, TAG, lm())
    }

    const OK: Precondition = Proceed {
        range_allowed: true,
    };

    #[test]
    fn etag_lists() {
        assert!(etag_list_matches(b"\"abc\"", TAG, true));
        assert!(etag_list_matches(b" \"x\" , W/\"abc\"", TAG, false));
        assert!(!etag_list_matches(b"W/\"abc\"", TAG, true));
        assert!(etag_list_matches(b"*", TAG, true));
        assert!(!etag_list_matches(b"\"abcd\"", TAG, false));
        assert!(!etag_list_matches(b"abc", TAG, false));
        assert!(!etag_list_matches(b"\"ab", TAG, false));
        assert!(etag_list_matches(b"\"a,b\", \"abc\"", TAG, false));
    }

    #[test]
    fn none_match_and_modified_since() {
        assert_eq!(eval(Conditionals::default()), OK);
        let inm = |v: &'static [u8]| Conditionals {
            if_none_match: Some(v),
            ..Default::default()
        };
        assert_eq!(eval(inm(b"\"abc\"")), NotModified);
        assert_eq!(eval(inm(b"W/\"abc\"")), NotModified);
        assert_eq!(eval(inm(b"*")), NotModified);
        assert_eq!(eval(inm(b"\"zzz\"")), OK);
        let ims = |v: &'static str| Conditionals {
            if_modified_since: Some(v.as_bytes()),
            ..Default::default()
        };
        assert_eq!(eval(ims(LM)), NotModified);
        assert_eq!(eval(ims(LATER)), NotModified);
        assert_eq!(eval(ims(EARLIER)), OK);
        assert_eq!(eval(ims("garbage")), OK);
        // If-None-Match takes precedence: a non-matching tag ignores If-Modified-Since.
        let both = Conditionals {
            if_none_match: Some(b"\"zzz\""),
            if_modified_since: Some(LM.as_bytes()),
            ..Default::default()
        };
        assert_eq!(eval(both), OK);
    }

    #[test]
    fn match_and_unmodified_since() {
        let im = |v: &'static [u8]| Conditionals {
            if_match: Some(v),
            ..Default::default()
        };
        assert_eq!(eval(im(b"\"abc\"")), OK);
        assert_eq!(eval(im(b"*")), OK);
        assert_eq!(eval(im(b"\"zzz\"")), Failed);
        assert_eq!(eval(im(b"W/\"abc\"")), Failed);
        let ius = |v: &'static str| Conditionals {
            if_unmodified_since: Some(v.as_bytes()),
            ..Default::default()
        };
        assert_eq!(eval(ius(LM)), OK);
        assert_eq!(eval(ius(EARLIER)), Failed);
        assert_eq!(eval(ius("nonsense")), OK);
        // If-Match present: If-Unmodified-Since is not looked at.
        let both = Conditionals {
            if_match: Some(b"\"abc\""),
            if_unmodified_since: Some(EARLIER.as_bytes()),
            ..Default::default()
        };
        assert_eq!(eval(both), OK);
        // 412 wins over 304 (step 1 before step 3).
        let both = Conditionals {
            if_match: Some(b"\"zzz\""),
            if_none_match: Some(b"\"abc\""),
            ..Default::default()
        };
        assert_eq!(eval(both), Failed);
    }

    #[test]
    fn if_range() {
        let ir = |v: &'static str| Conditionals {
            if_range: Some(v.as_bytes()),
            ..Default::default()
        };
        assert_eq!(eval(ir("\"abc\"")), OK);
        assert_eq!(
            eval(ir("W/\"abc\"")),
            Proceed {
                range_allowed: false
            }
        );
        assert_eq!(
            eval(ir("\"old\"")),
            Proceed {
                range_allowed: false
            }
        );
        assert_eq!(eval(ir(LM)), OK);
        assert_eq!(
            eval(ir(EARLIER)),
            Proceed {
                range_allowed: false
            }
        );
        assert_eq!(
            eval(ir(LATER)),
            Proceed {
                range_allowed: false
            }
        );
    }

    #[test]
    fn etag_changes_with_identity() {
        let t = lm();
        assert_ne!(make_etag(1, 10, t), make_etag(1, 11, t));
        assert_ne!(make_etag(1, 10, t), make_etag(2, 10, t));
        assert_ne!(
            make_etag(1, 10, t),
            make_etag(1, 10, t + Duration::from_nanos(1))
        );
        assert!(make_etag(1, 10, t).starts_with('"'));
    }
}
