//! Helpers for the integration tests of `fibra serve` and `fibra hello` as a user runs them:
//! a temporary site, the binary started with the test's flags, the URL of its startup line,
//! raw HTTP/1.1 over a socket, and signals.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Generous bound for anything the server should do soon (a loaded machine is slow).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A temporary directory, removed on drop.
pub struct Site(pub PathBuf);

impl Site {
    pub fn new(name: &str) -> Site {
        let dir = std::env::temp_dir().join(format!("fibra-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Site(dir)
    }

    pub fn write(&self, rel: &str, contents: &[u8]) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running server process, killed on drop, with its startup line and its stderr.
pub struct Running {
    pub child: Child,
    /// The first line it printed on stdout.
    pub line: String,
    /// `host:port` of the http or https URL in that line.
    pub addr: String,
    pub stderr: Option<BufReader<ChildStderr>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `fibra ARGS` with stdin closed.
pub fn fibra(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fibra"));
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// Starts `fibra ARGS` and waits for its startup line; a process that ends without one
/// fails the test with what it wrote to stderr.
pub fn start(args: &[&str]) -> Running {
    start_command(fibra(args))
}

/// As [`start`], with a command made by [`fibra`] and changed by the test (its environment).
pub fn start_command(mut cmd: Command) -> Running {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fibra");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line.split_whitespace().find_map(|w| {
        w.strip_prefix("http://")
            .or_else(|| w.strip_prefix("https://"))
    });
    let Some(addr) = addr else {
        let _ = child.kill();
        let _ = child.wait();
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        panic!("fibra did not start: no URL in the startup line {line:?}; stderr: {err}");
    };
    let addr = addr.trim_end_matches('/').to_string();
    Running {
        child,
        line,
        addr,
        stderr: Some(stderr),
    }
}

impl Running {
    /// Sends `sig` to the server.
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) with the pid of a child we started and have not reaped.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill");
    }

    /// Reads stderr lines until one contains `needle`; returns it.
    pub fn stderr_line_with(&mut self, needle: &str) -> String {
        let err = self.stderr.as_mut().unwrap();
        loop {
            let mut l = String::new();
            if err.read_line(&mut l).unwrap() == 0 {
                panic!("stderr ended without a line containing {needle:?}");
            }
            if l.contains(needle) {
                return l;
            }
        }
    }

    /// Waits (at most [`PATIENCE`]) for the process to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(start.elapsed() < PATIENCE, "server did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Opens a connection with client-side timeouts.
pub fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    s
}

/// `GET path` on a new connection with `Connection: close`: the whole response.
pub fn get(addr: &str, path: &str) -> String {
    let mut s = connect(addr);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    String::from_utf8_lossy(&reply).into_owned()
}
