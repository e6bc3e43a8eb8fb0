//! Running out of file descriptors (`EMFILE` in accept): the server keeps serving the
//! connections it has, reports the accept failures to `on_error`, and recovers by itself once
//! descriptors are free again.
//!
//! The server runs in a child process (this test binary re-run with `FIBRA_HTTP_EMFILE_CHILD`
//! set) under a soft `RLIMIT_NOFILE` of 64, so the parent can flood it from its own, larger
//! descriptor budget. The child prints `ADDR <addr>` when listening and shuts down when its
//! stdin closes.

mod util;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use fibra_http::{Request, Response, ServerError};
use util::*;

const CHILD_ENV: &str = "FIBRA_HTTP_EMFILE_CHILD";
/// The child's soft descriptor limit.
const CHILD_NOFILE: u64 = 64;
/// Connections the parent opens beyond the established one: well over the child's limit.
const FLOOD: usize = 3 * CHILD_NOFILE as usize;

#[test]
fn emfile_recovery() {
    if std::env::var_os(CHILD_ENV).is_some() {
        child_server();
        return;
    }
    let mut child = Command::new(std::env::current_exe().expect("test binary path"))
        .args([
            "emfile_recovery",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the server child");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest may have printed "test ... " on the same line.
            if let Some(i) = line.find("ADDR ") {
                let _ = tx.send(line[i + 5..].parse::<SocketAddr>().expect("child address"));
            }
        }
    });
    let addr = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(a) => a,
        Err(e) => {
            let _ = child.kill();
            panic!("the child did not start its server: {e}");
        }
    };

    // One connection established before the flood.
    let mut est = connect(addr);
    assert_eq!(get(&mut est, "/"), "hi");

    // The flood: more connections than the child has descriptors. The kernel completes
    // every handshake (they fit in the backlog); the child accepts until EMFILE.
    let flood: Vec<TcpStream> = (0..FLOOD).map(|_| connect(addr)).collect();

    // The established connection is still served while accept fails; wait (bounded) until the
    // child has reported EMFILE at least once.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut emfiles = 0;
    while emfiles == 0 && Instant::now() < deadline {
        emfiles = get(&mut est, "/emfiles").parse::<usize>().unwrap();
        if emfiles == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(emfiles > 0, "the child never ran out of descriptors");
    assert_eq!(get(&mut est, "/"), "hi");

    // Free the descriptors: a new connection is served (its wait is bounded by the client
    // timeout in `connect`).
    drop(flood);
    let mut fresh = connect(addr);
    assert_eq!(get(&mut fresh, "/"), "hi");
    assert_eq!(get(&mut est, "/"), "hi");
    drop((est, fresh));

    // Closing stdin asks the child to shut down; it must exit cleanly.
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the child did not exit after shutdown");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "child failed: {status}");
}

/// Sends a keep-alive `GET path` and returns the body of the 200 answer.
fn get(s: &mut TcpStream, path: &str) -> String {
    let (head, body) = util::get(s, path);
    assert_eq!(status_of(&head), 200, "{head}");
    String::from_utf8(body).unwrap()
}

/// The child: lower the descriptor limit, serve, count EMFILE/ENFILE accept failures (served
/// at `/emfiles`), stop when stdin closes.
fn child_server() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid, initialised rlimit struct.
    let ok = unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && {
            lim.rlim_cur = CHILD_NOFILE.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0
        }
    };
    assert!(ok, "setrlimit: {}", std::io::Error::last_os_error());

    let emfiles = Arc::new(AtomicUsize::new(0));
    let seen = emfiles.clone();
    let handle = fibra_http::Server::bind("127.0.0.1:0")
        .workers(1)
        .on_error(move |e: &ServerError| {
            if matches!(
                e.io_error().and_then(|e| e.raw_os_error()),
                Some(libc::EMFILE | libc::ENFILE)
            ) {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })
        .serve(move |req: Request| match req.uri().path() {
            "/emfiles" => Response::new(emfiles.load(Ordering::SeqCst).to_string().into()),
            _ => Response::new("hi".into()),
        })
        .expect("server starts");
    let mut out = std::io::stdout().lock();
    writeln!(out, "ADDR {}", handle.local_addr()).unwrap();
    out.flush().unwrap();
    drop(out);
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
        line.clear();
    }
    handle.shutdown(Duration::from_secs(5));
}
