//! HTML directory listings, as nginx's `autoindex` and Python's `http.server` give them: a
//! table of name, size and modification time, sortable by each (`?sort=name|size|date` and
//! `&order=asc|desc`, links in the column heads, directories first), sizes in KiB/MiB/GiB
//! with the exact count in a tooltip, and a link to the parent directory.
//!
//! Safety: the directory is read through a descriptor opened below the root with the same
//! containment as a file (see [`crate::open::Resolver::open_dir`]), never by a path name, so
//! a symlink swapped in after the check cannot make it list another directory. Entries are
//! `fstatat`ed without following symlinks; a symlink's target is described only if the
//! resolver would serve it (inside the root), so a link out of the root shows no size or
//! date of what it points to. Every name is percent-encoded in its link and HTML-escaped in
//! its text, and links are written `./name`, so a file called `javascript:alert(1)` is a
//! relative path, not a URL scheme.

use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::time::SystemTime;

use crate::path::percent_encode_segment;

/// What a listed name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A directory (or a symlink to one inside the root): listed first, with a trailing `/`.
    Dir,
    /// Anything else.
    File,
}

/// One name in a listing.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name as the filesystem has it.
    pub name: Vec<u8>,
    /// Directory or not.
    pub kind: Kind,
    /// Size in bytes (files only, when known).
    pub size: Option<u64>,
    /// Last modification, when known.
    pub modified: Option<SystemTime>,
}

/// The column a listing is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// By name (byte order).
    Name,
    /// By size.
    Size,
    /// By modification time.
    Date,
}

/// How a listing is ordered: a column, ascending or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// The column.
    pub key: SortKey,
    /// Largest, latest or last name first.
    pub descending: bool,
}

impl Sort {
    /// The order a query string asks for (`sort=name|size|date`, `order=asc|desc`); by name,
    /// ascending, when it asks for nothing known.
    pub fn from_query(query: Option<&str>) -> Sort {
        let mut sort = Sort {
            key: SortKey::Name,
            descending: false,
        };
        for pair in query.unwrap_or("").split('&') {
            match pair {
                "sort=name" => sort.key = SortKey::Name,
                "sort=size" => sort.key = SortKey::Size,
                "sort=date" => sort.key = SortKey::Date,
                "order=asc" => sort.descending = false,
                "order=desc" => sort.descending = true,
                _ => {}
            }
        }
        sort
    }

    /// Sorts `entries`: directories first, then by the column (names break ties).
    pub fn apply(self, entries: &mut [Entry]) {
        entries.sort_by(|a, b| {
            let by_key = match self.key {
                SortKey::Name => a.name.cmp(&b.name),
                SortKey::Size => a.size.cmp(&b.size).then_with(|| a.name.cmp(&b.name)),
                SortKey::Date => a
                    .modified
                    .cmp(&b.modified)
                    .then_with(|| a.name.cmp(&b.name)),
            };
            let by_key = if self.descending {
                by_key.reverse()
            } else {
                by_key
            };
            a.kind.cmp(&b.kind).then(by_key)
        });
    }
}

/// Reads the names in `dir` (an open directory), leaving out hidden ones unless
/// `show_hidden`. `describe_link` is asked about each symlink (by name) and says what its
/// target is, if it may be shown; `None` lists the link as a file with no size or date.
pub fn read_entries(
    dir: &File,
    show_hidden: bool,
    describe_link: impl Fn(&[u8]) -> Option<Entry>,
) -> io::Result<Vec<Entry>> {
    // The descriptor's own directory, whatever its path has become since it was opened.
    let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
    let mut entries = Vec::new();
    for e in fs::read_dir(path)? {
        let e = e?;
        let name = e.file_name().as_bytes().to_vec();
        if name.first() == Some(&b'.') && !show_hidden {
            continue;
        }
        // `DirEntry::metadata` does not follow symlinks.
        let Ok(md) = e.metadata() else { continue };
        let entry = if md.file_type().is_symlink() {
            describe_link(&name).unwrap_or(Entry {
                name,
                kind: Kind::File,
                size: None,
                modified: None,
            })
        } else {
            Entry {
                kind: if md.is_dir() { Kind::Dir } else { Kind::File },
                size: (!md.is_dir()).then_some(md.len()),
                modified: md.modified().ok(),
                name,
            }
        };
        entries.push(entry);
    }
    Ok(entries)
}

