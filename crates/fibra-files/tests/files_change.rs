//! `FileServer` while the tree changes under it, over real sockets: a file rewritten smaller
//! or larger, replaced by rename, created, deleted, a directory swapped. The cache lives for an
//! hour here, so only change notification can make the new state visible. Each test polls
//! (bounded, no timing assertions) until it is, and checks every response on the way: its
//! body is exactly as long as its `Content-Length`, and is the old or the new contents, never
//! a mix. A file that shrinks while it is sent closes the connection.

mod files_util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use fibra_files::{FileServer, FileServerConfig};
use files_util::TempTree;

/// How long a change may take to become visible before the test fails (the machine may be
/// loaded; in practice it is the next request).
const PATIENCE: Duration = Duration::from_secs(10);

fn config(t: &TempTree) -> FileServerConfig {
    let mut c = FileServerConfig::new(&t.root);
    c.cache_ttl = Duration::from_secs(3600);
    c
}

/// A body of `n` bytes that differs from any other length's at many offsets.
fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ seed).collect()
}

/// A keep-alive connection that checks every response's framing.
struct Checked {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Checked {
    fn connect(addr: SocketAddr) -> Checked {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Checked {
            stream,
            buf: Vec::new(),
        }
    }

    /// GET `target`: (status, body). Panics if the body is not exactly `Content-Length` long
    /// (the connection closing early) or no answer comes within the read timeout.
    fn get(&mut self, target: &str) -> (u16, Vec<u8>) {
        let req = format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n");
        self.stream.write_all(req.as_bytes()).unwrap();
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(self.fill(), "closed before a response head to {target}");
        };
        let head = String::from_utf8(self.buf.drain(..end).collect()).unwrap();
        let status: u16 = head[9..12].parse().unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().unwrap())
            })
            .expect("content-length");
        while self.buf.len() < len {
            assert!(
                self.fill(),
                "{target}: Content-Length {len}, connection closed after {} bytes",
                self.buf.len()
            );
        }
        (status, self.buf.drain(..len).collect())
    }

    /// Reads more; false at end of stream.
    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 64 * 1024];
        let n = self.stream.read(&mut tmp).expect("read (a hang?)");
        self.buf.extend_from_slice(&tmp[..n]);
        n > 0
    }
}

