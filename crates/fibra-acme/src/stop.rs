//! [`Stop`]: the flag that ends a managed certificate's background thread, and the sleeps
//! that wake up when it is raised.

use std::io;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The longest single wait towards a wall-clock time: the clock is read again after it, so a
/// suspended machine or a clock step is noticed within this long.
const CLOCK_CHECK: Duration = Duration::from_secs(600);

/// Raised once, by [`crate::Managed::stop`] or its drop; every wait of the thread watches it.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    /// Raises the flag and wakes the thread's current wait.
    pub(crate) fn stop(&self) {
        *self.stopped.lock().unwrap() = true;
        self.wake.notify_all();
    }

    /// Whether the flag is raised.
    pub(crate) fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap()
    }

    /// Waits `time`, or less if the flag is raised: then an `Interrupted` error.
    pub(crate) fn sleep(&self, time: Duration) -> io::Result<()> {
        let end = Instant::now() + time;
        let mut stopped = self.stopped.lock().unwrap();
        loop {
            if *stopped {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "stopped"));
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            stopped = self.wake.wait_timeout(stopped, left).unwrap().0;
        }
    }

    /// Waits until the wall-clock time `at` (certificate dates are wall-clock times).
    pub(crate) fn sleep_until(&self, at: SystemTime) -> io::Result<()> {
        loop {
            let left = at.duration_since(SystemTime::now()).unwrap_or_default();
            if left.is_zero() {
                return self.sleep(Duration::ZERO);
            }
            self.sleep(left.min(CLOCK_CHECK))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_stop_ends_a_long_sleep() {
        let stop = Arc::new(Stop::default());
        assert!(stop.sleep(Duration::from_millis(1)).is_ok());
        let waker = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.stop();
        });
        let far = SystemTime::now() + Duration::from_secs(3600);
        let err = stop.sleep_until(far).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
        assert!(stop.is_stopped());
        t.join().unwrap();
    }
}
