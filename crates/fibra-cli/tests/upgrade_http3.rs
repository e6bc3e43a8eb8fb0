//! Binary upgrade on SIGUSR2 with `--http3`: the old process hands the new one its UDP
//! sockets and a link between them (`http3_handover`). A download in flight on an HTTP/3
//! connection to the old process when the upgrade happens (stalled by the client's flow
//! control, so the old process needs the client's acknowledgements and window updates,
//! which the new process now reads and passes on) arrives whole; the connection gets
//! GOAWAY; a connection made meanwhile is served (by the new process); the old process
//! exits with success once the download is done; and connections after that are served.
//! And `fibra bench --h3` run across the upgrade loses no request: it sends again, on a new
//! connection, what the old process did not process (GOAWAY, H3_REQUEST_REJECTED).

mod h3_client;
mod ops_util;
mod tls_util;

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use h3_client::{
    addr_after, get, headers_frame, read_frame, wait_goaway, with_h3, Drained, STATUS_200,
};
use ops_util::{alive, fibra, read_pid, start, wait_for};
use tls_util::Certs;

/// [`wait_for`] in a fiber: sleeps the fiber, not its worker (where the QUIC client's driver
/// runs too).
fn wait_in_fiber<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(v) = f() {
            return Some(v);
        }
        fibra::time::sleep(Duration::from_millis(20));
    }
    None
}

/// Kills, when the test ends however it ends, the process the pid file names if it is not
/// `old` (a new process left behind would keep the test's output open).
struct KillNew<'a> {
    pid_file: &'a std::path::Path,
    old: u32,
}

