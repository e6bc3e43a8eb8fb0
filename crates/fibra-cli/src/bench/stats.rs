//! Counters and the latency histogram of a run, kept per worker.
//!
//! Every connection fiber of a worker records into that worker's [`Stats`],
//! reached through a worker-local slot ([`with`]). Fibers of one worker run one
//! at a time and never migrate, and no borrow of the slot spans a yield, so the
//! hot path takes no lock and touches no shared cache line. (One histogram per
//! worker rather than per fiber: a 3-digit histogram is ~270 KB, which times
//! 10,000 connections would be gigabytes and a cache miss per record.) At the
//! end one fiber per worker [`take`]s the slot and the results are [`merge`]d.
//!
//! [`merge`]: Stats::merge

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::pace::Pace;

/// Longest latency the histogram resolves (longer ones are clamped).
const MAX_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// What went wrong with a request, for the error breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Could not connect (errored).
    Connect,
    /// Writing the request failed (errored).
    Write,
    /// Reading the response failed (errored).
    Read,
    /// The request timed out (errored).
    Timeout,
    /// The server closed the connection without answering (errored).
    Closed,
    /// The response was cut short (failed).
    Truncated,
    /// The response was not valid HTTP (failed).
    Malformed,
}

impl Problem {
    /// All problems, in report order.
    pub const ALL: [Problem; 7] = [
        Problem::Connect,
        Problem::Write,
        Problem::Read,
        Problem::Timeout,
        Problem::Closed,
        Problem::Truncated,
        Problem::Malformed,
    ];

    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Problem::Connect => "connect",
            Problem::Write => "write",
            Problem::Read => "read",
            Problem::Timeout => "timeout",
            Problem::Closed => "closed",
            Problem::Truncated => "truncated",
            Problem::Malformed => "malformed",
        }
    }

    /// Whether the request counts as failed (a bad response) rather than
    /// errored (no response).
    pub fn is_failure(self) -> bool {
        matches!(self, Problem::Truncated | Problem::Malformed)
    }
}

/// Everything counted during a run (one worker's share, or the merged total).
#[derive(Debug, Clone)]
pub struct Stats {
    /// Requests taken on (sent or attempted).
    pub started: u64,
    /// Complete responses with a 2xx status.
    pub succeeded: u64,
    /// Complete non-2xx responses plus truncated or malformed ones.
    pub failed: u64,
    /// Requests that got no response (connect, I/O, timeout, closed).
    pub errored: u64,
    /// Complete responses by status class: index 1..=5 for 1xx..5xx, 0 other.
    pub status: [u64; 6],
    /// Bytes received.
    pub bytes_read: u64,
    /// Response-head bytes among them.
    pub bytes_head: u64,
    /// Bytes sent.
    pub bytes_written: u64,
    /// Connections opened.
    pub connects: u64,
    /// Count per [`Problem`], in [`Problem::ALL`] order.
    pub problems: [u64; 7],
    /// First message seen per [`Problem`], to show the user a cause.
    pub first_message: [Option<String>; 7],
    /// Latency of complete responses, in nanoseconds.
    pub latency: Histogram<u64>,
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Stats {
        Stats {
            started: 0,
            succeeded: 0,
            failed: 0,
            errored: 0,
            status: [0; 6],
            bytes_read: 0,
            bytes_head: 0,
            bytes_written: 0,
            connects: 0,
            problems: [0; 7],
            first_message: Default::default(),
            latency: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
                .expect("valid histogram bounds"),
        }
    }

    /// Requests finished one way or another.
    pub fn done(&self) -> u64 {
        self.succeeded + self.failed + self.errored
    }

    /// Records a complete response.
    #[inline]
    pub fn response(&mut self, status: u16, latency: Duration) {
        let class = usize::from(status / 100);
        self.status[if class <= 5 { class } else { 0 }] += 1;
        if class == 2 {
            self.succeeded += 1;
        } else {
            self.failed += 1;
        }
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.latency.saturating_record(ns.min(MAX_LATENCY_NS));
    }

