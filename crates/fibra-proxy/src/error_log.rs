//! Upstream failures in the error log, throttled: at most one line per upstream, kind of
//! failure and second, the next line saying how many like it were left out.
//!
//! An upstream that is down fails every request sent to it: at tens of thousands of
//! requests a second, a line each would fill the disk with one message (an outage of ten
//! seconds once wrote 600,000 lines) and cost more than the requests themselves. The first
//! failure of a kind is logged at once, so an operator sees an outage begin; after that the
//! count of the ones left out comes with the next line, a second or more later.

use std::collections::HashMap;
use std::fmt::Display;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The least time between two lines of one upstream and kind.
const INTERVAL: Duration = Duration::from_secs(1);

/// What went wrong, as far as the throttle tells failures apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Connecting failed, or was not tried because the upstream is down.
    Connect,
    /// Sending the request failed.
    Send,
    /// Receiving the response head failed.
    Recv,
    /// The response was not usable HTTP.
    Malformed,
    /// A response body was cut short.
    BodyCut,
}

/// The state of one upstream and kind: when its last line went out, and how many failures
/// were left out since.
struct Window {
    logged_at: Instant,
    suppressed: u64,
}

static WINDOWS: Mutex<Option<HashMap<(u64, Kind), Window>>> = Mutex::new(None);

/// Logs (`log::warn!`) the failure `message` of upstream `upstream` (its id) unless a line of
/// the same upstream and kind went out less than a second ago; then it is only counted.
pub(crate) fn warn(upstream: u64, kind: Kind, message: impl Display) {
    if let Some(suppressed) = admit(upstream, kind, fibra::time::now()) {
        match suppressed {
            0 => log::warn!("{message}"),
            n => log::warn!("{message} [{n} more like it since the last such line]"),
        }
    }
}

/// Whether a line of `upstream` and `kind` may go out at `now`: `Some` with how many were
/// left out since the last one, or `None` (counted as left out).
fn admit(upstream: u64, kind: Kind, now: Instant) -> Option<u64> {
    let mut windows = WINDOWS.lock().unwrap_or_else(|e| e.into_inner());
    let windows = windows.get_or_insert_with(HashMap::new);
    match windows.get_mut(&(upstream, kind)) {
        Some(w) if now.saturating_duration_since(w.logged_at) < INTERVAL => {
            w.suppressed += 1;
            None
        }
        Some(w) => {
            w.logged_at = now;
            Some(std::mem::take(&mut w.suppressed))
        }
        None => {
            windows.insert(
                (upstream, kind),
                Window {
                    logged_at: now,
                    suppressed: 0,
                },
            );
            Some(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_second_per_upstream_and_kind_with_the_count_left_out() {
        // Upstream ids far from the ones the proxy hands out, so tests running alongside
        // cannot share a window.
        let (a, b) = (u64::MAX - 1, u64::MAX - 2);
        let t0 = Instant::now();
        assert_eq!(admit(a, Kind::Connect, t0), Some(0), "the first goes out");
        for _ in 0..1000 {
            assert_eq!(
                admit(a, Kind::Connect, t0 + Duration::from_millis(500)),
                None
            );
        }
        assert_eq!(
            admit(a, Kind::Send, t0),
            Some(0),
            "another kind has its own"
        );
        assert_eq!(admit(b, Kind::Connect, t0), Some(0), "another upstream too");
        assert_eq!(
            admit(a, Kind::Connect, t0 + Duration::from_millis(1000)),
            Some(1000),
            "a second later, with the count left out"
        );
        assert_eq!(
            admit(a, Kind::Connect, t0 + Duration::from_millis(1001)),
            None
        );
        assert_eq!(
            admit(a, Kind::Connect, t0 + Duration::from_millis(2500)),
            Some(1)
        );
    }
}