/// Requests `target` until `want` answers (at most `PATIENCE`); every answer on the way must
/// be one of `allowed` (the state before the change) or `want`. Returns how many it took.
fn until(c: &mut Checked, target: &str, allowed: &[(u16, &[u8])], want: (u16, &[u8])) -> usize {
    let start = Instant::now();
    for tries in 1.. {
        let (status, body) = c.get(target);
        if (status, body.as_slice()) == want {
            return tries;
        }
        assert!(
            allowed
                .iter()
                .any(|&(s, b)| (s, b) == (status, body.as_slice())),
            "{target}: neither the old nor the new contents: {status}, {} bytes",
            body.len()
        );
        assert!(start.elapsed() < PATIENCE, "{target}: change not seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    unreachable!()
}

#[test]
fn rewritten_smaller_and_larger() {
    let t = TempTree::new("change-size");
    let mib = data(1 << 20, 1);
    t.write("f.bin", &mib);
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Checked::connect(srv.addr());
    assert_eq!(c.get("/f.bin"), (200, mib.clone()));
    assert_eq!(c.get("/f.bin"), (200, mib.clone()));

    // The case: 1 MiB rewritten as 100 KB.
    let small = data(100_000, 2);
    t.write("f.bin", &small);
    until(&mut c, "/f.bin", &[(200, &mib)], (200, &small));
    assert_eq!(c.get("/f.bin"), (200, small.clone()));

    // Larger again, then a small file (served from memory) growing.
    let large = data(3 << 20, 3);
    t.write("f.bin", &large);
    until(&mut c, "/f.bin", &[(200, &small)], (200, &large));
    t.write("s.txt", "tiny");
    assert_eq!(c.get("/s.txt"), (200, b"tiny".to_vec()));
    t.write("s.txt", data(20_000, 4));
    until(&mut c, "/s.txt", &[(200, b"tiny")], (200, &data(20_000, 4)));
}

#[test]
fn replaced_by_rename_created_and_deleted() {
    let t = TempTree::new("change-rename");
    t.write("site/page.html", "v1");
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Checked::connect(srv.addr());
    assert_eq!(c.get("/site/page.html"), (200, b"v1".to_vec()));

    // An editor's or a deploy tool's write: a temporary file renamed over the old one.
    t.write("site/.page.html.tmp", "v2, longer");
    std::fs::rename(t.path("site/.page.html.tmp"), t.path("site/page.html")).unwrap();
    until(
        &mut c,
        "/site/page.html",
        &[(200, b"v1")],
        (200, b"v2, longer"),
    );

    // Created: a cached 404 goes away.
    let nf: &[u8] = b"404 Not Found\n";
    assert_eq!(c.get("/site/new.css"), (404, nf.to_vec()));
    t.write("site/new.css", "a{}");
    until(&mut c, "/site/new.css", &[(404, nf)], (200, b"a{}"));

    // Deleted.
    std::fs::remove_file(t.path("site/page.html")).unwrap();
    until(
        &mut c,
        "/site/page.html",
        &[(200, b"v2, longer")],
        (404, nf),
    );

    // A whole directory swapped (the deploy-by-rename of a release directory).
    t.write("next/page.html", "release 2");
    std::fs::rename(t.path("site"), t.path("old")).unwrap();
    std::fs::rename(t.path("next"), t.path("site")).unwrap();
    until(&mut c, "/site/page.html", &[(404, nf)], (200, b"release 2"));
    until(&mut c, "/site/new.css", &[(200, b"a{}")], (404, nf));
}

#[test]
fn a_file_shrinking_while_sent_closes_the_connection() {
    let t = TempTree::new("change-shrink");
    let len = 32 << 20;
    t.write("big.bin", data(len, 5));
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    // Read a little, so the server is in the middle of the body, then cut the file.
    let mut got = vec![0u8; 64 * 1024];
    let n = s.read(&mut got).unwrap();
    assert!(n > 0);
    std::fs::OpenOptions::new()
        .write(true)
        .open(t.path("big.bin"))
        .unwrap()
        .set_len(100_000)
        .unwrap();
    let mut rest = Vec::new();
    // Ends: either the whole body was out before the cut, or the server closes (EOF).
    s.read_to_end(&mut rest)
        .expect("the server closes, no hang");
    let head_end = {
        let mut all = got[..n].to_vec();
        all.extend_from_slice(&rest);
        let end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert!(all.len() - end <= len, "more than Content-Length");
        end
    };
    assert!(head_end > 0);
}

#[test]
fn many_cached_paths_short_and_long_each_see_their_own_changes() {
    // Paths on either side of the cache's in-slot key length, spread over its shards: a change
    // to one is seen at once, and leaves the others cached (answered as hits, unchanged).
    let t = TempTree::new("change-many");
    let long_dir = "a-directory-name-long-enough/to-make-keys/longer-than-fifty-bytes";
    let names: Vec<String> = (0..64)
        .map(|i| {
            if i % 2 == 0 {
                format!("s/{i}.txt")
            } else {
                format!("{long_dir}/{i}.txt")
            }
        })
        .collect();
    for (i, n) in names.iter().enumerate() {
        t.write(n, format!("v1 of {i}"));
    }
    let srv = files_util::serve(FileServer::new(config(&t)).unwrap());
    let mut c = Checked::connect(srv.addr());
    for (i, n) in names.iter().enumerate() {
        assert_eq!(
            c.get(&format!("/{n}")),
            (200, format!("v1 of {i}").into_bytes())
        );
    }
    let nf: &[u8] = b"404 Not Found\n";
    for (short, long) in [(&names[10], &names[11]), (&names[20], &names[21])] {
        for n in [short, long] {
            let target = format!("/{n}");
            let old = c.get(&target).1;
            // Replaced by rename.
            t.write("tmp.txt", "v2");
            std::fs::rename(t.path("tmp.txt"), t.path(n)).unwrap();
            until(&mut c, &target, &[(200, &old)], (200, b"v2"));
            // Deleted, then created again.
            std::fs::remove_file(t.path(n)).unwrap();
            until(&mut c, &target, &[(200, b"v2")], (404, nf));
            t.write(n, "v3");
            until(&mut c, &target, &[(404, nf)], (200, b"v3"));
        }
    }
    // A path never there, long and short, cached as 404 until created.
    for n in ["s/late.txt", &format!("{long_dir}/late.txt")] {
        let target = format!("/{n}");
        assert_eq!(c.get(&target), (404, nf.to_vec()));
        t.write(n, "late");
        until(&mut c, &target, &[(404, nf)], (200, b"late"));
    }
    // The untouched files: unchanged, and served from the cache.
    let before = srv.files().cache_stats();
    let changed = [10, 11, 20, 21];
    for (i, n) in names.iter().enumerate() {
        if !changed.contains(&i) {
            assert_eq!(
                c.get(&format!("/{n}")),
                (200, format!("v1 of {i}").into_bytes())
            );
        }
    }
    let after = srv.files().cache_stats();
    assert_eq!(after.hits - before.hits, 60, "{before:?} -> {after:?}");
    assert_eq!(after.misses, before.misses);
}
