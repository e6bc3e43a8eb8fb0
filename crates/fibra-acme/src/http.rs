//! A small blocking HTTPS/1.1 client for the ACME directory: one request per connection
//! (`Connection: close`) over `std::net::TcpStream` and a rustls `StreamOwned`.
//!
//! ACME traffic is a handful of small requests per certificate every few weeks, so a TLS
//! handshake per request costs nothing worth a connection pool. Responses are read by their
//! framing (`Content-Length`, chunked, or up to the close) with limits on the head and body.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// How long a connection attempt (each address of the host) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one read or write may block.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;

/// The largest response body accepted (certificate chains are a few KiB).
const MAX_BODY: usize = 1024 * 1024;

/// One request.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) url: &'a str,
    /// Extra header fields (`Content-Type`, `Accept`).
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) body: &'a [u8],
}

/// A response, read whole.
#[derive(Debug, Clone, Default)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Response {
    /// The first field named `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> io::Result<serde_json::Value> {
        serde_json::from_slice(&self.body).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the server's response is not JSON: {e}"),
            )
        })
    }
}

/// Sends requests; the network one is [`Https`], tests script their own.
pub(crate) trait Transport: Send + Sync {
    /// Sends `req` and reads the whole response.
    fn send(&self, req: &Request<'_>) -> io::Result<Response>;
}

/// The parts of an `https://` URL a request needs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Url<'a> {
    /// The host, without the brackets of an IPv6 literal.
    pub(crate) host: &'a str,
    pub(crate) port: u16,
    /// `host[:port]` as written, for the `Host` field.
    pub(crate) authority: &'a str,
    /// The path and query, `/` if empty.
    pub(crate) target: &'a str,
}

impl<'a> Url<'a> {
    /// Parses an `https://` URL (RFC 8555 §6.1: ACME is HTTPS only).
    pub(crate) fn parse(url: &'a str) -> io::Result<Url<'a>> {
        let bad = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{url:?}: {why} (expected https://host[:port]/path)"),
            )
        };
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| bad("not an https URL"))?;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(end);
        let target = if target.is_empty() { "/" } else { target };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            None => 443,
            Some(p) => p.parse().map_err(|_| bad("bad port"))?,
        };
        if host.is_empty() || authority.contains('@') {
            return Err(bad("no host"));
        }
        Ok(Url {
            host,
            port,
            authority,
            target,
        })
    }
}

/// The HTTPS transport.
pub(crate) struct Https {
    tls: Arc<ClientConfig>,
}

impl Https {
    /// Verifies servers with the system's roots, or with the certificates of the PEM file
    /// `ca` instead.
    pub(crate) fn new(ca: Option<&Path>) -> io::Result<Https> {
        let roots = match ca {
            Some(path) => ca_file(path)?,
            None => system_roots()?,
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Https {
            tls: Arc::new(config),
        })
    }

    fn connect(&self, url: &Url<'_>) -> io::Result<StreamOwned<ClientConnection, TcpStream>> {
        let name = ServerName::try_from(url.host.to_owned()).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{}: {e}", url.host))
        })?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for addr in (url.host, url.port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(tcp) => {
                    tcp.set_read_timeout(Some(IO_TIMEOUT))?;
                    tcp.set_write_timeout(Some(IO_TIMEOUT))?;
                    tcp.set_nodelay(true)?;
                    let conn =
                        ClientConnection::new(self.tls.clone(), name).map_err(io::Error::other)?;
                    return Ok(StreamOwned::new(conn, tcp));
                }
                Err(e) => last = io::Error::new(e.kind(), format!("connecting to {addr}: {e}")),
            }
        }
        Err(last)
    }
}

impl Transport for Https {
    fn send(&self, req: &Request<'_>) -> io::Result<Response> {
        let url = Url::parse(req.url)?;
        let mut stream = self.connect(&url)?;
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: fibra-acme/{}\r\nConnection: close\r\n",
            req.method,
            url.target,
            url.authority,
            env!("CARGO_PKG_VERSION"),
        );
        for (name, value) in req.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if req.method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", req.body.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(req.body);
        stream.write_all(&out)?;
        stream.flush()?;
        read_response(&mut BufReader::new(stream), req.method == "HEAD")
    }
}

