//! What the renewal schedule needs from a certificate: its validity period and the DNS names
//! it covers, from a short walk of its DER.
//!
//! The walk is fibra-http's (`fibra_http::tls::der`, which its `validity_warning` uses too):
//! `validity` gives the dates and where the fields after them start, and `san_dns_names`
//! goes on from there with `element` to the subject alternative names.

use std::time::SystemTime;

use fibra_http::tls::der::{element, validity};

/// The fields of a certificate this crate reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertInfo {
    pub(crate) not_before: SystemTime,
    pub(crate) not_after: SystemTime,
    /// The `dNSName`s of the subject alternative names, lowercase.
    pub(crate) dns_names: Vec<String>,
}

impl CertInfo {
    /// The fields of the DER certificate `der`; `None` if it cannot be read.
    pub(crate) fn parse(der: &[u8]) -> Option<CertInfo> {
        let validity = validity(der)?;
        let not_before = validity.not_before.system_time()?;
        let not_after = validity.not_after.system_time()?;
        // subject, subjectPublicKeyInfo, then the optional unique IDs and extensions.
        let mut rest = element(element(validity.rest)?.2)?.2;
        let mut dns_names = Vec::new();
        while let Some((tag, value, after)) = element(rest) {
            if tag == 0xa3 {
                dns_names = san_dns_names(value)?;
            }
            rest = after;
        }
        Some(CertInfo {
            not_before,
            not_after,
            dns_names,
        })
    }

    /// When this certificate should be renewed: once `fraction` of its lifetime has passed.
    pub(crate) fn renew_at(&self, fraction: f64) -> SystemTime {
        let lifetime = self
            .not_after
            .duration_since(self.not_before)
            .unwrap_or_default();
        self.not_before + lifetime.mul_f64(fraction.clamp(0.0, 1.0))
    }
}

/// The dNSNames of the subjectAltName extension, from the `[3]` extensions field's contents.
fn san_dns_names(extensions: &[u8]) -> Option<Vec<String>> {
    // id-ce-subjectAltName, 2.5.29.17.
    const SAN: &[u8] = &[0x55, 0x1d, 0x11];
    let (_, mut list, _) = element(extensions)?;
    let mut names = Vec::new();
    while let Some((_, ext, after)) = element(list) {
        list = after;
        let (tag, oid, rest) = element(ext)?;
        if tag != 0x06 || oid != SAN {
            continue;
        }
        // critical BOOLEAN DEFAULT FALSE, then the OCTET STRING.
        let (mut tag, mut value, rest) = element(rest)?;
        if tag == 0x01 {
            (tag, value, _) = element(rest)?;
        }
        if tag != 0x04 {
            return None;
        }
        let (_, mut general_names, _) = element(value)?;
        while let Some((tag, name, after)) = element(general_names) {
            general_names = after;
            // dNSName [2] IMPLICIT IA5String.
            if tag == 0x82 {
                names.push(std::str::from_utf8(name).ok()?.to_ascii_lowercase());
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn secs(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    #[test]
    fn validity_and_names_of_an_rcgen_certificate() {
        let mut params =
            rcgen::CertificateParams::new(vec!["A.example.com".into(), "b.example.org".into()])
                .unwrap();
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
        params.not_before = rcgen::date_time_ymd(2030, 1, 1);
        // A GeneralizedTime (years from 2050 on).
        params.not_after = rcgen::date_time_ymd(2060, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let info = CertInfo::parse(cert.der()).unwrap();
        assert_eq!(secs(info.not_before), 1_893_456_000);
        assert_eq!(secs(info.not_after), 2_840_140_800);
        assert_eq!(info.dns_names, ["a.example.com", "b.example.org"]);
        assert!(CertInfo::parse(b"not a certificate").is_none());
    }

    #[test]
    fn renewal_point() {
        let info = CertInfo {
            not_before: UNIX_EPOCH + Duration::from_secs(1000),
            not_after: UNIX_EPOCH + Duration::from_secs(1000 + 90),
            dns_names: Vec::new(),
        };
        assert_eq!(secs(info.renew_at(2.0 / 3.0)), 1060);
        assert_eq!(secs(info.renew_at(0.0)), 1000);
    }
}
