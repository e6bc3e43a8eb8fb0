//! Helpers for the tests of `https://` upstreams: a test CA and a certificate it signed for
//! `localhost`, and hand-made TLS upstreams on plain threads (rustls's server over a
//! blocking socket), whose scripts control every record, `close_notify` included.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::{ServerConnection, StreamOwned};

use crate::util;

/// A temporary directory with a CA (`ca.pem`) and a certificate it signed for `localhost`
/// (`cert.pem`, `key.pem`); removed when dropped.
pub struct TestPki {
    dir: PathBuf,
}

impl TestPki {
    /// `name` keeps the directories of concurrent tests apart.
    pub fn new(name: &str) -> TestPki {
        let dir =
            std::env::temp_dir().join(format!("fibra-proxy-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("fibra test CA {name}"));
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), leaf_key.serialize_pem()).unwrap();
        TestPki { dir }
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
}

impl Drop for TestPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TLS session of a hand-made upstream.
pub type TlsConn = StreamOwned<ServerConnection, TcpStream>;

/// A TLS upstream on plain threads with `pki`'s certificate: each connection runs
/// `script(session, n)` on its own thread (`n` from 0), the handshake done.
pub fn raw_tls_upstream<F>(pki: &TestPki, script: F) -> SocketAddr
where
    F: Fn(TlsConn, usize) + Send + Sync + 'static,
{
    let config =
        fibra_http::tls::server_config_from_pem(pki.path("cert.pem"), pki.path("key.pem")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            stream.set_read_timeout(Some(util::CLIENT_TIMEOUT)).unwrap();
            stream
                .set_write_timeout(Some(util::CLIENT_TIMEOUT))
                .unwrap();
            let (config, script) = (config.clone(), script.clone());
            std::thread::spawn(move || {
                let mut conn = ServerConnection::new(config).unwrap();
                while conn.is_handshaking() {
                    if conn.complete_io(&mut stream).is_err() {
                        return;
                    }
                }
                script(StreamOwned::new(conn, stream), n)
            });
        }
    });
    addr
}

/// Reads one request head (through the empty line) from a session; `None` at its end.
pub fn read_tls_head(s: &mut TlsConn) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8(head).unwrap())
}

/// How a session's peer ended it.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// With `close_notify`.
    CloseNotify,
    /// The TCP connection closed without it.
    Truncated,
    /// Bytes came instead (how many), or an error other than an end.
    Other(String),
}

/// Reads until the peer ends the session and says how.
pub fn read_to_end_of_session(s: &mut TlsConn) -> End {
    let mut buf = [0u8; 4096];
    match s.read(&mut buf) {
        Ok(0) => End::CloseNotify,
        Ok(n) => End::Other(format!("{n} bytes")),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => End::Truncated,
        Err(e) => End::Other(e.to_string()),
    }
}

/// Sends `bytes` and flushes the records.
pub fn send(s: &mut TlsConn, bytes: &[u8]) -> io::Result<()> {
    s.write_all(bytes)?;
    s.flush()
}
