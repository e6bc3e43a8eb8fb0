//! The `Date` header value, rendered at most once a second per thread (Warp's `Date.hs`), and
//! the UTC calendar fields of a time ([`utc_parts`]: logs, directory listings).
//!
//! Each worker thread keeps its own copy, so reading it takes no lock and no atomic. A request
//! costs one compare against the worker's cached clock ([`fibra::time::now`], refreshed by the
//! scheduler, no clock read); the wall clock is read once a second, when the copy expires.

use std::cell::RefCell;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const DATE_LEN: usize = 29;

thread_local! {
    static CACHE: RefCell<Cached> = const {
        RefCell::new(Cached { until: None, text: [0; DATE_LEN] })
    };
}

/// The rendered date and the (coarse-clock) instant at which its second ends.
struct Cached {
    until: Option<Instant>,
    text: [u8; DATE_LEN],
}

/// Calls `f` with the current date as an IMF-fixdate (RFC 9110 §5.6.7).
pub fn with_date<R>(f: impl FnOnce(&[u8; DATE_LEN]) -> R) -> R {
    with_date_until(|_, text| f(text))
}

/// Calls `f` with the instant (of [`fibra::time::now`]'s clock) at which the current date's
/// second ends, and the date as an IMF-fixdate: a caller keeping a copy of the text need not
/// ask again before that instant.
pub(crate) fn with_date_until<R>(f: impl FnOnce(Instant, &[u8; DATE_LEN]) -> R) -> R {
    let now = fibra::time::now();
    CACHE.with_borrow_mut(|c| {
        if c.until.is_none_or(|u| now >= u) {
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let s = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(wall.as_secs()));
            c.text.copy_from_slice(&s.as_bytes()[..DATE_LEN]);
            let rest = Duration::from_nanos(1_000_000_000 - u64::from(wall.subsec_nanos()));
            c.until = Some(now + rest);
        }
        f(c.until.unwrap_or(now), &c.text)
    })
}

/// Year, month, day, hour, minute and second of `t` in UTC (times before 1970 count as
/// 1970-01-01 00:00:00).
pub fn utc_parts(t: SystemTime) -> [i64; 6] {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    [year, month, day, rem / 3600, rem % 3600 / 60, rem % 60]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_parsable_recent_date() {
        let text = with_date(|d| String::from_utf8(d.to_vec()).unwrap());
        let t = httpdate::parse_http_date(&text).unwrap();
        let age = SystemTime::now().duration_since(t).unwrap_or_default();
        assert!(age < Duration::from_secs(3600), "{text}");
        assert!(text.ends_with(" GMT"));
        // cached value is reused within the second (same bytes or the next second's)
        let again = with_date(|d| String::from_utf8(d.to_vec()).unwrap());
        assert_eq!(again.len(), DATE_LEN);
    }
}
