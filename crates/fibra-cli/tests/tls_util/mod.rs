//! Helpers for the TLS integration tests of the `fibra` binary: a self-signed certificate in
//! a temporary directory, `fibra hello` started with the test's flags, and the https address
//! it announces.

#![allow(dead_code)]

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// A temporary directory with a self-signed certificate for `localhost`, removed on drop.
pub struct Certs {
    pub dir: PathBuf,
    pub der: CertificateDer<'static>,
}

impl Certs {
    pub fn new(name: &str) -> Certs {
        let dir = std::env::temp_dir().join(format!("fibra-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(dir.join("cert.pem"), ck.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), ck.signing_key.serialize_pem()).unwrap();
        Certs {
            dir,
            der: ck.cert.der().clone(),
        }
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().to_string()
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running `fibra hello`, killed on drop.
pub struct Hello(pub Child);

impl Drop for Hello {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `fibra hello` on 127.0.0.1, an ephemeral port and one worker, with `extra` flags.
pub fn hello(extra: &[&str]) -> Command {
    fibra_on_loopback(&["hello"], extra)
}

/// `fibra serve ROOT` on 127.0.0.1, an ephemeral port and one worker, with `extra` flags.
pub fn serve(root: &str, extra: &[&str]) -> Command {
    fibra_on_loopback(&["serve", root], extra)
}

/// `fibra COMMAND --addr 127.0.0.1 --port 0 --workers 1 EXTRA`, stdin closed.
fn fibra_on_loopback(command: &[&str], extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fibra"));
    cmd.args(command)
        .args(["--addr", "127.0.0.1", "--port", "0", "--workers", "1"])
        .args(extra)
        .stdin(Stdio::null());
    cmd
}

/// The `host:port` of the https URL at the end of `fibra hello`'s first stdout line.
pub fn https_addr(line: &str) -> String {
    line.trim()
        .rsplit(' ')
        .next()
        .and_then(|u| u.strip_prefix("https://"))
        .unwrap_or_else(|| panic!("fibra hello printed {line:?}"))
        .trim_end_matches('/')
        .to_string()
}

/// A TLS connection to `addr` trusting only `der`, for `localhost`, without session resumption
/// (a resumed session would not show which certificate the server holds now).
pub fn connect_trusting(
    der: &CertificateDer<'static>,
    addr: &str,
) -> StreamOwned<ClientConnection, TcpStream> {
    let mut roots = RootCertStore::empty();
    roots.add(der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    let conn = ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
        .unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).expect("handshake");
    }
    tls
}
