//! Access log in the combined log format, buffered — an [`AccessLogSink`] for the connection
//! loop (`Server::access_log_sink`, `Settings::access_log_sink`): lines collect in memory and reach the file
//! (or stdout) when 32 KiB have gathered, once a second from a small flusher thread, on
//! `flush()`, and when the last handle is dropped — never one syscall per request.
//!
//! `127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a.html HTTP/1.1" 200 2326 "-" "curl/8.5"`
//!
//! Untrusted fields (request line, Referer, User-Agent) are escaped nginx-style (`"`, `\`, and
//! bytes outside printable ASCII become `\xHH`), so a request cannot forge log lines.
//!
//! [`AccessLog::open_json`] writes one JSON object per line instead (see `json.rs`).

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, UNIX_EPOCH};

use super::{AccessLogSink, LogEntry};

const FLUSH_BYTES: usize = 32 * 1024;
const FLUSH_INTERVAL: Duration = Duration::from_secs(1);

struct Inner {
    out: Box<dyn Write + Send>,
    buf: Vec<u8>,
    /// Second of `stamp` and the rendered `[dd/Mon/yyyy:hh:mm:ss +0000]`.
    stamp_secs: u64,
    stamp: String,
    /// JSON lines instead of the combined format.
    json: bool,
}

impl Inner {
    fn write_out(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let r = self.out.write_all(&self.buf);
            self.buf.clear();
            r?;
        }
        self.out.flush()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.write_out();
    }
}

/// A shared, buffered combined-format access log. Clones share one buffer.
#[derive(Clone)]
pub struct AccessLog {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessLog")
    }
}

impl AccessLog {
    /// Logs to standard output.
    pub fn stdout() -> AccessLog {
        AccessLog::to_writer(Box::new(io::stdout()))
    }

    /// Appends to `path` (created if missing). An error names the path.
    pub fn file(path: &Path) -> io::Result<AccessLog> {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(AccessLog::to_writer(Box::new(f)))
    }

    /// `-` means stdout, anything else a file path (the CLI's `--access-log` value).
    pub fn open(spec: &str) -> io::Result<AccessLog> {
        if spec == "-" {
            Ok(AccessLog::stdout())
        } else {
            AccessLog::file(Path::new(spec))
        }
    }

    /// [`open`](Self::open), writing one JSON object per line (`time`, `remote`, `host`,
    /// `method`, `target`, `version`, `status`, `bytes`, `referer`, `user_agent`).
    pub fn open_json(spec: &str) -> io::Result<AccessLog> {
        let log = AccessLog::open(spec)?;
        log.inner.lock().unwrap_or_else(|p| p.into_inner()).json = true;
        Ok(log)
    }

    /// Logs to any writer (tests use an in-memory one).
    pub fn to_writer(out: Box<dyn Write + Send>) -> AccessLog {
        let inner = Arc::new(Mutex::new(Inner {
            out,
            buf: Vec::with_capacity(FLUSH_BYTES + 1024),
            stamp_secs: u64::MAX,
            stamp: String::new(),
            json: false,
        }));
        let weak = Arc::downgrade(&inner);
        let spawned = std::thread::Builder::new()
            .name("fibra-access-log".into())
            .spawn(move || flusher(weak));
        if let Err(e) = spawned {
            log::warn!("access log: no flusher thread ({e}); lines flush at 32 KiB and on exit");
        }
        AccessLog { inner }
    }

