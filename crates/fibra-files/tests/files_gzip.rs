//! On-the-fly gzip and brotli over real sockets: compressible files above the threshold are
//! compressed for clients that accept it (brotli preferred), with their own ETag and `Vary: Accept-Encoding`; identity for
//! others, for `Range`, for small files and for images; a precompressed sibling still wins;
//! a changed file is compressed again.

mod files_util;

use std::io::Read;
use std::time::Duration;

use fibra_files::compress::CompressConfig;
use fibra_files::{FileServer, FileServerConfig};
use files_util::{Client, TempTree};

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .expect("a gzip body");
    out
}

fn css(n: usize) -> String {
    (0..n)
        .map(|i| format!(".c{i} {{ color: #{:06x}; margin: 0 auto; }}\n", i * 7919))
        .collect()
}

fn config(t: &TempTree) -> FileServerConfig {
    let mut c = FileServerConfig::new(&t.root);
    c.cache_ttl = Duration::from_secs(3600);
    c.compress = Some(CompressConfig::default());
    c
}

const GZ: &str = "Accept-Encoding: gzip, deflate";

#[test]
fn compressible_files_are_gzipped_for_clients_that_accept_it() {
    let t = TempTree::new("gzip-wire");
    let style = css(400);
    t.write("style.css", &style);
    t.write("tiny.css", "a{}");
    t.write("pic.png", vec![0u8; 8192]);
    t.write("app.js", "x".repeat(5000));
    t.write("app.js.gz", "PRECOMPRESSED");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());

    let plain = c.get("/style.css", &[]);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.body, style.as_bytes());
    assert!(!plain.has("content-encoding"));
    assert_eq!(plain.h("vary"), "Accept-Encoding");
    let etag = plain.h("etag").to_string();

    let gz = c.get("/style.css", &[GZ]);
    assert_eq!(gz.status, 200);
    assert_eq!(gz.h("content-encoding"), "gzip");
    assert_eq!(gz.h("vary"), "Accept-Encoding");
    assert_eq!(gz.h("content-type"), "text/css; charset=utf-8");
    assert_eq!(gunzip(&gz.body), style.as_bytes());
    assert!(
        gz.body.len() < style.len() / 3,
        "{} of {}",
        gz.body.len(),
        style.len()
    );
    let gz_etag = gz.h("etag").to_string();
    assert_eq!(gz_etag, format!("{}-gz\"", etag.trim_end_matches('"')));
    // The same bytes again (from the cache), and HEAD announces their length.
    assert_eq!(c.get("/style.css", &[GZ]).body, gz.body);
    let head = c.request("HEAD", "/style.css", &[GZ]);
    assert_eq!(head.h("content-length"), gz.body.len().to_string());
    assert_eq!(head.h("etag"), gz_etag);

    // Validators per representation.
    let inm = format!("If-None-Match: {gz_etag}");
    let r = c.get("/style.css", &[GZ, &inm]);
    assert_eq!((r.status, r.h("etag")), (304, gz_etag.as_str()));
    assert_eq!(r.h("vary"), "Accept-Encoding");
    let inm = format!("If-None-Match: {etag}");
    assert_eq!(c.get("/style.css", &[GZ, &inm]).status, 200);
    assert_eq!(c.get("/style.css", &[&inm]).status, 304);

    // Ranges are offsets into the file: identity bytes.
    let r = c.get("/style.css", &[GZ, "Range: bytes=0-9"]);
    assert_eq!(r.status, 206);
    assert!(!r.has("content-encoding"));
    assert_eq!(r.body, &style.as_bytes()[..10]);
    // Refused by q=0.
    let r = c.get("/style.css", &["Accept-Encoding: gzip;q=0"]);
    assert!(!r.has("content-encoding"));
    // Small files and images as they are, without Vary.
    for path in ["/tiny.css", "/pic.png"] {
        let r = c.get(path, &[GZ]);
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.has("content-encoding") && !r.has("vary"), "{path}");
    }
    // brotli is preferred when accepted: its own bytes and ETag.
    let br = c.get("/style.css", &["Accept-Encoding: gzip, br"]);
    assert_eq!(br.h("content-encoding"), "br");
    assert_eq!(br.h("vary"), "Accept-Encoding");
    assert_eq!(br.h("etag"), format!("{}-br\"", etag.trim_end_matches('"')));
    let mut plain_again = Vec::new();
    brotli::Decompressor::new(br.body.as_slice(), 4096)
        .read_to_end(&mut plain_again)
        .unwrap();
    assert_eq!(plain_again, style.as_bytes());
    assert!(
        br.body.len() < gz.body.len(),
        "{} vs {}",
        br.body.len(),
        gz.body.len()
    );
    // A precompressed sibling wins, also over brotli made on the fly.
    let r = c.get("/app.js", &["Accept-Encoding: br, gzip"]);
    assert_eq!(
        (r.h("content-encoding"), r.text().as_str()),
        ("gzip", "PRECOMPRESSED")
    );
    let r = c.get("/app.js", &[GZ]);
    assert_eq!(
        (r.h("content-encoding"), r.text().as_str()),
        ("gzip", "PRECOMPRESSED")
    );
}

#[test]
fn a_changed_file_is_compressed_again() {
    let t = TempTree::new("gzip-change");
    t.write("data.json", format!("[{}]", "1,".repeat(3000) + "1"));
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Client::connect(srv.addr());
    let first = c.get("/data.json", &[GZ]);
    assert_eq!(first.h("content-encoding"), "gzip");
    let newer = format!("[{}]", "2,".repeat(5000) + "2");
    // Replace by rename, as editors and deploy tools do.
    let tmp = t.base_path().join("data.json.tmp");
    std::fs::write(&tmp, &newer).unwrap();
    std::fs::rename(&tmp, t.path("data.json")).unwrap();
    // The file cache sees the change at once (inotify); bounded wait for a loaded machine.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.get("/data.json", &[GZ]);
        if gunzip(&r.body) == newer.as_bytes() {
            assert_ne!(r.h("etag"), first.h("etag"));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new contents never came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
