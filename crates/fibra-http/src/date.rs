//! The `Date` header value, rendered at most once a second per thread (Warp's `Date.hs`).
//!
//! Each worker thread keeps its own copy, so reading it takes no lock and no atomic; a request
//! costs one `SystemTime::now()` (vDSO, no syscall) and a compare.

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const DATE_LEN: usize = 29;

thread_local! {
    static CACHE: Cell<(u64, [u8; DATE_LEN])> = const { Cell::new((u64::MAX, [0; DATE_LEN])) };
}

/// Calls `f` with the current date as an IMF-fixdate (RFC 9110 §5.6.7).
pub fn with_date<R>(f: impl FnOnce(&[u8; DATE_LEN]) -> R) -> R {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    CACHE.with(|c| {
        let (secs, mut text) = c.get();
        if secs != now {
            let s = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(now));
            text.copy_from_slice(&s.as_bytes()[..DATE_LEN]);
            c.set((now, text));
        }
        f(&text)
    })
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
