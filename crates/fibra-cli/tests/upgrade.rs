//! Binary upgrade on SIGUSR2: `fibra hello` starts itself again with its listening socket
//! handed over (`LISTEN_FDS`/`LISTEN_PID`), the new process writes its pid file and says it
//! is ready, and the old one drains: a request in flight is answered (with
//! `Connection: close`), a keep-alive connection's next request likewise, an idle
//! connection is closed after the grace, new connections are served (by the new process),
//! and the old process exits with success. Twice in a row. The old process's health check
//! fails once it drains, which tells the test when to go on.

mod ops_util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use ops_util::{alive, fibra, get, read_pid, start, wait_for};

const LONG: Duration = Duration::from_secs(30);

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LONG)).unwrap();
    s
}

/// Reads one response with a Content-Length body: (head, body).
fn response(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "EOF in a head: {head:?}");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    let len: usize = head
        .split("content-length: ")
        .nth(1)
        .and_then(|v| v.split("\r\n").next())
        .and_then(|v| v.parse().ok())
        .expect("content-length");
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (head, body)
}

/// Sends SIGUSR2 to `old`, checks the handover with connections in three states, and
/// returns the new process's pid.
fn upgrade_once(addr: &str, pid_file: &Path, old: u32) -> u32 {
    // A keep-alive connection that has had one answer, and is idle.
    let mut idle = connect(addr);
    idle.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (head, _) = response(&mut idle);
    assert!(!head.contains("connection: close"), "{head}");
    // A request whose head is half here, and one whose body is.
    let mut head_half = connect(addr);
    head_half
        .write_all(b"GET /json HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut body_half = connect(addr);
    body_half
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
        .unwrap();
    // A connection to the old process that asks for its health until it says it drains.
    let mut probe = connect(addr);
    // Both reached the server before the signal: it answers them, not the new process.
    std::thread::sleep(Duration::from_millis(200));

    // SAFETY: sends a signal to a process this test started.
    assert_eq!(unsafe { libc::kill(old as libc::pid_t, libc::SIGUSR2) }, 0);
    let new = wait_for(|| read_pid(pid_file).filter(|&p| p != old)).expect("a new pid file");
    // The new process writes its pid file before the old one hears it is ready: wait until
    // the old one drains (its health check fails once it does), so that what follows is
    // answered by a draining server.
    let draining = wait_for(|| {
        probe
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let (head, _) = response(&mut probe);
        head.starts_with("http/1.1 503").then_some(head)
    })
    .expect("the old process drains");
    assert!(draining.contains("connection: close"), "{draining}");

    head_half.write_all(b"\r\n").unwrap();
    let (head, body) = response(&mut head_half);
    assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(body, br#"{"message":"Hello, World!"}"#);
    body_half.write_all(b"56789").unwrap();
    let (head, body) = response(&mut body_half);
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(body, b"0123456789");
    for s in [&mut head_half, &mut body_half, &mut idle] {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "after the last answer: {rest:?}");
    }
    // New connections, old process gone.
    for _ in 0..10 {
        assert!(get(addr, "/plaintext").ends_with("\r\n\r\nHello, World!"));
    }
    assert!(
        wait_for(|| (!alive(old)).then_some(())).is_some(),
        "old process {old} still alive"
    );
    new
}

#[test]
fn sigusr2_hands_the_socket_to_a_new_process_twice() {
    let dir = std::env::temp_dir().join(format!("fibra-upgrade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("fibra.pid");
    let pid_arg = pid_file.to_str().unwrap().to_string();
    let mut first = start(fibra(&[
        "hello",
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "1",
        "--header-timeout",
        "60",
        "--pid-file",
        &pid_arg,
        "--health",
        "/healthz",
    ]));
    let addr = first.addr();
    let p1 = wait_for(|| read_pid(&pid_file)).expect("pid file");
    assert_eq!(p1, first.child.id());

    let p2 = upgrade_once(&addr, &pid_file, p1);
    let status = first.child.wait().unwrap();
    assert!(status.success(), "old process: {status}");
    let p3 = upgrade_once(&addr, &pid_file, p2);
    assert_ne!(p3, p2);

    // SAFETY: stops the process the second upgrade started.
    unsafe { libc::kill(p3 as libc::pid_t, libc::SIGTERM) };
    assert!(wait_for(|| (!alive(p3)).then_some(())).is_some());
    assert!(!pid_file.exists(), "the last process removes its pid file");
    let _ = std::fs::remove_dir_all(&dir);
}