/// Reads a response from `r`; `head_only` for the answer to a HEAD request (no body).
pub(crate) fn read_response(r: &mut impl BufRead, head_only: bool) -> io::Result<Response> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = r
            .take((MAX_HEAD + 1 - before) as u64)
            .read_until(b'\n', &mut head)?;
        if n == 0 {
            return Err(invalid(
                "the connection closed before a complete response head",
            ));
        }
        if head.len() > MAX_HEAD {
            return Err(invalid("response head too large"));
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            break;
        }
    }
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut fields);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(invalid("incomplete response head")),
        Err(e) => return Err(invalid(&format!("bad response head: {e}"))),
    }
    let mut response = Response {
        status: parsed.code.unwrap_or(0),
        headers: parsed
            .headers
            .iter()
            .map(|h| {
                let value = String::from_utf8_lossy(h.value).trim().to_owned();
                (h.name.to_owned(), value)
            })
            .collect(),
        body: Vec::new(),
    };
    if head_only || response.status == 204 || response.status == 304 {
        return Ok(response);
    }
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    if chunked {
        response.body = read_chunked(r)?;
    } else if let Some(len) = response.header("content-length") {
        let len: usize = len.parse().map_err(|_| invalid("bad Content-Length"))?;
        if len > MAX_BODY {
            return Err(invalid("response body too large"));
        }
        response.body = vec![0; len];
        r.read_exact(&mut response.body)?;
    } else {
        r.take(MAX_BODY as u64 + 1)
            .read_to_end(&mut response.body)?;
        if response.body.len() > MAX_BODY {
            return Err(invalid("response body too large"));
        }
    }
    Ok(response)
}

/// A chunked body (RFC 9112 §7.1), its trailer fields skipped.
fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(r)?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
        if size == 0 {
            while !read_line(r)?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(invalid("response body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        if !read_line(r)?.is_empty() {
            return Err(invalid("chunk not followed by CRLF"));
        }
    }
}

/// One line without its line ending, at most 4 KiB.
fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    r.take(4096).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(invalid("truncated response"));
    }
    let text = String::from_utf8_lossy(&line);
    Ok(text.trim_end_matches(['\r', '\n']).to_owned())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// The system's trusted roots (`rustls-native-certs`: the distribution's bundle, or what
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` name). Fails if none can be loaded.
fn system_roots() -> io::Result<RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map_or_else(|| "none found".to_owned(), |e| e.to_string());
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no system root certificates for the ACME directory ({why}); name a CA file"),
        ));
    }
    Ok(roots)
}

/// The certificates of the PEM file `path` as trusted roots. Errors name the file.
fn ca_file(path: &Path) -> io::Result<RootCertStore> {
    let named = |kind: io::ErrorKind, why: String| {
        io::Error::new(kind, format!("{}: {why}", path.display()))
    };
    let pem = std::fs::read(path).map_err(|e| named(e.kind(), e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| {
            named(
                io::ErrorKind::InvalidData,
                format!("not a PEM certificate file: {e}"),
            )
        })?;
        roots.add(cert).map_err(|e| {
            named(
                io::ErrorKind::InvalidData,
                format!("unusable CA certificate: {e}"),
            )
        })?;
    }
    if roots.is_empty() {
        return Err(named(
            io::ErrorKind::InvalidData,
            "no certificate in the file".into(),
        ));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("https://acme-v02.api.letsencrypt.org/directory").unwrap();
        assert_eq!(
            u,
            Url {
                host: "acme-v02.api.letsencrypt.org",
                port: 443,
                authority: "acme-v02.api.letsencrypt.org",
                target: "/directory"
            }
        );
        let u = Url::parse("https://127.0.0.1:14000").unwrap();
        assert_eq!((u.host, u.port, u.target), ("127.0.0.1", 14000, "/"));
        let u = Url::parse("https://[::1]:14000/dir?x=1").unwrap();
        assert_eq!((u.host, u.port, u.authority), ("::1", 14000, "[::1]:14000"));
        assert_eq!(u.target, "/dir?x=1");
        for bad in [
            "http://ca/dir",
            "https:///dir",
            "https://ca:x/",
            "https://u@ca/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    fn read(bytes: &[u8]) -> io::Result<Response> {
        read_response(&mut &bytes[..], false)
    }

    #[test]
    fn responses_by_length_chunks_and_close() {
        let r = read(b"HTTP/1.1 201 Created\r\nLocation: https://ca/acct/1\r\nReplay-Nonce: abc\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.header("location"), Some("https://ca/acct/1"));
        assert_eq!(r.header("REPLAY-NONCE"), Some("abc"));
        assert_eq!(r.body, b"{}");

        let r = read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nabcd\r\n3\r\nefg\r\n0\r\nTrailer: 1\r\n\r\n").unwrap();
        assert_eq!(r.body, b"abcdefg");

        let r = read(b"HTTP/1.1 200 OK\r\n\r\nuntil the end").unwrap();
        assert_eq!(r.body, b"until the end");

        let r = read_response(
            &mut &b"HTTP/1.1 200 OK\r\nReplay-Nonce: n\r\nContent-Length: 5\r\n\r\n"[..],
            true,
        )
        .unwrap();
        assert!(r.body.is_empty());

        assert!(read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort").is_err());
        assert!(read(b"HTTP/1.1 200 OK\r\nContent-").is_err());
        assert!(read(b"garbage\r\n\r\n").is_err());
    }
}
