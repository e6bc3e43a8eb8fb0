//! Fuzzes fibra-quic's server datagram entry (`fibra_quic::fuzz::Server::feed`, the entry
//! point the `fuzzing` feature exposes): arbitrary datagrams from 4 client ports fed to a
//! fresh quinn-proto server endpoint through the driver's own `handle_datagram` and
//! `drive_conn`, with the clock moved on between some of them, and what the server would
//! send taken from its outbox. The TLS configuration is fibra-quic's (`Config::server_tls`,
//! ALPN `h3`) over a fixed test-only certificate, built once.
//!
//! Checks besides "no panic, hang or leak": no source address is sent more than 3× what it
//! sent (RFC 9000 §8.1); the count of handshakes in progress matches the connections; with
//! a Retry bound of 0 (flags bit 0) no connection is ever accepted.
//!
//! Input layout: a flags byte, then records `[head, len_hi, len_lo, bytes...]` (`head` bits
//! 0–1: the source port; bit 7: move the clock on by 1 s and fire due timers first).
#![no_main]

use std::sync::OnceLock;

use fibra_quic::rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use libfuzzer_sys::fuzz_target;

/// TEST-ONLY certificate (self-signed, CN=localhost, P-256, valid until 2126), generated once
/// with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes
/// -subj /CN=localhost -days 36500`. Not a secret; never use it outside the fuzz targets
/// (`tls_accept` has the same one).
const TEST_ONLY_CERT_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUIgEZzcyDal/pwprXa0kYRzDZfLgwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNTE0NDM0OVoYDzIxMjYxMTAx
MTQ0MzQ5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATlVA1h3qBlSJrE/IKeDZGD8B/ZQ1ydtBwU8H1PyheBpbIo+XGzxzaE
fTTWiDUWj542v26u73P0Hy9pKR5py7wPo1MwUTAdBgNVHQ4EFgQUWcvkD5TUXheK
NyAUL86z53zNWlgwHwYDVR0jBBgwFoAUWcvkD5TUXheKNyAUL86z53zNWlgwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAxIJezZxEKztjRs+VD/US
BndjCiya1NZO4dQ2iuoiphQCIE8PKGDue49P7hLRZdyjbSSpsFcabTI9OcWZCCJL
bOVR
-----END CERTIFICATE-----
";

/// TEST-ONLY private key of [`TEST_ONLY_CERT_PEM`] (PKCS#8). Public on purpose; it protects
/// nothing.
const TEST_ONLY_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0pIf6V+3XKdTyZRw
8X2ab9/WERh4zTq2NQS6uCDhHNGhRANCAATlVA1h3qBlSJrE/IKeDZGD8B/ZQ1yd
tBwU8H1PyheBpbIo+XGzxzaEfTTWiDUWj542v26u73P0Hy9pKR5py7wP
-----END PRIVATE KEY-----
";

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
