//! systemd socket activation: `fibra hello` and `fibra serve` started with a listening socket
//! as descriptor 3, `LISTEN_FDS=1` and `LISTEN_PID` set to their pid, serve on that socket
//! (not on --port); variables meant for another pid are ignored; a descriptor that is not a
//! listening TCP socket is a clear error.

mod ops_util;

use ops_util::{fibra, get, listener, start, with_listen_fds};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Stdio;

#[test]
fn hello_serves_on_the_inherited_socket() {
    let (l, fd) = listener();
    let addr = l.local_addr().unwrap().to_string();
    // Two workers share the one socket.
    let cmd = fibra(&["hello", "--port", "1", "--workers", "2"]);
    let mut server = start(with_listen_fds(&cmd, &[fd]));
    drop(l); // the server's copy is the only one left
    assert_eq!(server.addr(), addr);
    for _ in 0..20 {
        let reply = get(&addr, "/plaintext");
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.ends_with("\r\n\r\nHello, World!"), "{reply}");
    }
}

#[test]
fn serve_serves_on_two_inherited_sockets_one_per_worker() {
    let dir = std::env::temp_dir().join(format!("fibra-sa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "inherited\n").unwrap();
    let (a, fd_a) = listener();
    let (b, fd_b) = listener();
    let addrs = [a.local_addr().unwrap(), b.local_addr().unwrap()];
    let cmd = fibra(&["serve", dir.to_str().unwrap(), "--workers", "2"]);
    let mut server = start(with_listen_fds(&cmd, &[fd_a, fd_b]));
    drop((a, b));
    assert!(server.line().contains(&addrs[0].to_string()));
    for addr in addrs {
        let reply = get(&addr.to_string(), "/a.txt");
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.ends_with("\r\n\r\ninherited\n"), "{reply}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn variables_for_another_pid_are_ignored() {
    let (l, fd) = listener();
    let inherited = l.local_addr().unwrap().to_string();
    let mut cmd = fibra(&[
        "hello",
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "1",
    ]);
    cmd.env("LISTEN_FDS", "1").env("LISTEN_PID", "1");
    let _ = fd;
    let mut server = start(cmd);
    let addr = server.addr();
    assert_ne!(addr, inherited);
    assert!(get(&addr, "/plaintext").ends_with("Hello, World!"));
}

#[test]
fn a_descriptor_that_is_not_a_listening_socket_is_an_error() {
    let file = File::open("/dev/null").unwrap();
    let cmd = fibra(&["hello", "--workers", "1"]);
    let out = with_listen_fds(&cmd, &[file.as_raw_fd()])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("inherited fd 3 is not a listening TCP socket"),
        "{err}"
    );

    // More sockets than workers: connections queued on the extra one would never be taken.
    let (a, fd_a) = listener();
    let (b, fd_b) = listener();
    let out = with_listen_fds(&cmd, &[fd_a, fd_b])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    drop((a, b));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 listening sockets for 1 workers"), "{err}");

    let out = with_listen_fds(&cmd, &[])
        .env("LISTEN_FDS", "x")
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("LISTEN_FDS=\"x\" is not a valid value"),
        "{err}"
    );
}
