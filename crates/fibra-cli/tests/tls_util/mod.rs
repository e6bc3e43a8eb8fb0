//! Helpers for the TLS integration tests of the `fibra` binary: a self-signed certificate in
//! a temporary directory, `fibra hello` started with the test's flags, and the https address
//! it announces.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use rustls::pki_types::CertificateDer;

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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fibra"));
    cmd.args([
        "hello",
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "1",
    ])
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
