//! Shared helpers for the `files_*` integration tests: a temp directory tree to serve and a
//! minimal blocking HTTP/1.1 client that speaks raw bytes over a real socket.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A unique temp directory, removed on drop. `root` is served; `base` also holds a file
/// outside the root for the escape tests.
pub struct TempTree {
    pub base: PathBuf,
    pub root: PathBuf,
}

impl TempTree {
    pub fn new(name: &str) -> TempTree {
        let base = std::env::temp_dir().join(format!("fibra-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        TempTree { base, root }
    }

    pub fn write(&self, rel: &str, data: impl AsRef<[u8]>) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        p
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn base_path(&self) -> &Path {
        &self.base
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// One parsed response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    /// First value of a header (case-insensitive), or "".
    pub fn h(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    pub fn has(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A keep-alive client connection.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream
            .set_write_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends `GET target` with extra header lines (`"Name: value"`), reads one response.
    pub fn get(&mut self, target: &str, headers: &[&str]) -> Resp {
        self.request("GET", target, headers)
    }

    pub fn request(&mut self, method: &str, target: &str, headers: &[&str]) -> Resp {
        let mut raw = format!("{method} {target} HTTP/1.1\r\nHost: test\r\n");
        for h in headers {
            raw.push_str(h);
            raw.push_str("\r\n");
        }
        raw.push_str("\r\n");
        self.send_raw(raw.as_bytes());
        self.read_response(method == "HEAD")
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Reads one response; bodies are delimited by Content-Length (none for HEAD/304).
    pub fn read_response(&mut self, head_only: bool) -> Resp {
        let end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill();
        };
        let head = String::from_utf8(self.buf[..end].to_vec()).unwrap();
        self.buf.drain(..end);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (k.trim().to_string(), v.trim().to_string())
            })
            .collect();
        let mut resp = Resp {
            status,
            headers,
            body: Vec::new(),
        };
        let len: usize = if head_only || status == 304 || status == 204 {
            0
        } else {
            resp.h("content-length").parse().expect("content-length")
        };
        while self.buf.len() < len {
            self.fill();
        }
        resp.body = self.buf.drain(..len).collect();
        resp
    }

    fn fill(&mut self) {
        let mut tmp = [0u8; 64 * 1024];
        let n = self.stream.read(&mut tmp).unwrap();
        assert!(
            n > 0,
            "connection closed early; have {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        self.buf.extend_from_slice(&tmp[..n]);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One request on a fresh connection.
pub fn get(addr: SocketAddr, target: &str, headers: &[&str]) -> Resp {
    Client::connect(addr).get(target, headers)
}

/// A fibra-http server (1 worker) answering every request with a `FileServer`; shut down on
/// drop.
pub struct Running {
    handle: fibra_http::ServerHandle,
    files: std::sync::Arc<fibra_files::FileServer>,
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.handle.local_addr()
    }

    pub fn files(&self) -> &fibra_files::FileServer {
        &self.files
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.handle.shutdown(Duration::from_secs(5));
    }
}

pub fn serve(files: fibra_files::FileServer) -> Running {
    serve_workers(files, 1)
}

pub fn serve_workers(files: fibra_files::FileServer, workers: usize) -> Running {
    let files = std::sync::Arc::new(files);
    let f = files.clone();
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .workers(workers)
        .serve(move |req: fibra_http::Request| f.handle(&req))
        .expect("start server");
    Running { handle, files }
}
