//! Helpers of the operations tests: start the built `fibra` with inherited listening sockets
//! (`LISTEN_FDS`/`LISTEN_PID` set by hand, as `systemd-socket-activate` sets them), read the
//! address it announces, send a request and read the whole response.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

/// A running `fibra`, killed on drop.
pub struct Running {
    pub child: Child,
    pub stdout: BufReader<ChildStdout>,
}

impl Running {
    /// The next line it prints on stdout.
    pub fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line
    }

    /// The `host:port` of the http URL at the end of its first stdout line.
    pub fn addr(&mut self) -> String {
        let line = self.line();
        line.trim()
            .rsplit(' ')
            .next()
            .and_then(|u| u.strip_prefix("http://"))
            .unwrap_or_else(|| panic!("fibra printed {line:?}"))
            .trim_end_matches('/')
            .to_string()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `fibra ARGS` (with a null stdin, stdout piped, stderr to the test's).
pub fn fibra(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fibra"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cmd
}

/// Runs `cmd` through `sh`, which sets `LISTEN_PID` to its own pid before it `exec`s the
/// program (so the pid is the program's), with `fds` as descriptors 3, 4, … and
/// `LISTEN_FDS` set to their count.
pub fn with_listen_fds(cmd: &Command, fds: &[RawFd]) -> Command {
    let mut sh = Command::new("/bin/sh");
    sh.arg("-c")
        .arg("LISTEN_PID=$$ exec \"$0\" \"$@\"")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env("LISTEN_FDS", fds.len().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let fds = fds.to_vec();
    // SAFETY: the closure only calls fcntl and dup2 (async-signal-safe) on descriptors the
    // parent owns, after fork in the child.
    unsafe {
        sh.pre_exec(move || {
            // Copies above the targets first, so no source is overwritten before it is moved.
            let high: Vec<RawFd> = fds
                .iter()
                .map(|&fd| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100))
                .collect();
            for (i, &fd) in high.iter().enumerate() {
                if fd < 0 || libc::dup2(fd, 3 + i as RawFd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    sh
}

/// Starts `cmd` and waits for its first line.
pub fn start(mut cmd: Command) -> Running {
    let mut child = cmd.spawn().expect("start fibra");
    let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    Running { child, stdout }
}

/// A listener on 127.0.0.1 and an ephemeral port, to hand to the server.
pub fn listener() -> (TcpListener, RawFd) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let fd = l.as_raw_fd();
    (l, fd)
}

/// Sends `request` on a new connection and reads until the server closes it.
pub fn exchange(addr: &str, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    String::from_utf8_lossy(&reply).into_owned()
}

/// `GET path` with `Connection: close`.
pub fn get(addr: &str, path: &str) -> String {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// How long the polling helpers wait.
pub const WAIT: Duration = Duration::from_secs(30);

/// The pid in a pid file, once it holds one.
pub fn read_pid(file: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Polls until `f` gives a value, for at most `WAIT`.
pub fn wait_for<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Whether `pid` runs (a zombie does not: once its parent exits, only init may reap it).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}
