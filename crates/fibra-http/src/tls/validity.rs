//! A warning for a certificate outside its validity period (expired, or not yet valid): the
//! server still uses it, as nginx does, but says so at start.
//!
//! The dates come from a short walk of the certificate's DER ([`super::der`]).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

#[cfg(test)]
use super::der::days_from_civil;
use super::der::{validity, Validity};

/// A warning naming `cert_chain` (a PEM file, leaf first) and the date if its leaf
/// certificate has expired or is not yet valid now; `None` if it is valid, or if the file
/// cannot be read or parsed (the loader reports those errors).
pub fn validity_warning(cert_chain: impl AsRef<Path>) -> Option<String> {
    let path = cert_chain.as_ref();
    let pem = std::fs::read(path).ok()?;
    let leaf = CertificateDer::pem_slice_iter(&pem).next()?.ok()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    let problem = validity_problem(&leaf, now)?;
    Some(format!("{}: {problem}", path.display()))
}

/// What is wrong with the validity period of `der` at `now` (seconds since the Unix epoch),
/// if anything; `None` also for a certificate whose dates cannot be read.
fn validity_problem(der: &[u8], now: i64) -> Option<String> {
    let Validity {
        not_before,
        not_after,
        ..
    } = validity(der)?;
    if now > not_after.unix_secs() {
        Some(format!("certificate expired on {not_after}"))
    } else if now < not_before.unix_secs() {
        Some(format!("certificate not valid before {not_before}"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn dates_convert() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }

    #[test]
    fn expired_not_yet_valid_and_valid() {
        // 2030-01-01T00:00:00Z
        let now = days_from_civil(2030, 1, 1) * 86_400;
        let expired = cert((2020, 1, 1), (2021, 6, 15));
        assert_eq!(
            validity_problem(&expired, now).unwrap(),
            "certificate expired on 2021-06-15 00:00:00 UTC"
        );
        // A GeneralizedTime (year 2050 and later).
        let future = cert((2055, 2, 3), (2060, 1, 1));
        assert_eq!(
            validity_problem(&future, now).unwrap(),
            "certificate not valid before 2055-02-03 00:00:00 UTC"
        );
        assert_eq!(
            validity_problem(&cert((2029, 1, 1), (2031, 1, 1)), now),
            None
        );
        assert_eq!(validity_problem(b"not a certificate", now), None);
    }
}
