//! A short walk of a DER X.509 certificate: its elements, and the validity period of its
//! `tbsCertificate` (notBefore, notAfter).
//!
//! rustls-webpki checks these fields but does not expose them, and a full X.509 parser
//! (x509-parser, with nom and asn1-rs) would be a large dependency for a few fields.
//! [`validity_warning`](super::validity_warning) reads the dates here; fibra-acme reads them
//! too, and walks on with [`element`] to the subject alternative names.
//!
//! ```
//! use fibra_http::tls::der;
//!
//! # let key = rcgen::KeyPair::generate().unwrap();
//! # let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
//! # params.not_before = rcgen::date_time_ymd(2030, 1, 1);
//! # params.not_after = rcgen::date_time_ymd(2031, 6, 15);
//! # let cert = params.self_signed(&key).unwrap();
//! # let der: &[u8] = cert.der();
//! let validity = der::validity(der).expect("a certificate");
//! assert_eq!(validity.not_before.to_string(), "2030-01-01 00:00:00 UTC");
//! assert_eq!(validity.not_after.unix_secs(), 1_939_248_000);
//! ```

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The tag of a SEQUENCE (constructed).
const SEQUENCE: u8 = 0x30;

/// One DER element at the start of `input`: (tag, contents, the rest). `None` if `input` is
/// too short for the element's header or the length it states, or states a length in more
/// than 4 bytes. Only one-byte tags are read (all those of a certificate).
pub fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
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

/// `tbsCertificate.validity` of a certificate, and what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity<'a> {
    /// The start of the validity period.
    pub not_before: Time,
    /// The end of the validity period.
    pub not_after: Time,
    /// The fields of `tbsCertificate` after `validity`, as DER elements: subject,
    /// subjectPublicKeyInfo, then the optional unique IDs and `[3]` extensions.
    pub rest: &'a [u8],
}

/// `tbsCertificate.validity` of the DER certificate `der`; `None` if it cannot be read.
pub fn validity(der: &[u8]) -> Option<Validity<'_>> {
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
    let (tag, validity, rest) = element(rest)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, not_before, more) = element(validity)?;
    let not_before = time(tag, not_before)?;
    let (tag, not_after, _) = element(more)?;
    let not_after = time(tag, not_after)?;
    Some(Validity {
        not_before,
        not_after,
        rest,
    })
}

/// A time of a certificate, to the second, in UTC. Displays as `YYYY-MM-DD HH:MM:SS UTC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    /// Seconds since the Unix epoch, negative before it.
    unix_secs: i64,
    /// The calendar fields, as written in the certificate: the month is 1 to 12, the day 1 to
    /// 31, the hour and minute in range; the seconds are not checked.
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

impl Time {
    /// Seconds since the Unix epoch, negative before it.
    pub fn unix_secs(&self) -> i64 {
        self.unix_secs
    }

    /// As a `SystemTime`; `None` before the Unix epoch.
    pub fn system_time(&self) -> Option<SystemTime> {
        Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(self.unix_secs).ok()?))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            self.year, self.month, self.day, self.hour, self.min, self.sec
        )
    }
}

/// A UTCTime (tag 0x17, `YYMMDDHHMMSSZ`) or GeneralizedTime (0x18, `YYYYMMDDHHMMSSZ`).
fn time(tag: u8, value: &[u8]) -> Option<Time> {
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
    let unix_secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec;
    Some(Time {
        unix_secs,
        year,
        month,
        day,
        hour,
        min,
        sec,
    })
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
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

    #[test]
    fn utc_and_generalized_times() {
        let t = time(0x17, b"991231235959Z").unwrap();
        assert_eq!(t.to_string(), "1999-12-31 23:59:59 UTC");
        assert_eq!(t.unix_secs(), 946_684_799);
        let t = time(0x17, b"491231235959Z").unwrap();
        assert_eq!(t.to_string(), "2049-12-31 23:59:59 UTC");
        let t = time(0x18, b"19691231235959Z").unwrap();
        assert_eq!(t.unix_secs(), -1);
        assert_eq!(t.system_time(), None);
        // Wrong length for the tag, no `Z`, a sign, a month out of range.
        for (tag, bad) in [
            (0x17, &b"19991231235959Z"[..]),
            (0x18, b"991231235959Z"),
            (0x17, b"991231235959"),
            (0x17, b"99123123595+Z"),
            (0x17, b"991331235959Z"),
            (0x04, b"991231235959Z"),
        ] {
            assert_eq!(time(tag, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn elements_and_their_lengths() {
        assert_eq!(
            element(&[0x04, 2, b'a', b'b', 0xff]),
            Some((0x04, &b"ab"[..], &[0xff][..]))
        );
        let long = [&[0x04, 0x81, 3][..], b"xyz"].concat();
        assert_eq!(element(&long), Some((0x04, &b"xyz"[..], &[][..])));
        // Truncated contents, a length of no bytes, one of five bytes.
        assert_eq!(element(&[0x04, 3, b'a']), None);
        assert_eq!(element(&[0x04, 0x80]), None);
        assert_eq!(element(&[0x04, 0x85, 0, 0, 0, 0, 1, 0]), None);
        assert_eq!(element(&[0x04]), None);
    }
}
