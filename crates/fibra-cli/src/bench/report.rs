//! The summary printed after a run: weighttp-style text or a JSON object.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use super::args::{Config, Limit};
use super::stats::{Problem, Stats};

/// A finished run, ready to be reported.
#[derive(Debug)]
pub struct Summary<'a> {
    /// The configuration the run used.
    pub config: &'a Config,
    /// Merged statistics of all workers.
    pub stats: &'a Stats,
    /// Wall-clock time from the first connection to the last response.
    pub elapsed: Duration,
}

/// Formats a latency given in nanoseconds with a fitting unit.
fn fmt_latency(ns: f64) -> String {
    if ns < 1e6 {
        format!("{:.2}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

impl Summary<'_> {
    /// Requests the run was asked for: `-n`, or all started for `-d`.
    pub fn total(&self) -> u64 {
        match self.config.limit {
            Limit::Requests(n) => n,
            Limit::Duration(_) => self.stats.started,
        }
    }

    fn secs(&self) -> f64 {
        self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Complete responses (any status) per second; requests that got no
    /// response do not count.
    pub fn requests_per_sec(&self) -> f64 {
        self.stats.status.iter().sum::<u64>() as f64 / self.secs()
    }

    /// Received kilobytes (1024 bytes) per second.
    pub fn kbytes_per_sec(&self) -> f64 {
        self.stats.bytes_read as f64 / 1024.0 / self.secs()
    }

    /// Latency percentiles in nanoseconds: min, mean, p50, p90, p99, p99.9, max.
    fn latencies(&self) -> Option<[(&'static str, f64); 7]> {
        let h = &self.stats.latency;
        if h.is_empty() {
            return None;
        }
        let q = |p: f64| h.value_at_quantile(p) as f64;
        Some([
            ("min", h.min() as f64),
            ("mean", h.mean()),
            ("p50", q(0.50)),
            ("p90", q(0.90)),
            ("p99", q(0.99)),
            ("p99.9", q(0.999)),
            ("max", h.max() as f64),
        ])
    }

    fn mode(&self) -> String {
        let c = self.config;
        if let Some(size) = c.ws_message {
            return format!("WebSocket echo of {size}-byte binary messages");
        }
        if let Some(h2) = &c.h2 {
            return format!(
                "HTTP/2 (prior knowledge), {} streams per connection",
                h2.streams
            );
        }
        if let Some(h3) = &c.h3 {
            return format!("HTTP/3 (QUIC), {} streams per connection", h3.streams);
        }
        let mut mode = String::from(if c.keep_alive {
            "keep-alive"
        } else {
            "new connection per request"
        });
        if c.pipeline > 1 {
            let _ = write!(mode, ", pipeline {}", c.pipeline);
        }
        if c.batch {
            mode.push_str(", batch");
        }
        mode
    }

    /// The weighttp-style text report.
    pub fn text(&self) -> String {
        let (c, s) = (self.config, self.stats);
        let mut out = String::new();
        // A WebSocket run counts messages (each echo a "2xx"), not requests.
        let (method, scheme, unit) = match c.ws_message {
            Some(_) => ("", "ws", "messages"),
            None => (c.method.as_str(), c.target.scheme(), "requests"),
        };
        let _ = writeln!(
            out,
            "fibra bench: {method}{}{scheme}://{}:{}{}, {} connections, {} workers, {}",
            if method.is_empty() { "" } else { " " },
            c.target.host,
            c.target.port,
            c.target.path,
            c.connections,
            c.workers,
            self.mode()
        );
        let _ = writeln!(
            out,
            "finished in {:.3} sec, {:.0} {}/s, {:.0} kbyte/s",
            self.elapsed.as_secs_f64(),
            self.requests_per_sec(),
            if c.ws_message.is_some() {
                "messages"
            } else {
                "req"
            },
            self.kbytes_per_sec()
        );
        let _ = writeln!(
            out,
            "{unit}: {} total, {} started, {} done, {} succeeded, {} failed, {} errored",
            self.total(),
            s.started,
            s.done(),
            s.succeeded,
            s.failed,
            s.errored
        );
        if c.ws_message.is_none() {
            let _ = write!(
                out,
                "status codes: {} 2xx, {} 3xx, {} 4xx, {} 5xx",
                s.status[2], s.status[3], s.status[4], s.status[5]
            );
            if s.status[0] + s.status[1] > 0 {
                let _ = write!(out, ", {} other", s.status[0] + s.status[1]);
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "traffic: {} bytes total, {} bytes http, {} bytes data, {} bytes sent, {} connections opened",
            s.bytes_read,
            s.bytes_head,
            s.bytes_read.saturating_sub(s.bytes_head),
            s.bytes_written,
            s.connects
        );
        match self.latencies() {
            None => out.push_str("latency: no complete responses\n"),
            Some(lat) => {
                let parts: Vec<String> = lat
                    .iter()
                    .map(|(k, v)| format!("{k} {}", fmt_latency(*v)))
                    .collect();
                let _ = writeln!(out, "latency: {}", parts.join(", "));
            }
        }
        let problems: Vec<String> = Problem::ALL
            .iter()
            .filter(|p| s.problems[**p as usize] > 0)
            .map(|p| {
                let i = *p as usize;
                match &s.first_message[i] {
                    Some(m) => format!("{} {} ({m})", s.problems[i], p.name()),
                    None => format!("{} {}", s.problems[i], p.name()),
                }
            })
            .collect();
        if !problems.is_empty() {
            let _ = writeln!(out, "errors: {}", problems.join(", "));
        }
        out
    }

    /// The machine-readable summary.
    pub fn json(&self) -> serde_json::Value {
        let (c, s) = (self.config, self.stats);
        let latency = match self.latencies() {
            None => serde_json::Value::Null,
            Some(lat) => {
                let mut m = serde_json::Map::new();
                for (k, v) in lat {
                    m.insert(k.replace('.', "_"), json!(v / 1e3));
                }
                m.insert("count".into(), json!(s.latency.len()));
                serde_json::Value::Object(m)
            }
        };
        let mut errors = serde_json::Map::new();
        for p in Problem::ALL {
            let i = p as usize;
            errors.insert(
                p.name().into(),
                json!({ "count": s.problems[i], "first": s.first_message[i] }),
            );
        }
        json!({
            "url": format!(
                "{}://{}{}",
                if c.ws_message.is_some() { "ws" } else { c.target.scheme() },
                c.target.authority,
                c.target.path
            ),
            "method": c.method,
            "connections": c.connections,
            "workers": c.workers,
            "keep_alive": c.keep_alive,
            "pipeline": c.pipeline,
            "batch": c.batch,
            "rate": c.rate,
            "duration_secs": self.elapsed.as_secs_f64(),
            "requests_per_sec": self.requests_per_sec(),
            "kbytes_per_sec": self.kbytes_per_sec(),
            "requests": {
                "total": self.total(),
                "started": s.started,
                "done": s.done(),
                "succeeded": s.succeeded,
                "failed": s.failed,
                "errored": s.errored,
            },
            "status": {
                "1xx": s.status[1], "2xx": s.status[2], "3xx": s.status[3],
                "4xx": s.status[4], "5xx": s.status[5], "other": s.status[0],
            },
            "traffic": {
                "received": s.bytes_read,
                "headers": s.bytes_head,
                "body": s.bytes_read.saturating_sub(s.bytes_head),
                "sent": s.bytes_written,
                "connections": s.connects,
            },
            "latency_us": latency,
            "errors": errors,
            // `--ws`: messages (counted above as requests, each echo a 2xx).
            "ws": c.ws_message.map(|size| json!({
                "message_bytes": size,
                "messages_per_sec": self.requests_per_sec(),
            })),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::args::BenchArgs;
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn config(argv: &[&str]) -> Config {
        let argv = ["bench"].iter().chain(argv);
        Cli::try_parse_from(argv).unwrap().args.validate().unwrap()
    }

    fn sample() -> Stats {
        let mut s = Stats::new();
        s.started = 10;
        for i in 0..8 {
            s.response(200, Duration::from_micros(100 + i));
        }
        s.response(503, Duration::from_millis(2));
        s.problem(Problem::Connect, 1, || "Connection refused".into());
        s.bytes_read = 2048;
        s.bytes_head = 1000;
        s
    }

    #[test]
    fn text_report() {
        let c = config(&["-n", "10", "-c", "2", "-k", "http://127.0.0.1:8080/"]);
        let s = sample();
        let text = Summary {
            config: &c,
            stats: &s,
            elapsed: Duration::from_millis(500),
        }
        .text();
        assert!(
            text.contains("finished in 0.500 sec, 18 req/s, 4 kbyte/s\n"),
            "{text}"
        );
        assert!(text.contains(
            "requests: 10 total, 10 started, 10 done, 8 succeeded, 1 failed, 1 errored\n"
        ));
        assert!(text.contains("status codes: 8 2xx, 0 3xx, 0 4xx, 1 5xx\n"));
        assert!(text.contains("traffic: 2048 bytes total, 1000 bytes http, 1048 bytes data"));
        assert!(text.contains("latency: min 99.97us, mean "), "{text}");
        assert!(text.contains("max 2.00ms"), "{text}");
        assert!(text.contains("errors: 1 connect (Connection refused)"));
    }

    #[test]
    fn json_report() {
        let c = config(&["-d", "1s", "-c", "2", "http://127.0.0.1:8080/x"]);
        let s = sample();
        let v = Summary {
            config: &c,
            stats: &s,
            elapsed: Duration::from_secs(1),
        }
        .json();
        assert_eq!(v["requests"]["total"], 10);
        assert_eq!(v["requests"]["done"], 10);
        assert_eq!(v["requests"]["succeeded"], 8);
        assert_eq!(v["status"]["5xx"], 1);
        assert_eq!(v["errors"]["connect"]["count"], 1);
        assert_eq!(v["url"], "http://127.0.0.1:8080/x");
        assert_eq!(v["latency_us"]["count"], 9);
        assert!(v["latency_us"]["p99_9"].as_f64().unwrap() >= 1000.0);
        assert_eq!(v["requests_per_sec"].as_f64(), Some(9.0));
    }

    #[test]
    fn empty_run() {
        let c = config(&["-n", "1", "http://h/"]);
        let s = Stats::new();
        let summary = Summary {
            config: &c,
            stats: &s,
            elapsed: Duration::ZERO,
        };
        assert!(summary.text().contains("latency: no complete responses"));
        assert!(summary.json()["latency_us"].is_null());
    }
}