/// Renders `entries` (sorted already, by `sort`) as the HTML page of directory `url_path`
/// (the decoded request path, escaped here); a parent link unless it is the top (`top`).
pub fn render(entries: &[Entry], url_path: &str, top: bool, sort: Sort) -> String {
    let mut html = String::with_capacity(1024 + entries.len() * 160);
    let title = escape_html(url_path);
    html.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width\">\n");
    html.push_str(&format!("<title>Index of {title}</title>\n"));
    html.push_str(STYLE);
    html.push_str(&format!(
        "</head>\n<body>\n<h1>Index of {title}</h1>\n<table>\n<thead><tr>"
    ));
    for (key, label, class) in [
        (SortKey::Name, "Name", ""),
        (SortKey::Size, "Size", " class=\"n\""),
        (SortKey::Date, "Last modified", ""),
    ] {
        // The current column's link flips its order; another column's starts ascending.
        let descending = sort.key == key && !sort.descending;
        let mark = match (sort.key == key, sort.descending) {
            (true, false) => " \u{25b2}",
            (true, true) => " \u{25bc}",
            _ => "",
        };
        html.push_str(&format!(
            "<th{class}><a href=\"?sort={}&amp;order={}\">{label}</a>{mark}</th>",
            key_name(key),
            if descending { "desc" } else { "asc" },
        ));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    if !top {
        html.push_str(
            "<tr><td><a href=\"../\">../</a></td><td class=\"n\">-</td><td>-</td></tr>\n",
        );
    }
    for e in entries {
        let mut href = String::from("./");
        percent_encode_segment(&e.name, &mut href);
        let mut text = escape_html(&String::from_utf8_lossy(&e.name));
        if e.kind == Kind::Dir {
            href.push('/');
            text.push('/');
        }
        let size = match e.size {
            Some(n) => format!("<td class=\"n\" title=\"{n} bytes\">{}</td>", human_size(n)),
            None => "<td class=\"n\">-</td>".to_string(),
        };
        let date = e.modified.map_or("-".to_string(), format_date);
        html.push_str(&format!(
            "<tr><td><a href=\"{href}\">{text}</a></td>{size}<td>{date}</td></tr>\n"
        ));
    }
    html.push_str("</tbody>\n</table>\n</body></html>\n");
    html
}

const STYLE: &str = "<style>body{font-family:sans-serif;margin:2em}\
table{border-collapse:collapse}th,td{padding:.2em 1.2em .2em 0;text-align:left}\
.n{text-align:right}th a{color:inherit}tbody tr:hover{background:#f4f4f4}\
td{font-variant-numeric:tabular-nums}</style>\n";

fn key_name(k: SortKey) -> &'static str {
    match k {
        SortKey::Name => "name",
        SortKey::Size => "size",
        SortKey::Date => "date",
    }
}

