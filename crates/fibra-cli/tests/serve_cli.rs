//! `fibra serve` and `fibra hello` run as a user runs them: one server per port (a second one
//! fails naming the address), the flags (`-p`, `--workers 0`, defaults in `--help`,
//! `--shutdown-timeout`), prompt shutdown on SIGINT, a startup line that says what is served,
//! a directory listing by default (`--no-list` refuses it), errors that name their path.

use std::io::{Read, Write};

mod serve_util;

use serve_util::{fibra, get, start, Running, Site};

#[test]
fn a_second_serve_on_a_port_in_use_fails_naming_the_address() {
    let site = Site::new("port-in-use");
    site.write("index.html", b"first");
    let dir = site.path().to_str().unwrap();
    let first = start(&["serve", dir, "-p", "0", "--workers", "2"]);
    let port = first.addr.rsplit(':').next().unwrap().to_string();
    for extra in [
        &["--workers", "2"][..],
        &["--workers", "1"],
        &["--reuse-port"],
    ] {
        let mut args = vec!["serve", dir, "-p", &port];
        args.extend_from_slice(extra);
        let out = fibra(&args).output().unwrap();
        assert!(!out.status.success(), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Address already in use"), "{err}");
        assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    }
    assert!(get(&first.addr, "/").ends_with("\r\n\r\nfirst"));
}

#[test]
fn flags_short_port_workers_and_help_defaults() {
    let out = fibra(&["serve", "--workers", "0"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--workers") && err.contains("at least 1"),
        "{err}"
    );

    let help = fibra(&["serve", "--help"]).output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for line in [
        "-p, --port <PORT>",
        "[default: 8080]",
        "[default: 127.0.0.1]",
        "[default: 10]",
        "[default: 60]",
        "--shutdown-timeout <SECS>",
        "[default: 5]",
        "--reuse-port",
        "--no-list",
        "[default: index.html]",
        "[default: 4096]",
    ] {
        assert!(help.contains(line), "--help lacks {line:?}:\n{help}");
    }
    // The default worker count is shown too (one per core: some number).
    let workers = help.lines().find(|l| l.contains("--workers")).unwrap();
    assert!(workers.contains("[default: "), "{workers}");

    let out = fibra(&["serve", "/", "--header-timeout=-1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--header-timeout -1"), "{err}");
}

#[test]
fn sigint_stops_an_idle_server_with_any_worker_count() {
    let site = Site::new("sigint");
    let dir = site.path().to_str().unwrap();
    for workers in ["1", "2", "4", "16"] {
        let mut s = start(&["serve", dir, "-p", "0", "--workers", workers]);
        // An idle keep-alive connection does not hold the shutdown up.
        let mut idle = serve_util::connect(&s.addr);
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 12];
        idle.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        s.signal(libc::SIGINT);
        let status = s.wait_exit();
        assert!(status.success(), "workers {workers}: {status}");
    }
}

#[test]
fn the_main_thread_is_the_first_worker() {
    // `--workers N` runs N threads in all: the main thread is worker 0 and reads the signals
    // in a fiber, so one worker is a single-threaded process.
    for (workers, threads) in [("1", 1), ("3", 3)] {
        let mut s = start(&["hello", "-p", "0", "--workers", workers]);
        let answer = serve_util::get(&s.addr, "/plaintext");
        assert!(answer.ends_with("Hello, World!"), "{answer}");
        let tasks = std::fs::read_dir(format!("/proc/{}/task", s.child.id()))
            .unwrap()
            .count();
        assert_eq!(tasks, threads, "--workers {workers}");
        s.signal(libc::SIGTERM);
        assert!(s.wait_exit().success(), "workers {workers}");
    }
}

/// A request to `fibra hello`'s /echo that is in its handler (the server asked for the body
/// with `100 Continue`) with half of its body sent.
fn in_flight(addr: &str) -> std::net::TcpStream {
    let mut c = serve_util::connect(addr);
    c.write_all(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut cont = [0u8; 25];
    c.read_exact(&mut cont).unwrap();
    assert_eq!(&cont, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(b"hello").unwrap();
    c
}

#[test]
fn shutdown_timeout_lets_a_request_finish_then_ends_it() {
    // Long enough: the request in flight finishes after the signal and is answered. With one
    // worker, the signal's fiber and the request's share the process's only thread.
    for workers in ["1", "2"] {
        let mut s = start(&[
            "hello",
            "-p",
            "0",
            "--workers",
            workers,
            "--shutdown-timeout",
            "60",
        ]);
        let mut c = in_flight(&s.addr);
        s.signal(libc::SIGINT);
        s.stderr_line_with("SIGINT, shutting down");
        c.write_all(b"world").unwrap();
        let mut reply = String::new();
        c.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(
            reply.to_ascii_lowercase().contains("connection: close"),
            "{reply}"
        );
        assert!(reply.ends_with("\r\n\r\nhelloworld"), "{reply}");
        assert!(s.wait_exit().success(), "workers {workers}");
    }

    // Short: the unfinished request is cut off and the server exits anyway.
    let mut s = start(&["hello", "-p", "0", "--shutdown-timeout", "0.2"]);
    let mut c = in_flight(&s.addr);
    s.signal(libc::SIGTERM);
    assert!(s.wait_exit().success());
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    assert!(!String::from_utf8_lossy(&rest).contains("200 OK"));
}

#[test]
fn the_startup_line_says_what_where_and_how_many_workers() {
    let site = Site::new("banner");
    let dir = site.path().to_str().unwrap();
    let s = start(&["serve", dir, "-p", "0", "--workers", "3"]);
    let canon = std::fs::canonicalize(site.path()).unwrap();
    assert!(s.line.contains(canon.to_str().unwrap()), "{}", s.line);
    assert!(s.line.contains("3 workers"), "{}", s.line);
    assert!(s.line.contains("listed"), "{}", s.line);
    assert!(
        s.line.trim_end().ends_with(&format!("http://{}/", s.addr)),
        "{}",
        s.line
    );
    let s = start(&["hello", "-p", "0", "--workers", "1"]);
    assert!(s.line.contains("(1 worker)"), "{}", s.line);
}

#[test]
fn a_directory_without_index_is_listed_unless_no_list() {
    let site = Site::new("listing");
    site.write("notes.txt", b"some notes");
    site.write("sub/a.css", b"a{}");
    let dir = site.path().to_str().unwrap();
    let s = start(&["serve", dir, "-p", "0", "--workers", "1"]);
    let page = get(&s.addr, "/");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(page.contains("text/html"), "{page}");
    assert!(page.contains("href=\"./notes.txt\""), "{page}");
    assert!(page.contains("href=\"./sub/\""), "{page}");
    drop(s);
    let s = start(&["serve", dir, "-p", "0", "--workers", "1", "--no-list"]);
    assert!(s.line.contains("refused"), "{}", s.line);
    assert!(get(&s.addr, "/").starts_with("HTTP/1.1 403 "));
    assert!(get(&s.addr, "/notes.txt").ends_with("\r\n\r\nsome notes"));
}

#[test]
fn startup_errors_name_the_path() {
    let site = Site::new("errors");
    let missing = site.path().join("no-such-dir");
    let out = fibra(&["serve", missing.to_str().unwrap(), "-p", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(missing.to_str().unwrap()), "{err}");

    let log = site.path().join("no-such-dir/access.log");
    let dir = site.path().to_str().unwrap();
    let out = fibra(&[
        "serve",
        dir,
        "-p",
        "0",
        "--access-log",
        log.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(log.to_str().unwrap()), "{err}");

    let out = fibra(&["serve", dir, "-p", "0", "--index", "sub/index.html"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"sub/index.html\""), "{err}");
}

/// Runs `fibra hello` with the given stdout and stderr until it listens. (`start` reads the
/// startup line from a stdout of its own, which these tests replace.)
fn hello_with_outputs(stdout: std::process::Stdio, stderr: std::process::Stdio) -> Running {
    let port = fibra_testkit::spare_port().to_string();
    let mut child = fibra(&["hello", "--port", &port, "--workers", "1"])
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the server ended before it listened: {status}");
        }
        assert!(
            start.elapsed() < serve_util::PATIENCE,
            "the server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Running {
        child,
        line: String::new(),
        addr,
        stderr: None,
    }
}

/// Stops `s` with SIGTERM and checks that it shut down cleanly. A server that panicked may
/// still answer while it unwinds; its exit status tells: a clean shutdown, not a panic's 101.
fn stop_cleanly(mut s: Running) {
    s.signal(libc::SIGTERM);
    let status = s.wait_exit();
    assert!(status.success(), "the server's exit: {status}");
}

#[test]
fn a_server_whose_stdout_is_closed_goes_on_serving() {
    let s = hello_with_outputs(fibra_testkit::broken_pipe(), std::process::Stdio::null());
    for _ in 0..3 {
        assert!(get(&s.addr, "/plaintext").starts_with("HTTP/1.1 200"));
    }
    stop_cleanly(s);
}

#[test]
fn print_config_into_a_closed_pipe_ends_quietly() {
    let site = Site::new("print-config-pipe");
    let dir = site.path().to_str().unwrap();
    let out = fibra(&["serve", dir, "--print-config"])
        .stdout(fibra_testkit::broken_pipe())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {err}", out.status);
    assert!(err.is_empty(), "{err}");
}

#[test]
fn a_server_whose_stderr_is_closed_takes_its_signals_and_drains() {
    let s = hello_with_outputs(std::process::Stdio::null(), fibra_testkit::broken_pipe());
    assert!(get(&s.addr, "/plaintext").starts_with("HTTP/1.1 200"));
    // SIGHUP's answer goes to stderr ("no TLS certificates to reload"), as does SIGTERM's
    // ("shutting down"); the signal loop takes SIGHUP first (the lower number). A server
    // that panicked on its stderr ended there, with 101, and never drained.
    s.signal(libc::SIGHUP);
    stop_cleanly(s);
}
