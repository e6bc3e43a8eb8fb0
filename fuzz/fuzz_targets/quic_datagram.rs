//! Fuzzes fibra-quic's server datagram entry (`fibra_quic::fuzz::Server::feed`, the entry
//! point the `fuzzing` feature exposes): arbitrary datagrams from 4 client ports fed to a
//! fresh quinn-proto server endpoint through the driver's own `handle_datagram` and
//! `drive_conn`, with the clock moved on between some of them, and what the server would
//! send taken from its outbox. The TLS configuration is fibra-quic's (`Config::server_tls`,
//! ALPN `h3`) over a fixed test-only certificate, built once.
//!
//! Checks besides "no panic, hang or leak": the server sends at most 3× what it received
//! (RFC 9000 §8.1, counted over all source addresses together, as the limit counts every
//! datagram attributed to a connection); the count of handshakes in progress matches the
//! connections; with a Retry bound of 0 (flags bit 0) no connection is ever accepted.
//!
//! Input layout: a flags byte, then records `[head, len_hi, len_lo, bytes...]` (`head` bits
//! 0–1: the source port; bit 7: move the clock on by 1 s and fire due timers first).
#![no_main]

use std::sync::OnceLock;

use fibra_quic::rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use libfuzzer_sys::fuzz_target;

#[path = "common/test_only_cert.rs"]
mod test_only_cert;
use test_only_cert::{TEST_ONLY_CERT_PEM, TEST_ONLY_KEY_PEM};

/// The server configuration, built once: rustls's setup costs far more than one input.
fn server() -> &'static fibra_quic::fuzz::Server {
    static SERVER: OnceLock<fibra_quic::fuzz::Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let cert = CertificateDer::from_pem_slice(TEST_ONLY_CERT_PEM.as_bytes()).unwrap();
        let key = PrivateKeyDer::from_pem_slice(TEST_ONLY_KEY_PEM.as_bytes()).unwrap();
        fibra_quic::fuzz::Server::new(vec![cert], key).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    server().feed(data);
});
