//! The TEST-ONLY certificate and key of the fuzz targets that need a TLS server
//! (`tls_accept`, `quic_datagram`).

/// TEST-ONLY certificate (self-signed, CN=localhost, P-256, valid until 2126), generated once
/// with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes
/// -subj /CN=localhost -days 36500`. Not a secret; never use it outside the fuzz targets.
pub const TEST_ONLY_CERT_PEM: &str = "-----BEGIN CERTIFICATE-----
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
pub const TEST_ONLY_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0pIf6V+3XKdTyZRw
8X2ab9/WERh4zTq2NQS6uCDhHNGhRANCAATlVA1h3qBlSJrE/IKeDZGD8B/ZQ1yd
tBwU8H1PyheBpbIo+XGzxzaEfTTWiDUWj542v26u73P0Hy9pKR5py7wP
-----END PRIVATE KEY-----
";
