//! The servers' error log (`--error-log FILE|-`): a `log` facade logger that writes one
//! line per record, `2026-11-25T18:55:01Z warn message`, to a file (appended) or to stderr.
//! It gets what the libraries report through `log` at info level and above: files that
//! cannot be opened for want of permission (with the path), failed accepts such as EMFILE
//! (with the listening address), TLS failures (with the client's address), certificate and
//! inotify trouble. The access log's own facade lines (target `fibra_http::access`) stay out.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::sync::Mutex;
use std::time::SystemTime;

/// The logger: one destination behind a lock (errors are rare; contention is not a concern).
struct ErrorLog {
    out: Mutex<Box<dyn Write + Send>>,
}

impl log::Log for ErrorLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info && m.target() != "fibra_http::access"
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = format!(
            "{} {} {}\n",
            timestamp(SystemTime::now()),
            r.level().as_str().to_ascii_lowercase(),
            r.args()
        );
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // Unbuffered: each line is one write, and nothing is lost if the process is killed.
        let _ = out.write_all(line.as_bytes());
    }

    fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
}

/// Installs the error log: `-` for stderr, else a file appended to (created if missing). An
/// error names the file.
pub fn install(spec: &str) -> io::Result<()> {
    let out: Box<dyn Write + Send> = if spec == "-" {
        Box::new(io::stderr())
    } else {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(spec)
            .map_err(|e| io::Error::new(e.kind(), format!("--error-log {spec}: {e}")))?;
        Box::new(f)
    };
    // The logger lives as long as the process (what `set_boxed_logger` does too).
    let logger: &'static ErrorLog = Box::leak(Box::new(ErrorLog {
        out: Mutex::new(out),
    }));
    // Installed once per process; a second call (none today) would keep the first.
    if log::set_logger(logger).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SSZ` (UTC).
fn timestamp(t: SystemTime) -> String {
    let [y, mo, d, h, mi, s] = fibra_http::date::utc_parts(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn timestamps_are_utc() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_628_132);
        assert_eq!(timestamp(t), "2026-11-25T17:35:32Z");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
