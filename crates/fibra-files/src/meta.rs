//! Per-file header values that do not depend on the request: `Content-Type` from the file name,
//! and the choice of a precompressed sibling from `Accept-Encoding`.

use std::path::Path;

use crate::range::trim;

/// A content coding with a precompressed sibling file on disk (`x.js.br`, `x.js.gz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The file itself.
    Identity,
    /// `x.br`, `Content-Encoding: br`.
    Brotli,
    /// `x.gz`, `Content-Encoding: gzip`.
    Gzip,
}

impl Encoding {
    /// File name suffix of the sibling (empty for identity).
    pub fn suffix(self) -> &'static str {
        match self {
            Encoding::Identity => "",
            Encoding::Brotli => ".br",
            Encoding::Gzip => ".gz",
        }
    }

    /// `Content-Encoding` value, `None` for identity.
    pub fn header(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Brotli => Some("br"),
            Encoding::Gzip => Some("gzip"),
        }
    }
}

/// Which precompressed codings the client accepts: `(brotli, gzip)`.
///
/// A coding is acceptable when named (or matched by `*`) with a q-value above zero; an explicit
/// `q=0` for the coding itself overrides `*`. Brotli is preferred over gzip by the caller
/// whatever the q-values say: it is smaller, and every client that offers it decodes it.
pub fn accepted_encodings(accept_encoding: Option<&[u8]>) -> (bool, bool) {
    let Some(value) = accept_encoding else {
        return (false, false);
    };
    let (mut br, mut gz, mut star) = (None, None, None);
    for item in value.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let coding = trim(parts.next().unwrap_or(b""));
        let mut q_ok = true;
        for p in parts {
            let p = trim(p);
            if p.len() >= 2 && p[..2].eq_ignore_ascii_case(b"q=") {
                q_ok = q_nonzero(trim(&p[2..]));
            }
        }
        if coding.eq_ignore_ascii_case(b"br") {
            br = Some(q_ok);
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            gz = Some(q_ok);
        } else if coding == b"*" {
            star = Some(q_ok);
        }
    }
    let star = star.unwrap_or(false);
    (br.unwrap_or(star), gz.unwrap_or(star))
}

/// A qvalue is `0`, `0.`, `0.0`..`0.000` (zero) or anything else we treat as positive.
fn q_nonzero(q: &[u8]) -> bool {
    !(q.first() == Some(&b'0') && q[1..].iter().all(|&b| b == b'.' || b == b'0'))
}

/// The `Content-Type` for a file name: the `mime_guess` type, `application/octet-stream` when
/// unknown, with `; charset=utf-8` for text types (and JavaScript/JSON/XML/SVG, which are text
/// in everything but name).
pub fn content_type(path: &Path) -> String {
    let mime = mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream");
    let texty = mime.starts_with("text/")
        || matches!(
            mime,
            "application/javascript"
                | "application/json"
                | "application/xml"
                | "image/svg+xml"
                | "application/manifest+json"
        );
    if texty {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(
            content_type(Path::new("a/index.html")),
            "text/html; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("x.TXT")),
            "text/plain; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.css")), "text/css; charset=utf-8");
        assert!(content_type(Path::new("x.js")).ends_with("javascript; charset=utf-8"));
        assert_eq!(
            content_type(Path::new("x.json")),
            "application/json; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.png")), "image/png");
        assert_eq!(
            content_type(Path::new("x.unknownext")),
            "application/octet-stream"
        );
        assert_eq!(content_type(Path::new("noext")), "application/octet-stream");
    }

    #[test]
    fn accept_encoding() {
        assert_eq!(accepted_encodings(None), (false, false));
        assert_eq!(accepted_encodings(Some(b"gzip, deflate, br")), (true, true));
        assert_eq!(accepted_encodings(Some(b"gzip")), (false, true));
        assert_eq!(accepted_encodings(Some(b"BR;q=0.5")), (true, false));
        assert_eq!(
            accepted_encodings(Some(b"br;q=0, gzip;q=0.000")),
            (false, false)
        );
        assert_eq!(accepted_encodings(Some(b"*")), (true, true));
        assert_eq!(accepted_encodings(Some(b"*;q=0.1, br;q=0")), (false, true));
        assert_eq!(accepted_encodings(Some(b"identity")), (false, false));
        assert_eq!(accepted_encodings(Some(b"x-gzip ; q=1")), (false, true));
    }
}
