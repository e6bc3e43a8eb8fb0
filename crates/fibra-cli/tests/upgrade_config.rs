//! SIGUSR2 with `--config`: the new binary takes the site file's sockets by name (one per
//! address, TLS and plain alike), reads the file again (so keys a reload cannot apply take
//! effect), and the old process drains and exits.

mod ops_util;

use ops_util::{alive, fibra, get, read_pid, start, wait_for};

#[test]
fn the_new_binary_takes_every_address_and_the_new_file() {
    let dir = std::env::temp_dir().join(format!("fibra-upgrade-config-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ports: Vec<u16> = (0..2).map(|_| fibra_testkit::spare_port()).collect();
    let pid_file = dir.join("fibra.pid");
    let file = dir.join("site.toml");
    let write = |body: &str, workers: u32| {
        std::fs::write(
            &file,
            format!(
                "[server]\nworkers = {workers}\npid_file = \"fibra.pid\"\nhealth = \"/healthz\"\n\n\
                 [[site]]\nlisten = [\"127.0.0.1:{}\", \"127.0.0.1:{}\", \"unix:fibra.sock\"]\ndefault = true\n\
                 [[site.route]]\npath = \"/\"\nrespond = {{ body = \"{body}\" }}\n",
                ports[0], ports[1]
            ),
        )
        .unwrap();
    };
    write("old", 1);
    let mut old = start(fibra(&["serve", "--config", file.to_str().unwrap()]));
    let _ = old.line();
    let old_pid = wait_for(|| read_pid(&pid_file)).expect("a pid file");
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    for a in &addrs {
        assert!(get(a, "/").ends_with("old"));
    }
    assert!(unix_get(&dir.join("fibra.sock")).ends_with("old"));
    // A change a reload cannot apply (workers), and a new body.
    write("new", 2);
    // SAFETY: sends a signal to a process this test started.
    let sent = unsafe { libc::kill(old_pid as libc::pid_t, libc::SIGUSR2) };
    assert_eq!(sent, 0);
    let new_pid = wait_for(|| read_pid(&pid_file).filter(|&p| p != old_pid)).expect("a new pid");
    assert!(
        wait_for(|| (!alive(old_pid)).then_some(())).is_some(),
        "the old process exits"
    );
    for a in &addrs {
        let r = get(a, "/");
        assert!(
            r.starts_with("HTTP/1.1 200") && r.ends_with("new"),
            "{a}: {r}"
        );
    }
    // SAFETY: the new process is this test's grandchild; it is stopped here.
    unsafe { libc::kill(new_pid as libc::pid_t, libc::SIGTERM) };
    assert!(wait_for(|| (!alive(new_pid)).then_some(())).is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

fn unix_get(path: &std::path::Path) -> String {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}
