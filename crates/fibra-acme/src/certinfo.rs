//! What the renewal schedule needs from a certificate: its validity period and the DNS names
//! it covers, from a short walk of its DER.
//!
//! The same approach as fibra-http's `validity_warning`: rustls-webpki checks these fields
//! but does not expose them, and a full X.509 parser (x509-parser, with nom and asn1-rs)
//! would be a large dependency for three fields.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
        const SEQUENCE: u8 = 0x30;
        let (tag, cert, _) = element(der)?;
        let (tag2, tbs, _) = element(cert)?;
        if tag != SEQUENCE || tag2 != SEQUENCE {
            return None;
        }
        let mut rest = tbs;
        // version [0] EXPLICIT, optional.
        let (tag, _, after) = element(rest)?;
        if tag == 0xa0 {
            rest = after;
        }
        // serialNumber, signature, issuer.
        for _ in 0..3 {
            rest = element(rest)?.2;
        }
        let (tag, validity, after) = element(rest)?;
        if tag != SEQUENCE {
            return None;
        }
        let (tag, not_before, more) = element(validity)?;
        let not_before = time(tag, not_before)?;
        let (tag, not_after, _) = element(more)?;
        let not_after = time(tag, not_after)?;
        // subject, subjectPublicKeyInfo, then the optional unique IDs and extensions.
        let mut rest = element(element(after)?.2)?.2;
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

/// One DER element at the start of `input`: (tag, contents, the rest).
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, &b| (l << 8) | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A UTCTime (tag 0x17, `YYMMDDHHMMSSZ`) or GeneralizedTime (0x18, `YYYYMMDDHHMMSSZ`).
fn time(tag: u8, value: &[u8]) -> Option<SystemTime> {
    let s = std::str::from_utf8(value).ok()?.strip_suffix('Z')?;
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (year, rest) = match (tag, s.len()) {
        // RFC 5280: two-digit years 50..99 are 19xx, 00..49 20xx.
        (0x17, 12) => {
            let yy = num(0..2)?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, 2)
        }
        (0x18, 14) => (num(0..4)?, 4),
        _ => return None,
    };
    let [month, day, hour, min, sec] = [0, 2, 4, 6, 8].map(|o| num(rest + o..rest + o + 2));
    let (month, day, hour, min, sec) = (month?, day?, hour?, min?, sec?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
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
