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

/// How a read's result ends a session, or `None` when it brought `n` bytes.
fn end_of(read: &io::Result<usize>) -> Option<End> {
    match read {
        Ok(0) => Some(End::CloseNotify),
        Ok(_) => None,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Some(End::Truncated),
        Err(e) => Some(End::Other(e.to_string())),
    }
}

/// Reads until the peer ends the session and says how (bytes instead are `Other`).
pub fn read_to_end_of_session(s: &mut TlsConn) -> End {
    let mut buf = [0u8; 4096];
    let read = s.read(&mut buf);
    end_of(&read).unwrap_or_else(|| End::Other(format!("{} bytes", read.unwrap_or(0))))
}

/// Sends back what arrives until the peer ends the session, and says how it ended.
pub fn echo_to_end_of_session(s: &mut TlsConn) -> End {
    let mut buf = [0u8; 4096];
    loop {
        let read = s.read(&mut buf);
        if let Some(end) = end_of(&read) {
            return end;
        }
        let n = read.unwrap_or(0);
        send(s, &buf[..n]).unwrap();
    }
}

/// Sends `bytes` and flushes the records.
pub fn send(s: &mut TlsConn, bytes: &[u8]) -> io::Result<()> {
    s.write_all(bytes)?;
    s.flush()
}
