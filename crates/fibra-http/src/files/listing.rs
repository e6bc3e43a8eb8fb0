//! HTML directory listings (only when enabled). Every name is percent-encoded in the link and
//! HTML-escaped in the text, and links are written `./name` so that a file called
//! `javascript:alert(1)` is a relative path, not a URL scheme.

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::path::percent_encode_segment;

/// Renders the listing of `dir` as an HTML page titled with `url_path` (the decoded request
/// path, escaped here). Hidden entries are left out unless `show_hidden`.
pub fn render(dir: &Path, url_path: &str, show_hidden: bool) -> io::Result<String> {
    let mut entries: Vec<(Vec<u8>, bool)> = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().as_bytes().to_vec();
        if name.first() == Some(&b'.') && !show_hidden {
            continue;
        }
        // file_type does not follow symlinks; a link to a directory is listed as a file,
        // which is harmless (following it redirects to the slash form).
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        entries.push((name, is_dir));
    }
    entries.sort();
    let mut html = String::with_capacity(256 + entries.len() * 96);
    let title = escape_html(url_path);
    html.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">");
    html.push_str(&format!(
        "<title>Index of {title}</title></head>\n<body><h1>Index of {title}</h1>\n<ul>\n"
    ));
    if url_path != "/" {
        html.push_str("<li><a href=\"../\">../</a></li>\n");
    }
    for (name, is_dir) in &entries {
        let mut href = String::from("./");
        percent_encode_segment(name, &mut href);
        let mut text = escape_html(&String::from_utf8_lossy(name));
        if *is_dir {
            href.push('/');
            text.push('/');
        }
        html.push_str(&format!("<li><a href=\"{href}\">{text}</a></li>\n"));
    }
    html.push_str("</ul></body></html>\n");
    Ok(html)
}

/// Escapes `& < > " '` for use in HTML text and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_names() {
        let dir = std::env::temp_dir().join(format!("fibra-listing-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub dir")).unwrap();
        fs::write(dir.join("<script>alert(1)<\\script>"), b"x").unwrap();
        fs::write(dir.join("javascript:alert(1)"), b"x").unwrap();
        fs::write(dir.join(".hidden"), b"x").unwrap();
        fs::write(dir.join("a\"b&c"), b"x").unwrap();
        let html = render(&dir, "/<d>/", false).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;\\script&gt;"));
        assert!(html.contains("href=\"./%3Cscript%3Ealert(1)%3C%5Cscript%3E\""));
        assert!(html.contains("href=\"./javascript:alert(1)\""));
        assert!(html.contains("href=\"./sub%20dir/\">sub dir/</a>"));
        assert!(html.contains("a&quot;b&amp;c"));
        assert!(html.contains("Index of /&lt;d&gt;/"));
        assert!(html.contains("href=\"../\""));
        assert!(!html.contains("hidden"));
    }
}
