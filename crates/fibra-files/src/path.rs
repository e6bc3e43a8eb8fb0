//! Request target -> relative filesystem path, with percent-decoding and no way out of the root.
//!
//! The rules are deliberately strict, because every byte that reaches the filesystem came from a
//! stranger. A request path is split on `/` *before* decoding, and each decoded segment is then
//! checked on its own, so an encoded slash (`%2f`) can never create a new segment:
//!
//! | input                                       | outcome        |
//! |---------------------------------------------|----------------|
//! | bad `%` escape, not starting with `/`       | 400            |
//! | `..` / `%2e%2e` segment                     | 400            |
//! | decoded `/`, `\` or NUL inside a segment    | 400            |
//! | segment starting with `.` (hidden)          | 404 unless allowed |
//! | empty segments (`//`) and `.`               | skipped        |
//!
//! Symlinks are handled later, when the path meets the filesystem (see `cache.rs`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Why a request path was refused before touching the filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// Malformed or hostile path: answer 400.
    BadRequest,
    /// Hidden file or outside the mount prefix: answer 404.
    NotFound,
}

/// A request path that is safe to join onto the served root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafePath {
    /// Decoded segments, none empty, none `.`/`..`, none containing `/`, `\` or NUL.
    pub segments: Vec<Vec<u8>>,
    /// The request path ended in `/` (directory form).
    pub trailing_slash: bool,
}

impl SafePath {
    /// The segments joined as a relative filesystem path (empty for the root itself).
    pub fn rel_path(&self) -> PathBuf {
        let mut p = PathBuf::new();
        for s in &self.segments {
            p.push(OsStr::from_bytes(s));
        }
        p
    }

    /// The canonical URL path under `prefix` (which must not end in `/`), percent-encoded,
    /// with a trailing `/` when `dir` is true. Never starts with `//`, so a redirect to it can
    /// not be read as a protocol-relative URL pointing at another host.
    pub fn url_path(&self, prefix: &str, dir: bool) -> String {
        let mut out = String::with_capacity(prefix.len() + 16);
        out.push_str(prefix);
        for s in &self.segments {
            out.push('/');
            percent_encode_segment(s, &mut out);
        }
        if dir || self.segments.is_empty() {
            out.push('/');
        }
        out
    }
}

/// Splits the query and fragment off a request target: returns `(path, query)`.
pub fn split_target(target: &str) -> (&str, Option<&str>) {
    let end = target.find('#').unwrap_or(target.len());
    let target = &target[..end];
    match target.find('?') {
        Some(q) => (&target[..q], Some(&target[q + 1..])),
        None => (target, None),
    }
}

/// Strips a mount prefix (like `/static`, no trailing slash; empty for the root) off a raw
/// request path. `None` when the path is not under the prefix. `"/static"` itself yields `""`,
/// which `resolve` turns into the root without a trailing slash (so it redirects).
pub fn strip_prefix<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    if rest.is_empty() || rest.starts_with('/') {
        Some(rest)
    } else {
        None
    }
}

/// Resolves the raw (still percent-encoded) path part of a request target, relative to the
/// mount point, into safe segments. `rest` is what `strip_prefix` returned: `""` or `/...`.
pub fn resolve(rest: &str, allow_hidden: bool) -> Result<SafePath, PathError> {
    if rest.is_empty() {
        return Ok(SafePath {
            segments: Vec::new(),
            trailing_slash: false,
        });
    }
    let Some(body) = rest.strip_prefix('/') else {
        return Err(PathError::BadRequest);
    };
    let trailing_slash = body.is_empty() || body.ends_with('/');
    let mut segments = Vec::new();
    let mut hidden = false;
    for raw in body.split('/') {
        if raw.is_empty() {
            continue;
        }
        let seg = percent_decode(raw.as_bytes()).ok_or(PathError::BadRequest)?;
        if seg.iter().any(|&b| b == b'/' || b == b'\\' || b == 0) {
            return Err(PathError::BadRequest);
        }
        match seg.as_slice() {
            b"." => continue,
            b".." => return Err(PathError::BadRequest),
            _ => {}
        }
        if seg[0] == b'.' {
            hidden = true;
        }
        segments.push(seg);
        if segments.len() > 64 {
            return Err(PathError::BadRequest);
        }
    }
    // Checked after the loop so that a `..` later in the path is still a 400, not a 404.
    if hidden && !allow_hidden {
        return Err(PathError::NotFound);
    }
    Ok(SafePath {
        segments,
        trailing_slash,
    })
}

