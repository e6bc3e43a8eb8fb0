//! The path routes match: percent-decoded, with dot segments refused (as the file server
//! refuses them), so `/%61dmin/x` is matched as `/admin/x` and cannot pass by a route's
//! access checks, and `/public/../admin/` is refused rather than matched as `/public/`.

use std::borrow::Cow;

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
    if !bytes.iter().any(|&b| b == b'%' || b == 0) {
        // Nothing to decode: refuse dot segments, else the path as it is (no allocation,
        // whatever dots the names hold).
        return match has_dot_segment(bytes) {
            true => Err(BadPath::DotSegment),
            false => Ok(Cow::Borrowed(raw)),
        };
    }
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
}