    /// Appends one line (and writes the buffer out when it is full).
    pub fn log(&self, e: &LogEntry<'_>) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = &mut *g;
        let secs = e.time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if inner.json {
            super::json::line(e, secs, &mut inner.buf);
            if inner.buf.len() >= FLUSH_BYTES {
                if let Err(err) = inner.write_out() {
                    log::warn!("access log write failed: {err}");
                }
            }
            return;
        }
        if secs != inner.stamp_secs {
            inner.stamp_secs = secs;
            inner.stamp = clf_time(secs);
        }
        let b = &mut inner.buf;
        match e.peer {
            Some(peer) => {
                let _ = write!(b, "{}", peer.ip());
            }
            None => b.push(b'-'),
        }
        b.extend_from_slice(b" - - ");
        b.extend_from_slice(inner.stamp.as_bytes());
        b.extend_from_slice(b" \"");
        escape_into(e.method.as_bytes(), b);
        b.push(b' ');
        escape_into(e.target.as_bytes(), b);
        b.push(b' ');
        escape_into(e.version.as_bytes(), b);
        let _ = write!(b, "\" {} ", e.status);
        if e.bytes == 0 {
            b.push(b'-');
        } else {
            let _ = write!(b, "{}", e.bytes);
        }
        for field in [e.referer, e.user_agent] {
            b.extend_from_slice(b" \"");
            match field {
                Some(v) => escape_into(v, b),
                None => b.push(b'-'),
            }
            b.push(b'"');
        }
        b.push(b'\n');
        if b.len() >= FLUSH_BYTES {
            if let Err(err) = inner.write_out() {
                log::warn!("access log write failed: {err}");
            }
        }
    }

    /// Writes everything buffered so far.
    pub fn flush(&self) -> io::Result<()> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write_out()
    }
}

impl AccessLogSink for AccessLog {
    fn log(&self, entry: &LogEntry<'_>) {
        AccessLog::log(self, entry);
    }
}

fn flusher(weak: Weak<Mutex<Inner>>) {
    loop {
        std::thread::sleep(FLUSH_INTERVAL);
        let Some(inner) = weak.upgrade() else { return };
        let mut g = inner.lock().unwrap_or_else(|p| p.into_inner());
        if !g.buf.is_empty() {
            if let Err(err) = g.write_out() {
                log::warn!("access log write failed: {err}");
            }
        }
    }
}

fn escape_into(v: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &c in v {
        if c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c) {
            out.extend_from_slice(&[b'\\', b'x', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
        } else {
            out.push(c);
        }
    }
}

/// `[10/Oct/2000:13:55:36 +0000]` for a Unix time (UTC).
fn clf_time(secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let [year, month, day, hour, minute, second] =
        crate::date::utc_parts(UNIX_EPOCH + Duration::from_secs(secs));
    format!(
        "[{day:02}/{}/{year}:{hour:02}:{minute:02}:{second:02} +0000]",
        MONTHS[(month - 1) as usize],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn clf_dates() {
        assert_eq!(clf_time(0), "[01/Jan/1970:00:00:00 +0000]");
        assert_eq!(clf_time(971_185_336), "[10/Oct/2000:13:42:16 +0000]");
        assert_eq!(clf_time(1_709_210_096), "[29/Feb/2024:12:34:56 +0000]");
    }

    #[test]
    fn combined_format_buffered_and_escaped() {
        let sink = Shared::default();
        let log = AccessLog::to_writer(Box::new(sink.clone()));
        let entry = LogEntry {
            peer: Some("127.0.0.1:50312".parse().unwrap()),
            method: "GET",
            target: "/a\"b",
            version: "HTTP/1.1",
            status: 200,
            bytes: 151,
            referer: None,
            user_agent: Some(b"curl/8\n\"x\""),
            host: Some(b"example.test"),
            time: UNIX_EPOCH + Duration::from_secs(971_185_336),
            listener: 0,
        };
        log.log(&entry);
        log.log(&LogEntry {
            bytes: 0,
            status: 304,
            peer: None,
            ..entry
        });
        // Buffered: nothing written until a flush (the flusher thread waits 1 s first, and a
        // race with it would only make the assertion below see the same bytes earlier).
        log.flush().unwrap();
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "127.0.0.1 - - [10/Oct/2000:13:42:16 +0000] \"GET /a\\x22b HTTP/1.1\" 200 151 \"-\" \"curl/8\\x0A\\x22x\\x22\"\n\
             - - - [10/Oct/2000:13:42:16 +0000] \"GET /a\\x22b HTTP/1.1\" 304 - \"-\" \"curl/8\\x0A\\x22x\\x22\"\n"
        );
    }
}
