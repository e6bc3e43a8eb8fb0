//! Directory listings over real sockets: the page (names escaped and encoded, sizes, dates,
//! sorting, parent link), and that a listing never shows what lies outside the root — not
//! through a symlinked directory, not through a symlinked file's size or date, not above a
//! mount prefix.

mod files_util;

use std::time::Duration;

use fibra_files::{FileServer, FileServerConfig};
use files_util::{get, TempTree};

fn listing_config(t: &TempTree) -> FileServerConfig {
    let mut c = FileServerConfig::new(&t.root);
    c.listing = true;
    c.cache_ttl = Duration::from_secs(3600);
    c
}

/// The table row of the link `href` in `html`.
fn row<'a>(html: &'a str, href: &str) -> &'a str {
    let at = html
        .find(&format!("href=\"{href}\""))
        .unwrap_or_else(|| panic!("no link {href} in {html}"));
    let start = html[..at].rfind("<tr>").unwrap();
    let end = at + html[at..].find("</tr>").unwrap();
    &html[start..end]
}

#[test]
fn the_page_escapes_sorts_and_links_up() {
    let t = TempTree::new("listing-page");
    t.write("dir/small.txt", "12345");
    t.write("dir/big.bin", vec![7u8; 3 * 1024 * 1024 / 2]);
    t.write("dir/<b>&\"'.txt", "x");
    t.write("dir/100%.txt", "y");
    t.write("dir/.hidden", "h");
    std::fs::create_dir_all(t.path("dir/sub")).unwrap();
    let srv = files_util::serve(FileServer::new(listing_config(&t)).unwrap());

    let r = get(srv.addr(), "/dir/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.h("content-type"), "text/html; charset=utf-8");
    let html = r.text();
    assert!(html.contains("<title>Index of /dir/</title>"), "{html}");
    assert!(!html.contains("<b>"), "{html}");
    let odd = row(&html, "./%3Cb%3E%26%22%27.txt");
    assert!(odd.contains(">&lt;b&gt;&amp;&quot;&#39;.txt</a>"), "{odd}");
    assert!(
        html.contains("href=\"./100%25.txt\">100%.txt</a>"),
        "{html}"
    );
    assert!(!html.contains("hidden"), "{html}");
    assert!(row(&html, "./small.txt").contains(">5 B<"));
    assert!(row(&html, "./big.bin").contains(">1.5 MiB<"));
    assert!(row(&html, "./big.bin").contains("title=\"1572864 bytes\""));
    assert!(row(&html, "../").contains("../</a>"));
    // Directories first, then by name; by size descending on request.
    let pos = |h: &str, s: &str| h.find(s).unwrap();
    assert!(pos(&html, "./sub/") < pos(&html, "./100%25.txt"));
    assert!(pos(&html, "./100%25.txt") < pos(&html, "./big.bin"));
    let by_size = get(srv.addr(), "/dir/?sort=size&order=desc", &[]).text();
    assert!(pos(&by_size, "./big.bin") < pos(&by_size, "./small.txt"));
    assert!(pos(&by_size, "./small.txt") < pos(&by_size, "./100%25.txt"));
    // Each listed link leads to the file it names.
    assert_eq!(get(srv.addr(), "/dir/100%25.txt", &[]).text(), "y");
    assert_eq!(
        get(srv.addr(), "/dir/%3Cb%3E%26%22%27.txt", &[]).text(),
        "x"
    );
    // HEAD: the same page's headers, no body.
    let h = files_util::Client::connect(srv.addr()).request("HEAD", "/dir/", &[]);
    assert_eq!(h.status, 200);
    assert_eq!(h.h("content-length"), r.h("content-length"));
}

#[test]
fn a_listing_never_shows_what_is_outside_the_root() {
    let t = TempTree::new("listing-root");
    let outside = t.base_path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret-name.txt"), vec![1u8; 4321]).unwrap();
    t.write("inside/ok.txt", "ok");
    std::os::unix::fs::symlink(&outside, t.path("outdir")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret-name.txt"), t.path("outfile")).unwrap();
    std::os::unix::fs::symlink(t.path("inside"), t.path("indir")).unwrap();
    std::os::unix::fs::symlink(t.path("inside/ok.txt"), t.path("infile")).unwrap();
    let srv = files_util::serve(FileServer::new(listing_config(&t)).unwrap());

    // A symlinked directory that leads out: refused, its names never shown.
    let r = get(srv.addr(), "/outdir/", &[]);
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("secret-name"));
    // Ways up are refused before the filesystem is asked.
    for target in ["/inside/../", "/%2e%2e/", "/inside/%2e%2e/", "/..%2f"] {
        let r = get(srv.addr(), target, &[]);
        assert_eq!(r.status, 400, "{target}");
        assert!(!r.text().contains("outside"), "{target}");
    }

    let html = get(srv.addr(), "/", &[]).text();
    // The top has no parent link.
    assert!(!html.contains("href=\"../\""), "{html}");
    // A link out of the root is listed by name only: no size, no date of its target.
    let out = row(&html, "./outfile");
    assert!(!out.contains("4321") && !out.contains("4.2 KiB"), "{out}");
    assert!(out.contains("<td class=\"n\">-</td><td>-</td>"), "{out}");
    assert!(html.contains("href=\"./outdir\""), "{html}");
    // Links inside the root are described by what they lead to.
    assert!(row(&html, "./indir/").contains("indir/</a>"));
    assert!(row(&html, "./infile").contains(">2 B<"));

    // A mount prefix is the top: no link above it.
    let mut c = listing_config(&t);
    c.prefix = "/static".into();
    let srv = files_util::serve(FileServer::new(c).unwrap());
    let html = get(srv.addr(), "/static/", &[]).text();
    assert!(html.contains("Index of /static/"), "{html}");
    assert!(!html.contains("href=\"../\""), "{html}");
    let html = get(srv.addr(), "/static/inside/", &[]).text();
    assert!(row(&html, "../").contains("../"));
}
