//! A hand-made HTTP/1.1 client over a plain `TcpStream`, for tests that check the bytes on
//! the wire (chunks as they come, a connection's end).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a read may wait before the test fails instead of hanging.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// One client connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

/// A response head: the status and the header lines.
#[derive(Debug)]
pub struct Head {
    pub status: u16,
    pub text: String,
}

impl Head {
    /// The value of the first field `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.text.lines().skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

impl Conn {
    /// Connects, with read and write timeouts.
    pub fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(READ_TIMEOUT)).unwrap();
        Conn {
            reader: BufReader::new(s),
        }
    }

    /// Sends `GET path` with `headers`.
    pub fn get(&mut self, path: &str, headers: &[(&str, &str)]) {
        self.request("GET", path, headers);
    }

    /// Sends a request without a body.
    pub fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)]) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        self.reader.get_mut().write_all(req.as_bytes()).unwrap();
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).expect("read a line");
        assert!(n > 0, "the connection ended inside a response");
        line
    }

    /// Reads a response head.
    pub fn head(&mut self) -> Head {
        let mut text = String::new();
        loop {
            let line = self.line();
            if line == "\r\n" {
                break;
            }
            text.push_str(&line);
        }
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {text}"));
        Head { status, text }
    }

    /// The next chunk of a chunked body; `None` at the last one (its trailers are read too).
    pub fn chunk(&mut self) -> Option<Vec<u8>> {
        let size = self.line();
        let size = usize::from_str_radix(size.trim_end(), 16).expect("a chunk size");
        if size == 0 {
            while self.line() != "\r\n" {}
            return None;
        }
        let mut data = vec![0; size + 2];
        self.reader.read_exact(&mut data).expect("a chunk");
        assert!(data.ends_with(b"\r\n"), "a chunk ends with CRLF");
        data.truncate(size);
        Some(data)
    }

    /// The body of the response with `head`: by its `Content-Length`, or every chunk.
    pub fn body(&mut self, head: &Head) -> Vec<u8> {
        if let Some(len) = head.header("content-length") {
            let mut body = vec![0; len.parse().expect("a length")];
            self.reader.read_exact(&mut body).expect("the body");
            return body;
        }
        assert_eq!(
            head.header("transfer-encoding"),
            Some("chunked"),
            "{head:?}"
        );
        let mut body = Vec::new();
        while let Some(c) = self.chunk() {
            body.extend_from_slice(&c);
        }
        body
    }

    /// Whether the server closed the connection (what is left to read: nothing).
    pub fn at_end(&mut self) -> bool {
        self.rest().is_empty()
    }

    /// The raw bytes left until the server closes the connection (or resets it).
    pub fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        if let Err(e) = self.reader.read_to_end(&mut rest) {
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
        }
        rest
    }

    /// The socket (to shut it down).
    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }
}
