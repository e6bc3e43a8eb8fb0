//! Helpers for the `fibra bench` integration tests: a scripted std-thread
//! HTTP server on 127.0.0.1 and a bounded runner for the built binary.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long one `fibra bench` run may take before the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// What the server answers to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// 200 with a 2-byte body.
    Ok,
    /// 200 with `Connection: close`, then the server closes.
    OkClose,
    /// 404 with an empty body.
    NotFound,
    /// 503 with a body.
    Status503,
    /// 200 with a chunked body.
    Chunked,
    /// A response cut off mid-body, then the server closes.
    Truncated,
    /// Bytes that are not an HTTP response.
    Garbage,
}

const REPLIES: usize = 7;

impl Reply {
    /// The bytes on the wire.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Reply::Ok => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            Reply::OkClose => {
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
            }
            Reply::NotFound => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            Reply::Status503 => {
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
            }
            Reply::Chunked => {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
            }
            Reply::Truncated => b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            Reply::Garbage => b"HTTP/1.1 OK OK\r\n\r\n",
        }
    }

    fn closes(self) -> bool {
        matches!(self, Reply::OkClose | Reply::Truncated)
    }
}

type Script = dyn Fn(u64, u64) -> Reply + Send + Sync;

struct State {
    script: Box<Script>,
    sent: [AtomicU64; REPLIES],
    stop: AtomicBool,
}

/// A thread-per-connection server answering every request (`\r\n\r\n`-ended,
/// no body) with `script(connection index, request index on the connection)`.
pub struct Server {
    state: Arc<State>,
    port: u16,
}

impl Server {
    /// Starts listening on 127.0.0.1 on a free port.
    pub fn start(script: impl Fn(u64, u64) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            script: Box::new(script),
            sent: Default::default(),
            stop: AtomicBool::new(false),
        });
        let st = state.clone();
        thread::spawn(move || {
            for (index, conn) in listener.incoming().enumerate() {
                if st.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    let st = st.clone();
                    thread::spawn(move || serve(&st, conn, index as u64));
                }
            }
        });
        Server { state, port }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// How many times `reply` was sent.
    pub fn count(&self, reply: Reply) -> u64 {
        self.state.sent[reply as usize].load(Ordering::SeqCst)
    }

    /// Requests answered in total.
    pub fn requests(&self) -> u64 {
        self.state
            .sent
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .sum()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wake the accept loop
    }
}

fn serve(state: &State, mut conn: TcpStream, index: u64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut n = 0;
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            let reply = (state.script)(index, n);
            n += 1;
            // Counted before the write, so the count is final once the client has the reply.
            state.sent[reply as usize].fetch_add(1, Ordering::SeqCst);
            if conn.write_all(reply.bytes()).is_err() {
                return;
            }
            if reply.closes() {
                return;
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(len) => buf.extend_from_slice(&chunk[..len]),
        }
    }
}

/// Runs the built `fibra` binary as `fibra bench ARGS`, failing the test if
/// it takes longer than [`RUN_LIMIT`].
pub fn run(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fibra"))
        .arg("bench")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the fibra binary");
    wait(&mut child)
}

/// Waits for `child` (output piped) and collects its output, killing it and
/// failing the test after [`RUN_LIMIT`].
pub fn wait(child: &mut Child) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait for fibra").is_none() {
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            panic!("fibra bench did not finish within {RUN_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let mut out = Output {
        status: child.wait().expect("exit status"),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    if let Some(mut s) = child.stdout.take() {
        s.read_to_end(&mut out.stdout).expect("read stdout");
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_end(&mut out.stderr).expect("read stderr");
    }
    out
}

/// Runs `fibra bench ARGS URL` (ARGS including `--json`) and returns its exit
/// code and parsed summary.
pub fn bench(args: &[&str], url: &str) -> (i32, serde_json::Value) {
    let mut all = args.to_vec();
    all.push(url);
    let out = run(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("fibra bench {all:?}: bad JSON ({e}): {stdout:?}, stderr {stderr:?}")
    });
    (out.status.code().unwrap_or(-1), value)
}
