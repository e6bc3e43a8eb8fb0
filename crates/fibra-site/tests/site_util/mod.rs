//! Shared by the site tests: a temporary directory for a site file and its files, a server
//! running a site file, and plain HTTP/1.1 exchanges.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fibra_http::{Server, ServerHandle};
use fibra_site::config::Listen;
use fibra_site::{Live, SiteService};

/// A temporary directory, removed on drop.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("fibra-site-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The site file `text` (its `LISTEN` replaced by a free address) served by one worker; the
/// live state, the server and the address.
pub fn serve(dir: &Dir, text: &str) -> (Arc<Live>, ServerHandle, SocketAddr) {
    let port = spare_port();
    let addr = format!("127.0.0.1:{port}");
    let text = text.replace("LISTEN", &addr);
    let file = dir.write("site.toml", &text);
    let config = fibra_site::config::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let live = Live::new(config).unwrap_or_else(|e| panic!("{e}"));
    let slot = live.slot(&Listen::Tcp(addr.clone()));
    let server = Server::bind(addr.as_str())
        .workers(1)
        .serve(SiteService::new(live.clone(), vec![slot]))
        .unwrap();
    let at = server.local_addr();
    (live, server, at)
}

pub use fibra_testkit::spare_port;

/// Sends `request` (raw bytes) and reads the answer to the close.
pub fn exchange(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `GET path` with `Host: host` (and `extra` header lines), connection closed after.
pub fn get(addr: SocketAddr, host: &str, path: &str, extra: &str) -> String {
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"),
    )
}

/// The status code of a response.
pub fn status(resp: &str) -> u16 {
    resp.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The body of a response (after the blank line).
pub fn body(resp: &str) -> &str {
    resp.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// The value of header `name` (case-insensitive), if present.
pub fn header<'a>(resp: &'a str, name: &str) -> Option<&'a str> {
    let head = resp.split_once("\r\n\r\n").map_or(resp, |(h, _)| h);
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}
