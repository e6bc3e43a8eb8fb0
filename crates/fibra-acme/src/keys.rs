//! The certificates and keys this crate makes or loads: the server's certified keys (from
//! PEM), the self-signed fallback, the tls-alpn-01 challenge certificate, and the key and
//! CSR of each order.

use std::io;
use std::sync::Arc;

use rcgen::{CertificateParams, CustomExtension, KeyPair, PKCS_ECDSA_P256_SHA256};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;

use crate::jws::sha256;

fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// A certified key from a PEM chain (leaf first) and PEM private key, checked to match.
pub(crate) fn certified_key(chain_pem: &[u8], key_pem: &[u8]) -> io::Result<Arc<CertifiedKey>> {
    let chain = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("no certificate in the chain"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid(format!("key: {e}")))?;
    let certified = CertifiedKey::from_der(chain, key, &provider()).map_err(invalid)?;
    Ok(Arc::new(certified))
}

/// A certified key of `cert`, just made for `pair`. Not `CertifiedKey::from_der`: its check
/// that the two match parses the certificate with webpki, which rejects the critical
/// `acmeIdentifier` extension it does not know.
fn from_rcgen(cert: CertificateDer<'static>, pair: &KeyPair) -> io::Result<Arc<CertifiedKey>> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pair.serialize_der()));
    let signer = provider()
        .key_provider
        .load_private_key(key)
        .map_err(invalid)?;
    Ok(Arc::new(CertifiedKey::new(vec![cert], signer)))
}

/// A new P-256 key.
fn new_key() -> io::Result<KeyPair> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(io::Error::other)
}

/// A self-signed certificate for `names`, served until the CA's is there. Browsers warn
/// about it; it lets the server start and answer (and tells an operator what is missing).
pub(crate) fn self_signed(names: &[String]) -> io::Result<Arc<CertifiedKey>> {
    let key = new_key()?;
    let mut params = CertificateParams::new(names.to_vec()).map_err(invalid)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("{} (self-signed: no certificate from the CA yet)", names[0]),
    );
    let cert = params.self_signed(&key).map_err(io::Error::other)?;
    from_rcgen(cert.der().clone(), &key)
}

/// The tls-alpn-01 certificate for `name` (RFC 8737 §3): self-signed, the name as its only
/// SAN, and the critical `acmeIdentifier` extension (OID 1.3.6.1.5.5.7.1.31) holding the
/// SHA-256 of the key authorization.
pub(crate) fn alpn_challenge(name: &str, key_authorization: &str) -> io::Result<Arc<CertifiedKey>> {
    let key = new_key()?;
    let mut params = CertificateParams::new(vec![name.to_owned()]).map_err(invalid)?;
    params.custom_extensions = vec![CustomExtension::new_acme_identifier(&sha256(
        key_authorization.as_bytes(),
    ))];
    let cert = params.self_signed(&key).map_err(io::Error::other)?;
    from_rcgen(cert.der().clone(), &key)
}

/// A new key for an order's certificate (PKCS#8 PEM) and the CSR for `names` it signs
/// (DER). A new key per certificate: a renewal never reuses the old one.
pub(crate) fn key_and_csr(names: &[String]) -> io::Result<(String, Vec<u8>)> {
    let key = new_key()?;
    let params = CertificateParams::new(names.to_vec()).map_err(invalid)?;
    let csr = params.serialize_request(&key).map_err(io::Error::other)?;
    Ok((key.serialize_pem(), csr.der().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_certificate_carries_the_critical_acme_identifier() {
        let certified = alpn_challenge("a.example.com", "token.thumb").unwrap();
        let der = certified.end_entity_cert().unwrap().to_vec();
        // The extension: OID 1.3.6.1.5.5.7.1.31, critical TRUE, then an OCTET STRING
        // wrapping the DER OCTET STRING of the 32-byte digest.
        let oid = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1f];
        let digest = sha256(b"token.thumb");
        let mut ext = oid.to_vec();
        ext.extend_from_slice(&[0x01, 0x01, 0xff, 0x04, 0x22, 0x04, 0x20]);
        ext.extend_from_slice(&digest);
        assert!(
            der.windows(ext.len()).any(|w| w == ext),
            "extension not found"
        );
        let info = crate::certinfo::CertInfo::parse(&der).unwrap();
        assert_eq!(info.dns_names, ["a.example.com"]);
    }

    #[test]
    fn pem_pairs_load_and_must_match() {
        let names = vec!["a.example.com".to_owned()];
        let (key_pem, csr) = key_and_csr(&names).unwrap();
        assert!(!csr.is_empty());
        let key = KeyPair::from_pem(&key_pem).unwrap();
        let cert = CertificateParams::new(names.clone())
            .unwrap()
            .self_signed(&key)
            .unwrap();
        certified_key(cert.pem().as_bytes(), key_pem.as_bytes()).unwrap();
        let (other_key, _) = key_and_csr(&names).unwrap();
        assert!(certified_key(cert.pem().as_bytes(), other_key.as_bytes()).is_err());
        assert!(certified_key(b"", key_pem.as_bytes()).is_err());
        assert!(self_signed(&names).is_ok());
    }
}
