//! `Server` over a Unix-domain socket (`UnixAcceptor`): keep-alive requests, idle connections
//! that hold no stack (the connection loop's stackless idle stage), and graceful shutdown —
//! the same engine, limits and shutdown as TCP, through the `Acceptor`/`Transport` seam.
//!
//! "Holds no stack" is observed as in fibra's `steps_hold_no_stack` test: the number of the
//! process's memory mappings (`/proc/self/maps`) hardly grows with many idle connections,
//! where a transport without a stackless wait (`OnStack` below, which waits on its fiber's
//! stack) maps a stack per idle connection. The tests of this binary take turns (`SERIAL`) so
//! one does not map stacks while another counts.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::fiber::Wait;
use fibra::sync::Notify;
use fibra_http::{
    Acceptor, Request, Response, Server, ServerHandle, ShutdownHandle, Transport, Unix,
    UnixAcceptor,
};

/// Generous client-side bound so a broken server fails a test instead of hanging it.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Idle connections per mapping count.
const IDLE: usize = 200;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh socket path, removed when dropped.
struct SockPath(PathBuf);

impl SockPath {
    fn new(name: &str) -> SockPath {
        let p = std::env::temp_dir().join(format!("fibra-http-{name}-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&p);
        SockPath(p)
    }
}

impl Drop for SockPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

fn connect(path: &SockPath) -> UnixStream {
    let s = UnixStream::connect(&path.0).expect("connect");
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

/// Reads one response with a `Content-Length` body: (head, body).
fn read_response(s: &mut UnixStream) -> (String, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).expect("read head"),
            1,
            "EOF inside a head"
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len: usize = head
        .to_ascii_lowercase()
        .split("\r\n")
        .find_map(|l| {
            l.strip_prefix("content-length: ")
                .map(|v| v.parse().unwrap())
        })
        .expect("content-length");
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("read body");
    (head, String::from_utf8(body).unwrap())
}

/// Sends one request and reads its response.
fn get(s: &mut UnixStream, path: &str) -> (String, String) {
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_response(s)
}

/// Reads until EOF (or a reset): what the server sent before closing.
fn read_to_close(s: &mut UnixStream) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Waits (bounded) until the server counts `n` open connections.
fn until_connections(h: &ServerHandle, n: usize) {
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    while h.connections() != n {
        assert!(
            Instant::now() < deadline,
            "{} connections, want {n}",
            h.connections()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn echo_path(req: Request) -> Response {
    Response::new(req.uri().path().to_string().into())
}

fn unix_server<A: Acceptor + Clone>(acceptor: A) -> ServerHandle {
    Server::with_acceptor(move |_worker| Ok(acceptor.clone()))
        .workers(2)
        .serve(echo_path)
        .expect("server starts")
}

/// Opens `IDLE` connections, each answered once, and returns them with the growth in memory
/// mappings since before the first, once `settled` accepts it (every fiber must first reach
/// its wait after the flush, which a loaded machine may delay) or after 10 s.
fn idle_connections(
    path: &SockPath,
    h: &ServerHandle,
    settled: impl Fn(usize) -> bool,
) -> (Vec<UnixStream>, usize) {
    let before = mappings();
    let conns: Vec<UnixStream> = (0..IDLE)
        .map(|i| {
            let mut c = connect(path);
            assert_eq!(get(&mut c, &format!("/{i}")).1, format!("/{i}"));
            c
        })
        .collect();
    until_connections(h, IDLE);
    let mut growth = mappings().saturating_sub(before);
    for _ in 0..100 {
        if settled(growth) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        growth = mappings().saturating_sub(before);
    }
    (conns, growth)
}

#[test]
fn keep_alive_requests_over_a_unix_socket() {
    let _serial = serial();
    let path = SockPath::new("keepalive");
    let h = unix_server(UnixAcceptor::bind(&path.0).unwrap());
    assert_eq!(h.local_addr(), SocketAddr::from(([0, 0, 0, 0], 0)));
    let mut c = connect(&path);
    for i in 0..10 {
        let (head, body) = get(&mut c, &format!("/r{i}"));
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(!head.contains("Connection: close"), "{head}");
        assert_eq!(body, format!("/r{i}"));
    }
    // Pipelined, then a request that closes.
    c.write_all(b"GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut c).1, "/p1");
    assert_eq!(read_response(&mut c).1, "/p2");
    c.write_all(b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (head, body) = read_response(&mut c);
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert_eq!(body, "/last");
    assert_eq!(read_to_close(&mut c), "");
    h.shutdown(Duration::from_secs(5));
}

/// A Unix transport without a stackless wait: the connection loop's idle stage then waits on
/// the connection fiber's stack. Everything else is forwarded, the shutdown handle through
/// `Forward`, which keeps no `ConnState` (so the server keeps its own).
struct OnStack(Unix);

struct Forward(Arc<dyn ShutdownHandle>);

impl ShutdownHandle for Forward {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.0.shutdown(how)
    }
}

impl Read for OnStack {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for OnStack {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Transport for OnStack {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_read_timeout(t)
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_write_timeout(t)
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        None
    }
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
    fn wait_readable(&self) -> io::Result<()> {
        self.0.wait_readable()
    }
    fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool> {
        self.0.wait_readable_or(notify)
    }
    /// The point of this transport: no stackless wait.
    fn when_readable(&self) -> Option<Wait> {
        None
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        Transport::shutdown(&self.0, how)
    }
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        let handle: Arc<dyn ShutdownHandle> = Arc::new(Forward(self.0.shutdown_handle()?));
        Some(handle)
    }
    fn alpn(&self) -> Option<&[u8]> {
        self.0.alpn()
    }
    fn server_name(&self) -> Option<&str> {
        self.0.server_name()
    }
    type Caps = <Unix as Transport>::Caps;
    fn capabilities(&mut self) -> Option<&mut Self::Caps> {
        self.0.capabilities()
    }
}

#[derive(Clone)]
struct OnStackAcceptor(UnixAcceptor);

impl Acceptor for OnStackAcceptor {
    type Io = OnStack;
    fn accept(&self) -> io::Result<OnStack> {
        self.0.accept().map(OnStack)
    }
    fn set_accept_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_accept_timeout(t)
    }
}

#[test]
fn idle_connections_hold_no_stack_and_shutdown_closes_them() {
    let _serial = serial();

    // The Unix transport: idle connections wait without a stack.
    let path = SockPath::new("stackless");
    let h = unix_server(UnixAcceptor::bind(&path.0).unwrap());
    let (mut conns, stackless_growth) = idle_connections(&path, &h, |g| g < IDLE / 10);
    // Still served after the idle wait.
    assert_eq!(get(&mut conns[0], "/again").1, "/again");
    // Graceful shutdown closes every idle connection: each client sees EOF.
    let stopper = std::thread::spawn(move || h.shutdown(Duration::from_secs(10)));
    for c in &mut conns {
        assert_eq!(read_to_close(c), "");
    }
    stopper.join().unwrap();
    drop(conns);

    // The same through a transport without a stackless wait: a stack per idle connection.
    let path = SockPath::new("onstack");
    let h = unix_server(OnStackAcceptor(UnixAcceptor::bind(&path.0).unwrap()));
    let (mut conns, on_stack_growth) = idle_connections(&path, &h, |g| g >= IDLE / 2);
    let stopper = std::thread::spawn(move || h.shutdown(Duration::from_secs(10)));
    for c in &mut conns {
        assert_eq!(read_to_close(c), "");
    }
    stopper.join().unwrap();

    eprintln!("new mappings: {stackless_growth} idle without stacks, {on_stack_growth} on stacks");
    // Each stack is a mapping (and its guard page another), less the few the pool had idle.
    assert!(
        on_stack_growth >= IDLE / 2,
        "idle on stacks: {on_stack_growth} new mappings"
    );
    assert!(
        stackless_growth < IDLE / 10,
        "idle without stacks: {stackless_growth} new mappings"
    );
}

#[test]
fn graceful_shutdown_lets_the_request_in_flight_finish() {
    let _serial = serial();
    let path = SockPath::new("graceful");
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let entered_tx = Mutex::new(entered_tx);
    // A fibra channel: the handler's fiber parks on it without blocking the worker.
    let (release_tx, release_rx) = fibra::sync::mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let unix = UnixAcceptor::bind(&path.0).unwrap();
    let h = Server::with_acceptor(move |_| Ok(unix.clone()))
        .workers(2)
        .serve(move |req: Request| {
            if req.uri().path() == "/slow" {
                entered_tx.lock().unwrap().send(()).unwrap();
                release_rx.lock().unwrap().recv().unwrap();
                return Response::new("slow done".into());
            }
            Response::new("fast".into())
        })
        .unwrap();

    let mut idle = connect(&path);
    assert_eq!(get(&mut idle, "/").1, "fast");
    let mut busy = connect(&path);
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    entered_rx
        .recv_timeout(CLIENT_TIMEOUT)
        .expect("slow handler started");

    let stopper = std::thread::spawn(move || h.shutdown(Duration::from_secs(10)));
    // The idle connection is closed while the slow request still runs.
    assert_eq!(read_to_close(&mut idle), "");
    release_tx.send(()).unwrap();
    let (head, body) = read_response(&mut busy);
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert_eq!(body, "slow done");
    assert_eq!(read_to_close(&mut busy), "");
    stopper.join().unwrap();
    assert!(
        UnixStream::connect(&path.0).is_err(),
        "still accepting after shutdown"
    );
}
