//! A warning for a certificate outside its validity period (expired, or not yet valid): the
//! server still uses it, as nginx does, but says so at start.
//!
//! The dates come from a short walk of the certificate's DER (`tbsCertificate.validity`):
//! rustls-webpki checks them but does not expose them, and a full X.509 parser would be a
//! large dependency for two fields.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

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
    let (not_before, not_after) = validity(der)?;
    if now > not_after.secs {
        Some(format!("certificate expired on {}", not_after.text))
    } else if now < not_before.secs {
        Some(format!("certificate not valid before {}", not_before.text))
    } else {
        None
    }
}

/// A date of the validity period.
struct Date {
    /// Seconds since the Unix epoch.
    secs: i64,
    /// As `YYYY-MM-DD HH:MM:SS UTC`.
    text: String,
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

/// `tbsCertificate.validity` of a DER certificate: (notBefore, notAfter).
fn validity(der: &[u8]) -> Option<(Date, Date)> {
    const SEQUENCE: u8 = 0x30;
    let (tag, cert, _) = element(der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, tbs, _) = element(cert)?;
    if tag != SEQUENCE {
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
    let (tag, validity, _) = element(rest)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, not_before, rest) = element(validity)?;
    let not_before = time(tag, not_before)?;
    let (tag, not_after, _) = element(rest)?;
    Some((not_before, time(tag, not_after)?))
}

/// A UTCTime (tag 0x17, `YYMMDDHHMMSSZ`) or GeneralizedTime (0x18, `YYYYMMDDHHMMSSZ`).
fn time(tag: u8, value: &[u8]) -> Option<Date> {
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
    let text = format!("{year:04}-{month:02}-{day:02} {hour:02}:{min:02}:{sec:02} UTC");
    Some(Date { secs, text })
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
