//! `https://` targets: the rustls client configuration of `fibra bench`.
//!
//! Certificates are verified against `--cacert FILE` (PEM; the platform's roots are not
//! loaded), or not at all with `--insecure`, which is for benchmarking only: a client that
//! accepts any certificate offers no protection against an impostor.
//!
//! Session resumption is off, so every new connection is a full handshake: without `-k`
//! (one connection per request) a run measures handshakes per second; with `-k` connections
//! are reused and handshakes are rare.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How the server's certificate is checked.
#[derive(Debug, Clone, Copy)]
pub enum Verify<'a> {
    /// Against the CA certificates of this PEM file.
    CaFile(&'a Path),
    /// Not at all (`--insecure`, for benchmarking only).
    Nothing,
}

/// A client configuration for `fibra bench`: TLS 1.3 and 1.2, ALPN `http/1.1`, no session
/// resumption (every connection a full handshake), the aws-lc-rs provider.
pub fn client_config(verify: Verify<'_>) -> Result<Arc<ClientConfig>, String> {
    let mut config = verified(verify, rustls::DEFAULT_VERSIONS)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The client configuration of `--h3`: as [`client_config`], but TLS 1.3 only (QUIC's) and
/// ALPN `h3`.
pub fn quic_client_config(verify: Verify<'_>) -> Result<ClientConfig, String> {
    let mut config = verified(verify, &[&rustls::version::TLS13])?;
    config.alpn_protocols = vec![b"h3".to_vec()];
    Ok(config)
}

/// A configuration with `versions`, checking certificates as `verify` says, without
/// session resumption.
fn verified(
    verify: Verify<'_>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| e.to_string())?;
    let mut config = match verify {
        Verify::CaFile(path) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "--cacert {}: no usable certificate",
                    path.display()
                ));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth(),
    };
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

/// `--insecure`: accepts any server certificate, for benchmarking only (a server's
/// signatures are still checked, so the handshake costs what a verifying one does, minus
/// the chain check).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