    /// Records `requests` requests lost to `problem`; `message` (built only on
    /// the first occurrence) explains it.
    pub fn problem(&mut self, problem: Problem, requests: u64, message: impl FnOnce() -> String) {
        let i = problem as usize;
        self.problems[i] += 1;
        if self.first_message[i].is_none() {
            self.first_message[i] = Some(message());
        }
        if problem.is_failure() {
            self.failed += requests;
        } else {
            self.errored += requests;
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Stats) {
        self.started += other.started;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.errored += other.errored;
        for (a, b) in self.status.iter_mut().zip(other.status) {
            *a += b;
        }
        self.bytes_read += other.bytes_read;
        self.bytes_head += other.bytes_head;
        self.bytes_written += other.bytes_written;
        self.connects += other.connects;
        for i in 0..self.problems.len() {
            self.problems[i] += other.problems[i];
            if self.first_message[i].is_none() {
                self.first_message[i].clone_from(&other.first_message[i]);
            }
        }
        self.latency
            .add(&other.latency)
            .expect("histograms share bounds");
    }
}

impl Default for Stats {
    fn default() -> Stats {
        Stats::new()
    }
}

/// One worker's state: its statistics and its share of the request budget.
#[derive(Debug)]
pub struct WorkerState {
    /// What this worker's fibers recorded.
    pub stats: Stats,
    /// Requests this worker may still start (`u64::MAX` for a timed run).
    pub budget: u64,
    /// When the last of this worker's connection fibers finished.
    pub finished: Option<Instant>,
    /// Live count of finished requests for the progress bar, if one is shown.
    pub progress: Option<Arc<AtomicU64>>,
    /// `--rate`: this worker's schedule.
    pub pace: Option<Pace>,
}

impl WorkerState {
    /// A fresh state allowed to start `budget` requests.
    pub fn new(budget: u64, progress: Option<Arc<AtomicU64>>) -> WorkerState {
        WorkerState {
            stats: Stats::new(),
            budget,
            finished: None,
            progress,
            pace: None,
        }
    }

    /// Takes up to `want` requests from the budget and counts them started.
    #[inline]
    pub fn take(&mut self, want: u64) -> u64 {
        let got = want.min(self.budget);
        self.budget -= got;
        self.stats.started += got;
        got
    }

    /// Returns `n` started requests that never reached the server to the
    /// budget, to be sent again.
    pub fn give_back(&mut self, n: u64) {
        self.budget += n;
        self.stats.started -= n;
    }

    /// Tells the progress bar that `n` more requests finished.
    #[inline]
    pub fn advance(&mut self, n: u64) {
        if let Some(p) = &self.progress {
            p.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Notes that a connection fiber finished at `at`.
    pub fn fiber_finished(&mut self, at: Instant) {
        self.finished = Some(self.finished.map_or(at, |f| f.max(at)));
    }
}

thread_local! {
    static WORKER: RefCell<Option<Box<WorkerState>>> = const { RefCell::new(None) };
}

/// Installs `state` as the current worker's slot.
pub fn install(state: WorkerState) {
    WORKER.with(|w| *w.borrow_mut() = Some(Box::new(state)));
}

/// Removes and returns the current worker's slot.
pub fn take() -> Option<WorkerState> {
    WORKER.with(|w| w.borrow_mut().take()).map(|b| *b)
}

/// Runs `f` on the current worker's state, or returns `R::default()` when no
/// state is installed (a straggler after the results were collected). `f`
/// must not block: no other fiber may run while the slot is borrowed.
#[inline]
pub fn with<R: Default>(f: impl FnOnce(&mut WorkerState) -> R) -> R {
    WORKER.with(|w| w.borrow_mut().as_mut().map(|s| f(s)).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_merge() {
        let mut a = Stats::new();
        a.started = 4;
        a.response(200, Duration::from_micros(10));
        a.response(404, Duration::from_micros(20));
        a.response(999, Duration::from_micros(30));
        a.problem(Problem::Connect, 1, || "refused".into());
        let mut b = Stats::new();
        b.started = 3;
        b.response(204, Duration::from_micros(40));
        b.problem(Problem::Malformed, 1, || "bad".into());
        b.problem(Problem::Connect, 1, || "other".into());
        a.merge(&b);
        assert_eq!((a.started, a.succeeded, a.failed, a.errored), (7, 2, 3, 2));
        assert_eq!(a.done(), 7);
        assert_eq!(a.status, [1, 0, 2, 0, 1, 0]);
        assert_eq!(a.problems[Problem::Connect as usize], 2);
        assert_eq!(
            a.first_message[Problem::Connect as usize].as_deref(),
            Some("refused")
        );
        assert_eq!(
            a.first_message[Problem::Malformed as usize].as_deref(),
            Some("bad")
        );
        assert_eq!(a.latency.len(), 4);
        assert!(a.latency.min() <= 10_000 && a.latency.max() >= 39_990);
    }

    #[test]
    fn budget() {
        let progress = Arc::new(AtomicU64::new(0));
        let mut w = WorkerState::new(5, Some(progress.clone()));
        assert_eq!(w.take(3), 3);
        assert_eq!(w.take(3), 2);
        assert_eq!(w.take(1), 0);
        w.give_back(2);
        assert_eq!((w.budget, w.stats.started), (2, 3));
        w.advance(3);
        assert_eq!(progress.load(Ordering::Relaxed), 3);
        let t = Instant::now();
        w.fiber_finished(t + Duration::from_secs(1));
        w.fiber_finished(t);
        assert_eq!(w.finished, Some(t + Duration::from_secs(1)));
    }

    #[test]
    fn worker_slot() {
        install(WorkerState::new(7, None));
        assert_eq!(with(|w| w.take(2)), 2);
        let w = take().unwrap();
        assert_eq!((w.budget, w.stats.started), (5, 2));
        assert!(take().is_none());
        assert_eq!(with(|w| w.take(2)), 0, "no slot: nothing to take");
    }
}