impl Drop for KillNew<'_> {
    fn drop(&mut self) {
        if let Some(pid) = read_pid(self.pid_file).filter(|&p| p != self.old) {
            // SAFETY: signals the process the upgrade started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}

/// Starts `fibra COMMAND` (`hello`, or `serve ROOT`) on loopback with two workers, the
/// certificates in `certs`, `--http3` and a pid file in `certs.dir`; returns the process, its
/// UDP address and its pid (as the pid file says).
fn start_upgradable(certs: &Certs, command: &[&str]) -> (ops_util::Running, SocketAddr, u32) {
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let pid_file = certs.dir.join("fibra.pid");
    let pid_arg = pid_file.to_str().unwrap().to_string();
    let mut args = command.to_vec();
    args.extend_from_slice(&[
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "2",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--http3",
        "--pid-file",
        &pid_arg,
    ]);
    let mut first = start(fibra(&args));
    let udp = loop {
        if let Some(a) = addr_after(&first.line(), "HTTP/3 on udp://") {
            break a;
        }
    };
    let pid = wait_for(|| read_pid(&pid_file)).expect("pid file");
    assert_eq!(pid, first.child.id());
    (first, udp, pid)
}

/// The file downloaded across the upgrade: more than the client's stream window (1.25 MB),
/// each byte different from its neighbours.
fn content() -> Vec<u8> {
    (0..4_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn sigusr2_with_http3_keeps_the_old_connections_and_serves_new_ones() {
    let certs = Certs::new("upgrade-http3");
    let root = certs.dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("big.bin"), content()).unwrap();
    std::fs::write(root.join("small.txt"), b"small").unwrap();
    let pid_file = certs.dir.join("fibra.pid");
    let (mut first, udp, old) = start_upgradable(&certs, &["serve", root.to_str().unwrap()]);
    let _cleanup = KillNew {
        pid_file: &pid_file,
        old,
    };

    let der = certs.der.clone();
    let pids = pid_file.clone();
    let (got, goaway, during, new) = with_h3(certs.der.clone(), udp, move |conn| {
        assert_eq!(get(conn, "/small.txt").1, b"small", "before");
        // The download: once its first bytes are here the old process has taken it; then
        // it stalls on the client's flow control until this side reads on.
        let (mut send, mut recv) = conn.open_bi().unwrap();
        send.write_all(&headers_frame(17, "/big.bin", None))
            .unwrap();
        send.finish().unwrap();
        let (ty, head) = read_frame(&mut recv).expect("the answer's HEADERS");
        assert_eq!((ty, &head[..3]), (0x01, &STATUS_200[..]));
        // SAFETY: sends a signal to the process this test started.
        assert_eq!(unsafe { libc::kill(old as libc::pid_t, libc::SIGUSR2) }, 0);
        let new = wait_in_fiber(|| read_pid(&pids).filter(|&p| p != old)).expect("a new pid");
        // GOAWAY: the new process is ready, and the old one no longer reads the sockets.
        let goaway = wait_goaway(conn);
        assert!(
            alive(old),
            "the old process waits for the download in flight"
        );
        let during = with_h3(der, udp, |c| get(c, "/small.txt"));
        let mut body = Vec::new();
        while let Some((ty, payload)) = read_frame(&mut recv) {
            assert_eq!(ty, 0x00, "DATA");
            body.extend_from_slice(&payload);
        }
        (body, goaway, during, new)
    });
    let want = content();
    assert_eq!(got.len(), want.len(), "the whole file");
    assert!(got == want, "the file's bytes, in order");
    assert_eq!(
        goaway,
        Drained::GoAway(8),
        "GOAWAY names the stream after the download's"
    );
    assert_eq!(&during.0[..3], &STATUS_200, "a connection during the drain");
    assert_eq!(during.1, b"small");

    let status = first.child.wait().unwrap();
    assert!(status.success(), "old process: {status}");
    for i in 0..4 {
        let (head, body) = with_h3(certs.der.clone(), udp, |c| get(c, "/small.txt"));
        assert_eq!(&head[..3], &STATUS_200, "after, connection {i}");
        assert_eq!(body, b"small");
    }
    // SAFETY: stops the process the upgrade started.
    unsafe { libc::kill(new as libc::pid_t, libc::SIGTERM) };
    assert!(wait_for(|| (!alive(new)).then_some(())).is_some());
}

#[test]
fn sigusr2_with_a_site_files_http3_hands_its_sockets_over_too() {
    let certs = Certs::new("upgrade-http3-site");
    let dir = certs.dir.clone();
    let addr = fibra_testkit::spare_addr();
    let file = dir.join("site.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nworkers = 2\npid_file = \"fibra.pid\"\n\n\
             [[site]]\nhosts = [\"localhost\"]\nlisten = [\"{addr}\"]\ndefault = true\n\
             http3 = true\ntls = {{ cert = \"cert.pem\", key = \"key.pem\" }}\n\
             [[site.route]]\npath = \"/\"\nrespond = {{ body = \"over h3\\n\" }}\n"
        ),
    )
    .unwrap();
    let pid_file = dir.join("fibra.pid");
    let mut first = start(fibra(&["serve", "--config", file.to_str().unwrap()]));
    let udp = loop {
        if let Some(a) = addr_after(&first.line(), "HTTP/3 on udp://") {
            break a;
        }
    };
    assert_eq!(udp, addr, "the UDP twin of the site's address");
    let old = wait_for(|| read_pid(&pid_file)).expect("pid file");
    let _cleanup = KillNew {
        pid_file: &pid_file,
        old,
    };
    let pids = pid_file.clone();
    let goaway = with_h3(certs.der.clone(), udp, move |conn| {
        assert_eq!(get(conn, "/").1, b"over h3\n", "before");
        // SAFETY: sends a signal to the process this test started.
        assert_eq!(unsafe { libc::kill(old as libc::pid_t, libc::SIGUSR2) }, 0);
        wait_in_fiber(|| read_pid(&pids).filter(|&p| p != old)).expect("a new pid");
        wait_goaway(conn)
    });
    // Nothing in flight: GOAWAY (naming the stream after the one answered) and the close
    // follow each other at once, and the close may come first.
    assert!(
        [Drained::GoAway(4), Drained::Closed(Some(0x100))].contains(&goaway),
        "{goaway:?}"
    );
    let status = first.child.wait().unwrap();
    assert!(status.success(), "old process: {status}");
    let new = read_pid(&pid_file).expect("the new pid file");
    for i in 0..4 {
        let (head, body) = with_h3(certs.der.clone(), udp, |c| get(c, "/"));
        assert_eq!(&head[..3], &STATUS_200, "after, connection {i}");
        assert_eq!(body, b"over h3\n");
    }
    // SAFETY: stops the process the upgrade started.
    unsafe { libc::kill(new as libc::pid_t, libc::SIGTERM) };
    assert!(wait_for(|| (!alive(new)).then_some(())).is_some());
}

#[test]
fn a_bench_run_across_sigusr2_loses_no_http3_request() {
    let certs = Certs::new("upgrade-http3-bench");
    let pid_file = certs.dir.join("fibra.pid");
    let (mut first, udp, old) = start_upgradable(&certs, &["hello"]);
    let _cleanup = KillNew {
        pid_file: &pid_file,
        old,
    };
    let url = format!("https://127.0.0.1:{}/plaintext", udp.port());
    let mut bench = std::process::Command::new(env!("CARGO_BIN_EXE_fibra"))
        .args([
            "bench",
            "--h3",
            "-c",
            "4",
            "-m",
            "4",
            "-d",
            "10",
            "--insecure",
        ])
        .args(["--json", &url])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start fibra bench");
    // The load is on before the upgrade (an arrangement, not a measurement: what is checked
    // below is that the upgrade came while the run went on, and that nothing was lost).
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: sends a signal to the process this test started.
    assert_eq!(unsafe { libc::kill(old as libc::pid_t, libc::SIGUSR2) }, 0);
    let new = wait_for(|| read_pid(&pid_file).filter(|&p| p != old)).expect("a new pid");
    assert!(
        bench.try_wait().unwrap().is_none(),
        "the bench run ended before the upgrade: nothing shown"
    );
    let out = bench.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bench's JSON");
    let r = &v["requests"];
    assert_eq!(r["failed"], 0, "{v}");
    assert_eq!(r["errored"], 0, "{v}");
    assert!(r["succeeded"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["status"]["2xx"], r["succeeded"], "{v}");
    // Its connections to the old process went away (GOAWAY) and it opened new ones.
    assert!(v["traffic"]["connections"].as_u64().unwrap() > 4, "{v}");
    let status = first.child.wait().unwrap();
    assert!(status.success(), "old process: {status}");
    // SAFETY: stops the process the upgrade started.
    unsafe { libc::kill(new as libc::pid_t, libc::SIGTERM) };
    assert!(wait_for(|| (!alive(new)).then_some(())).is_some());
}
