//! The path routes match: percent-decoded, with dot segments refused (as the file server
//! refuses them), so `/%61dmin/x` is matched as `/admin/x` and cannot pass by a route's
//! access checks, and `/public/../admin/` is refused rather than matched as `/public/`.

use std::borrow::Cow;

use crate::words::{bytes_equal, short_word, word_at};

/// Why a path cannot be routed (answered 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadPath {
    /// A `%` not followed by two hex digits.
    Encoding,
    /// A `.` or `..` segment (also spelled `%2e`), or a NUL byte.
    DotSegment,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

/// The decoded path of `raw` (the request target's path). Borrowed when nothing needs
/// decoding and nothing is refused: the common case costs one scan of the bytes.
pub fn normalize(raw: &str) -> Result<Cow<'_, str>, BadPath> {
    let bytes = raw.as_bytes();
    // One pass, a word at a time: a `%` means decoding (below); a `.` right after a separator
    // may start a dot segment (then checked); anything else is the path as it is, not copied.
    // (NUL cannot be here: `Uri` refuses control bytes. Decoding looks for an encoded one.)
    let mut suspect = false;
    let mut at = 0;
    while at + 8 <= bytes.len() {
        suspect |= scan(bytes, at, word_at(bytes, at));
        at += 8;
    }
    if at < bytes.len() {
        suspect |= match at {
            // The zero padding is neither `%` nor `.`.
            0 => scan(bytes, 0, short_word(bytes)),
            // The last 8 bytes, some of them seen already (no harm in a second look).
            _ => scan(bytes, bytes.len() - 8, word_at(bytes, bytes.len() - 8)),
        };
    }
    match suspect {
        false => Ok(Cow::Borrowed(raw)),
        true if bytes.contains(&b'%') => decode(raw),
        true if has_dot_segment(bytes) => Err(BadPath::DotSegment),
        true => Ok(Cow::Borrowed(raw)),
    }
}

/// Whether the word `w` of `bytes` at `at` has a `%`, or a `.` right after a separator (or at
/// the start).
#[inline(always)]
fn scan(bytes: &[u8], at: usize, w: u64) -> bool {
    let percent = bytes_equal(w, b'%');
    let mut dots = bytes_equal(w, b'.');
    if percent | dots == 0 {
        return false;
    }
    if percent != 0 {
        return true;
    }
    // Names with a dot are common, dot segments are not: the byte before each dot.
    while dots != 0 {
        let i = at + (dots.trailing_zeros() / 8) as usize;
        if i == 0 || matches!(bytes[i - 1], b'/' | b'\\') {
            return true;
        }
        dots &= dots - 1;
    }
    false
}

/// [`normalize`] for a path with something to decode.
fn decode(raw: &str) -> Result<Cow<'_, str>, BadPath> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            match (
                bytes.get(i + 1).and_then(|&c| hex(c)),
                bytes.get(i + 2).and_then(|&c| hex(c)),
            ) {
                (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                _ => return Err(BadPath::Encoding),
            }
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    if out.contains(&0) {
        return Err(BadPath::DotSegment);
    }
    if has_dot_segment(&out) {
        return Err(BadPath::DotSegment);
    }
    match String::from_utf8(out) {
        Ok(s) if s == raw => Ok(Cow::Borrowed(raw)),
        Ok(s) => Ok(Cow::Owned(s)),
        Err(_) => Err(BadPath::NotUtf8),
    }
}

/// Whether a segment between `/` (or `\\`, which some back ends take as a separator) is `.`
/// or `..`.
fn has_dot_segment(path: &[u8]) -> bool {
    path.split(|&b| b == b'/' || b == b'\\')
        .any(|seg| seg == b"." || seg == b"..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_are_borrowed() {
        assert!(matches!(
            normalize("/a/b.html"),
            Ok(Cow::Borrowed("/a/b.html"))
        ));
        assert!(matches!(normalize("/"), Ok(Cow::Borrowed("/"))));
    }

    #[test]
    fn encoded_paths_are_decoded() {
        assert_eq!(normalize("/%61dmin/x").unwrap(), "/admin/x");
        assert_eq!(normalize("/a%20b").unwrap(), "/a b");
        assert_eq!(normalize("/caf%C3%A9").unwrap(), "/café");
    }

    #[test]
    fn dot_segments_and_bad_encodings_are_refused() {
        for p in [
            "/a/../b",
            "/..",
            "/a/.",
            "/%2e%2e/x",
            "/a/%2E/b",
            "/x\\..\\y",
            "/a%00b",
        ] {
            assert_eq!(normalize(p), Err(BadPath::DotSegment), "{p}");
        }
        assert_eq!(normalize("/a%2"), Err(BadPath::Encoding));
        assert_eq!(normalize("/a%zz"), Err(BadPath::Encoding));
        assert_eq!(normalize("/a%ff"), Err(BadPath::NotUtf8));
        // Dots inside names are fine, and need no copy.
        assert!(matches!(
            normalize("/a.b/..c/.d"),
            Ok(Cow::Borrowed("/a.b/..c/.d"))
        ));
    }

    /// The word-at-a-time scan answers as a byte-by-byte reading of the rules would.
    #[test]
    fn the_scan_agrees_with_the_rules_on_every_short_path() {
        fn reference(raw: &str) -> Result<Cow<'_, str>, BadPath> {
            if raw.bytes().any(|b| b == b'%' || b == 0) {
                decode(raw)
            } else if has_dot_segment(raw.as_bytes()) {
                Err(BadPath::DotSegment)
            } else {
                Ok(Cow::Borrowed(raw))
            }
        }
        let alphabet = ["a", "/", "\\", ".", "%", "2", "e"];
        // Every path of up to 5 of these, and each in front of a word of padding, so that
        // every byte is seen in every position of a word and across words.
        let mut level = vec![String::new()];
        let mut paths = level.clone();
        for _ in 0..5 {
            level = level
                .iter()
                .flat_map(|p| alphabet.iter().map(move |a| format!("{p}{a}")))
                .collect();
            paths.extend(level.iter().cloned());
        }
        for p in &paths {
            for pad in ["", "/abcdef", "/abcdefg", "/abcdefgh/x"] {
                let raw = format!("{pad}{p}");
                assert_eq!(normalize(&raw), reference(&raw), "{raw:?}");
            }
        }
    }

    /// The scan leaves NUL to `Uri`, which refuses it (and every control byte) in a path.
    #[test]
    fn a_uri_path_never_holds_nul() {
        assert!("/a\0b".parse::<fibra_http::http::Uri>().is_err());
        assert!("/a\x01b".parse::<fibra_http::http::Uri>().is_err());
    }
}
