//! Fuzzes the TLS accept path: `fibra_http::serve_connection` over
//! `fibra_http::tls::Tls<Mock>`, an in-memory transport whose reads hand out the fuzz input
//! as the client's bytes (ClientHellos, records, plain HTTP, garbage). The server
//! configuration is the production one (`tls::server_config_from_pem`: TLS 1.3 and 1.2,
//! ALPN, resumption) over a fixed test-only certificate.
//!
//! Input layout: `[read_size, wire...]`, `read_size` the bytes handed out per `read`
//! (1..=255; 0 counts as 1, 255 means "all at once"). An odd `read_size` runs the CLI's mode
//! instead, the configuration chosen by the ClientHello (`tls::choose_config_with_resolver`,
//! `Tls::choosing`), whose ClientHello goes through rustls's `Acceptor` first.
//!
//! Checks besides "no panic, hang or leak":
//! - whatever the server wrote is either exactly the plain-HTTP `400` answer, or a sequence
//!   of whole TLS records: content type 20–23 (change_cipher_spec, alert, handshake,
//!   application_data), version `0x03 0x01..=0x04`, a declared length at most
//!   2^14 + 2048 that fits in what was written, no trailing bytes;
//! - the connection loop ends when the input ends: `serve_connection` returns, after at most
//!   a few reads at the end of the stream (no spinning on EOF).
#![no_main]

use std::sync::{Arc, OnceLock};

use fibra_http::tls::{ChooseConfig, Tls};
use fibra_http::{Response, Settings};
use libfuzzer_sys::fuzz_target;
use rustls::{ServerConfig, ServerConnection};

#[path = "common/test_only_cert.rs"]
mod test_only_cert;
use test_only_cert::{TEST_ONLY_CERT_PEM, TEST_ONLY_KEY_PEM};

/// The answer `Tls` gives to plain HTTP on the TLS port (a copy of `stream.rs`'s
/// `PLAIN_HTTP_REPLY`).
const PLAIN_HTTP_REPLY: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\
Content-Length: 46\r\nConnection: close\r\n\r\nThe plain HTTP request was sent to HTTPS port\n";

/// The largest record rustls writes: 2^14 bytes of plaintext plus the TLS 1.2 expansion
/// allowance (RFC 5246 §6.2.3).
const MAX_RECORD: usize = (1 << 14) + 2048;

/// Reads at the end of the input beyond which the loop counts as spinning.
const MAX_EOF_READS: u32 = 8;

/// The production configuration (`server_config_from_pem`) over the test-only pair, built
/// once (the PEM goes through temporary files, which are removed at once).
fn config() -> Arc<ServerConfig> {
    configs().0.clone()
}

/// The production configurations over the test-only pair, built once (the PEM goes through
/// temporary files, which are removed at once): the fixed one and the CLI's chooser.
fn configs() -> &'static (Arc<ServerConfig>, Arc<ChooseConfig>) {
    static CONFIGS: OnceLock<(Arc<ServerConfig>, Arc<ChooseConfig>)> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let dir = std::env::temp_dir();
        let id = std::process::id();
        let cert = dir.join(format!("fibra-fuzz-tls-{id}.crt"));
        let key = dir.join(format!("fibra-fuzz-tls-{id}.key"));
        std::fs::write(&cert, TEST_ONLY_CERT_PEM).unwrap();
        std::fs::write(&key, TEST_ONLY_KEY_PEM).unwrap();
        let config = fibra_http::tls::server_config_from_pem(&cert, &key);
        let resolver = fibra_http::tls::CertResolver::from_pem(&[(&cert, &key)]);
        let _ = std::fs::remove_file(&cert);
        let _ = std::fs::remove_file(&key);
        let choose = fibra_http::tls::choose_config_with_resolver(
            resolver.expect("test-only certificate and key"),
        );
        (
            config.expect("test-only certificate and key"),
            choose.expect("configurations"),
        )
    })
}

#[path = "common/mock.rs"]
mod mock;
use mock::Mock;

/// Checks what the server wrote; see the module docs.
fn check_output(out: &[u8]) {
    if out == PLAIN_HTTP_REPLY {
        return;
    }
    let mut rest = out;
    while !rest.is_empty() {
        let [typ, major, minor, hi, lo, ..] = *rest else {
            panic!("truncated TLS record header {rest:02x?} in {out:02x?}");
        };
        assert!(
            (20..=23).contains(&typ),
            "content type {typ} in {:?}",
            String::from_utf8_lossy(out)
        );
        assert!(
            major == 3 && (1..=4).contains(&minor),
            "record version {major:#04x} {minor:#04x}"
        );
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        assert!(len <= MAX_RECORD, "record of {len} bytes");
        assert!(
            5 + len <= rest.len(),
            "record of {len} bytes, {} written",
            rest.len() - 5
        );
        rest = &rest[5 + len..];
    }
}

fuzz_target!(|data: &[u8]| {
    let [read_size, wire @ ..] = data else {
        return;
    };
    let mock = Mock::new(
        wire,
        if *read_size == 255 {
            usize::MAX
        } else {
            usize::from(*read_size)
        },
    )
    .max_eof_reads(MAX_EOF_READS)
    // Short writes exercise the callers' write loops (rustls's `write_tls`).
    .write_piece(4000);
    let out = mock.out.clone();
    let tls = if read_size % 2 == 1 {
        Tls::choosing(mock, configs().1.clone())
    } else {
        Tls::new(
            mock,
            ServerConnection::new(config()).expect("server session"),
        )
    };
    fibra_http::serve_connection(tls, &Settings::default(), &|_req| {
        Response::new("ok".into())
    });
    check_output(&out.lock().unwrap());
});