/// A size for people: bytes below 1 KiB, else one decimal in KiB, MiB, GiB or TiB.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// `YYYY-MM-DD HH:MM` in UTC.
pub fn format_date(t: SystemTime) -> String {
    let [year, month, day, hour, minute, _] = fibra_http::date::utc_parts(t);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
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
    use std::time::{Duration, UNIX_EPOCH};

    fn listing_of(dir: &std::path::Path, show_hidden: bool) -> Vec<Entry> {
        let f = File::open(dir).unwrap();
        read_entries(&f, show_hidden, |_| None).unwrap()
    }

    #[test]
    fn escapes_names() {
        let dir = std::env::temp_dir().join(format!("fibra-listing-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub dir")).unwrap();
        fs::write(dir.join("<script>alert(1)<\\script>"), b"x").unwrap();
        fs::write(dir.join("javascript:alert(1)"), b"x").unwrap();
        fs::write(dir.join(".hidden"), b"x").unwrap();
        fs::write(dir.join("a\"b&c"), b"x").unwrap();
        fs::write(dir.join("x'onmouseover='1"), b"x").unwrap();
        let sort = Sort::from_query(None);
        let mut entries = listing_of(&dir, false);
        sort.apply(&mut entries);
        let html = render(&entries, "/<d>/", false, sort);
        fs::remove_dir_all(&dir).unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;\\script&gt;"));
        assert!(html.contains("href=\"./%3Cscript%3Ealert(1)%3C%5Cscript%3E\""));
        assert!(html.contains("href=\"./javascript:alert(1)\""));
        assert!(html.contains("href=\"./sub%20dir/\">sub dir/</a>"));
        assert!(html.contains("a&quot;b&amp;c"));
        assert!(html.contains("href=\"./x%27onmouseover=%271\">x&#39;onmouseover=&#39;1</a>"));
        assert!(html.contains("Index of /&lt;d&gt;/"));
        assert!(html.contains("href=\"../\""));
        assert!(!html.contains("hidden"));
        // The directory comes first.
        let sub = html.find("sub dir/").unwrap();
        assert!(html.find("a&quot;b").unwrap() > sub);
    }

    #[test]
    fn sorts_by_each_column_directories_first() {
        let e = |name: &str, kind, size, secs| Entry {
            name: name.as_bytes().to_vec(),
            kind,
            size,
            modified: Some(UNIX_EPOCH + Duration::from_secs(secs)),
        };
        let all = vec![
            e("b.txt", Kind::File, Some(10), 300),
            e("a.txt", Kind::File, Some(3000), 100),
            e("z", Kind::Dir, None, 50),
            e("c.txt", Kind::File, Some(1), 200),
        ];
        let order = |q: &str| {
            let mut v = all.clone();
            Sort::from_query(Some(q)).apply(&mut v);
            v.iter()
                .map(|e| String::from_utf8(e.name.clone()).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(""), ["z", "a.txt", "b.txt", "c.txt"]);
        assert_eq!(
            order("sort=name&order=desc"),
            ["z", "c.txt", "b.txt", "a.txt"]
        );
        assert_eq!(order("sort=size"), ["z", "c.txt", "b.txt", "a.txt"]);
        assert_eq!(
            order("sort=size&order=desc"),
            ["z", "a.txt", "b.txt", "c.txt"]
        );
        assert_eq!(order("sort=date"), ["z", "a.txt", "c.txt", "b.txt"]);
        assert_eq!(
            order("order=desc&sort=date"),
            ["z", "b.txt", "c.txt", "a.txt"]
        );
        // The current column's head links to the other order; the others to ascending.
        let html = render(&all, "/", true, Sort::from_query(Some("sort=size")));
        assert!(html.contains("href=\"?sort=size&amp;order=desc\">Size</a> \u{25b2}"));
        assert!(html.contains("href=\"?sort=name&amp;order=asc\">Name</a></th>"));
        assert!(!html.contains("href=\"../\""), "no parent link at the top");
        assert!(html.contains("title=\"3000 bytes\">2.9 KiB<"));
        assert!(html.contains("1970-01-01 00:05"));
    }

    #[test]
    fn human_sizes_and_dates() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(5 << 20), "5.0 MiB");
        assert_eq!(human_size(3 << 30), "3.0 GiB");
        assert_eq!(human_size(u64::MAX), "16777216.0 TiB");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_628_132); // 2026-11-25 17:35:32 UTC
        assert_eq!(format_date(t), "2026-11-25 17:35");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29 00:00 UTC
        assert_eq!(format_date(leap), "2000-02-29 00:00");
    }
}