/// Decodes `%XX` escapes. `None` on a truncated or non-hex escape. `+` stays `+` (that rule
/// belongs to query strings, not paths).
pub fn percent_decode(input: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == b'%' {
            let hi = hex_val(*input.get(i + 1)?)?;
            let lo = hex_val(*input.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(out)
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes one path segment: unreserved characters and a few safe sub-delims stay,
/// everything else (including `/`, `?`, `#`, `%`, spaces, quotes, non-ASCII) is escaped.
pub fn percent_encode_segment(seg: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in seg {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'(' | b')' | b'*' | b'+'
            )
            || matches!(b, b',' | b';' | b'=' | b':' | b'@');
        if keep {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(p: &str) -> Vec<String> {
        resolve(p, false)
            .unwrap()
            .segments
            .into_iter()
            .map(|s| String::from_utf8(s).unwrap())
            .collect()
    }

    #[test]
    fn plain_and_encoded_paths() {
        assert_eq!(segs("/a/b.txt"), ["a", "b.txt"]);
        assert_eq!(segs("/a%20b/c%2Bd+e"), ["a b", "c+d+e"]);
        assert_eq!(segs("//a///b/./c"), ["a", "b", "c"]);
        assert_eq!(segs("/caf%C3%A9"), ["café"]);
        assert!(resolve("/", false).unwrap().trailing_slash);
        assert!(resolve("/a/", false).unwrap().trailing_slash);
        assert!(!resolve("/a", false).unwrap().trailing_slash);
        assert!(!resolve("", false).unwrap().trailing_slash);
    }

    #[test]
    fn traversal_is_refused() {
        let bad = [
            "/..",
            "/../etc/passwd",
            "/a/../../b",
            "/%2e%2e/x",
            "/%2E%2e/x",
            "/.%2e/x",
            "/a%2f..%2f..%2fetc",
            "/a%2Fb",
            "/a%5c..%5cb",
            "/a\\..\\b",
            "/a%00b",
            "/a%",
            "/a%2",
            "/a%zz",
            "relative",
            "/a/..",
        ];
        for p in bad {
            assert_eq!(resolve(p, true), Err(PathError::BadRequest), "{p}");
            assert_eq!(resolve(p, false), Err(PathError::BadRequest), "{p}");
        }
    }

    #[test]
    fn hidden_files() {
        assert_eq!(resolve("/.git/config", false), Err(PathError::NotFound));
        assert_eq!(resolve("/a/.env", false), Err(PathError::NotFound));
        assert_eq!(resolve("/%2eenv", false), Err(PathError::NotFound));
        assert_eq!(resolve("/.git/../x", false), Err(PathError::BadRequest));
        assert_eq!(resolve("/.well-known/x", true).unwrap().segments.len(), 2);
        assert_eq!(segs("/a.b/c."), ["a.b", "c."]);
    }

    #[test]
    fn prefix_and_target() {
        assert_eq!(split_target("/a?b=1#f"), ("/a", Some("b=1")));
        assert_eq!(split_target("/a#f?x"), ("/a", None));
        assert_eq!(strip_prefix("/static/x", "/static"), Some("/x"));
        assert_eq!(strip_prefix("/static", "/static"), Some(""));
        assert_eq!(strip_prefix("/staticx", "/static"), None);
        assert_eq!(strip_prefix("/x", ""), Some("/x"));
    }

    #[test]
    fn url_path_round_trip() {
        let p = resolve("/a%20b/%3Cx%3E%22", false).unwrap();
        assert_eq!(p.url_path("/s", true), "/s/a%20b/%3Cx%3E%22/");
        assert_eq!(p.rel_path(), PathBuf::from("a b/<x>\""));
        // `//evil.com` collapses: never a protocol-relative redirect.
        let p = resolve("//evil.com", false).unwrap();
        assert_eq!(p.url_path("", true), "/evil.com/");
        assert_eq!(resolve("", false).unwrap().url_path("", false), "/");
    }
}
