//! `--rate`: when each request may leave. The fibers of a worker share one schedule, a turn
//! every `workers / rate` seconds: a fiber taking requests gets the next turns and waits for
//! the first, so the worker sends its share of the rate however many connections it drives.
//! A run that fell behind (a stalled server) sends at once, but keeps at most
//! [`MAX_BEHIND`] of debt, so a server that resumes gets no burst of more than that.

use std::time::{Duration, Instant};

/// The most a schedule may be behind: older turns are dropped.
pub const MAX_BEHIND: Duration = Duration::from_secs(1);

/// One worker's schedule.
#[derive(Debug, Clone)]
pub struct Pace {
    /// Between two turns.
    interval: Duration,
    /// The next free turn (`None` before the first).
    next: Option<Instant>,
}

impl Pace {
    /// The schedule of one of `workers` workers sharing `rate` requests per second.
    pub fn per_worker(rate: f64, workers: usize) -> Pace {
        Pace {
            interval: Duration::from_secs_f64(workers.max(1) as f64 / rate),
            next: None,
        }
    }

    /// Takes the next `n` turns at time `now`; returns when the first is (the requests may
    /// leave then, or at once if it has passed).
    pub fn turn(&mut self, n: u64, now: Instant) -> Instant {
        let earliest = now.checked_sub(MAX_BEHIND).unwrap_or(now);
        let at = self.next.map_or(now, |next| next.max(earliest));
        self.next = Some(at + self.interval.mul_f64(n as f64));
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn turns_are_spaced_by_the_workers_share() {
        // 2 workers sharing 1000/s: a turn every 2 ms on each.
        let mut p = Pace::per_worker(1000.0, 2);
        let t0 = Instant::now();
        assert_eq!(p.turn(1, t0), t0);
        assert_eq!(p.turn(1, t0), t0 + 2 * MS);
        assert_eq!(p.turn(4, t0), t0 + 4 * MS, "a batch of 4 takes 4 turns");
        assert_eq!(p.turn(1, t0 + MS), t0 + 12 * MS);
    }

    #[test]
    fn a_run_behind_keeps_at_most_a_second_of_debt() {
        let mut p = Pace::per_worker(100.0, 1);
        let t0 = Instant::now();
        p.turn(1, t0);
        // Five seconds later (a stalled server): the turns resume a second back, not five.
        let later = t0 + 5 * 1000 * MS;
        assert_eq!(p.turn(1, later), later - MAX_BEHIND);
        assert_eq!(p.turn(1, later), later - MAX_BEHIND + 10 * MS);
    }
}
