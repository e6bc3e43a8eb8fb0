//! When to try again: the `Retry-After` field ACME servers send with polled resources and
//! rate limits (RFC 8555 §7.4, §8.2; RFC 9110 §10.2.3), and the backoff after failures.

use std::time::{Duration, SystemTime};

/// The first wait after a failed attempt; it doubles with each further failure.
pub(crate) const BACKOFF_FIRST: Duration = Duration::from_secs(60);

/// The longest wait between failed attempts.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(6 * 3600);

/// The longest `Retry-After` honoured: a longer one (a misconfigured server, a date far
/// ahead) is cut to this, so a site is never left without attempts for more than a day.
pub(crate) const RETRY_AFTER_MAX: Duration = Duration::from_secs(24 * 3600);

/// The delay a `Retry-After` value asks for at `now`: delay-seconds, or an HTTP date (a
/// date already past is no delay). `None` for a value that is neither.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A number too long for u64 is as good as "very long".
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The wait before the next attempt after `failures` consecutive failed ones (at least 1):
/// [`BACKOFF_FIRST`] doubled for each further failure up to [`BACKOFF_MAX`], or what the
/// server's `Retry-After` asked if that is longer (up to [`RETRY_AFTER_MAX`]).
pub(crate) fn backoff(failures: u32, retry_after: Option<Duration>) -> Duration {
    let doublings = failures.saturating_sub(1).min(20);
    let ours = BACKOFF_FIRST
        .saturating_mul(1 << doublings)
        .min(BACKOFF_MAX);
    let theirs = retry_after.unwrap_or_default().min(RETRY_AFTER_MAX);
    ours.max(theirs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn retry_after_in_seconds() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_as_an_http_date() {
        // Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example) is 784111777.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        let before = UNIX_EPOCH + Duration::from_secs(784_111_777 - 90);
        assert_eq!(
            parse_retry_after(date, before),
            Some(Duration::from_secs(90))
        );
        // A date in the past: retry now.
        let after = UNIX_EPOCH + Duration::from_secs(784_111_777 + 5);
        assert_eq!(parse_retry_after(date, after), Some(Duration::ZERO));
        // The obsolete formats HTTP recipients must accept.
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", before),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:37 1994", before),
            Some(Duration::from_secs(90))
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_honours_the_server() {
        assert_eq!(backoff(1, None), BACKOFF_FIRST);
        assert_eq!(backoff(2, None), BACKOFF_FIRST * 2);
        assert_eq!(backoff(4, None), BACKOFF_FIRST * 8);
        assert_eq!(backoff(30, None), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX, None), BACKOFF_MAX);
        let hour = Duration::from_secs(3600);
        assert_eq!(backoff(1, Some(hour)), hour);
        assert_eq!(backoff(1, Some(Duration::from_secs(1))), BACKOFF_FIRST);
        assert_eq!(
            backoff(1, Some(Duration::from_secs(u64::MAX))),
            RETRY_AFTER_MAX
        );
    }
}
