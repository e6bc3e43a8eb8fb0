//! The progress bar on stderr, shown only when stderr is a terminal.
//!
//! Workers bump one relaxed atomic counter each (only when a bar is shown); a
//! plain thread sums them ten times a second and draws with `indicatif`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::Limit;

/// A running progress bar.
#[derive(Debug)]
pub struct Progress {
    counters: Vec<Arc<AtomicU64>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar for a run of `workers` workers, or returns `None` when
    /// stderr is not a terminal.
    pub fn start(limit: Limit, workers: usize) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let counters: Vec<Arc<AtomicU64>> =
            (0..workers).map(|_| Arc::new(AtomicU64::new(0))).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let (sum, halt) = (counters.clone(), stop.clone());
        let thread = thread::Builder::new()
            .name("bench-progress".into())
            .spawn(move || draw(limit, &sum, &halt))
            .ok()?;
        Some(Progress {
            counters,
            stop,
            thread: Some(thread),
        })
    }

    /// One live counter per worker.
    pub fn counters(&self) -> Vec<Arc<AtomicU64>> {
        self.counters.clone()
    }

    /// Stops and erases the bar.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn draw(limit: Limit, counters: &[Arc<AtomicU64>], stop: &AtomicBool) {
    let done = || {
        counters
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let start = Instant::now();
    let bar = match limit {
        Limit::Requests(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} requests, {msg}, eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        Limit::Duration(d) => ProgressBar::new(d.as_millis() as u64).with_style(
            ProgressStyle::with_template("{bar:40} {elapsed}/{msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
    while !stop.load(Ordering::Relaxed) {
        match limit {
            Limit::Requests(_) => {
                let done = done();
                let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{rate:.0} req/s"));
                bar.set_position(done);
            }
            Limit::Duration(d) => {
                bar.set_message(format!("{}s, {} requests done", d.as_secs(), done()));
                bar.set_position(start.elapsed().as_millis() as u64);
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    bar.finish_and_clear();
}
