//! `fibra bench` command-line errors: contradictory flags, bad URLs and
//! unreachable servers give a clear message and a non-zero exit status.

mod bench_util;

use bench_util::run;

fn fails_with(args: &[&str], code: i32, needle: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    assert!(out.stdout.is_empty(), "{args:?} printed a report");
}

#[test]
fn contradictory_flags_exit_2() {
    fails_with(
        &["-n", "10", "-d", "1s", "http://127.0.0.1:1/"],
        2,
        "-n and -d contradict",
    );
    fails_with(
        &["-n", "10", "-c", "1", "-t", "2", "http://127.0.0.1:1/"],
        2,
        "-c 1 is less than -t 2",
    );
    fails_with(
        &[
            "-n",
            "10",
            "-k",
            "--pipeline",
            "2",
            "--batch",
            "http://127.0.0.1:1/",
        ],
        2,
        "--pipeline and --batch",
    );
    fails_with(
        &["-n", "10", "--pipeline", "2", "http://127.0.0.1:1/"],
        2,
        "--pipeline needs -k",
    );
    fails_with(&["-n", "10", "ftp://127.0.0.1/"], 2, "invalid URL");
    fails_with(
        &["-n", "10", "-H", "nocolon", "http://127.0.0.1:1/"],
        2,
        "invalid header",
    );
}

#[test]
fn unresolvable_host_exits_1() {
    fails_with(
        &["-n", "10", "http://no-such-host.invalid/"],
        1,
        "cannot resolve host",
    );
}

#[test]
fn refused_connections_are_counted_not_fatal() {
    // A spare port: nobody listens on it, and no other socket is handed it meanwhile.
    let port = fibra_testkit::spare_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = run(&["-n", "20", "-c", "2", "--json", &url]);
    assert_eq!(out.status.code(), Some(1), "nothing succeeded");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"]["errored"], 20, "{v}");
    assert_eq!(v["requests"]["done"], 20, "{v}");
    assert_eq!(v["errors"]["connect"]["count"], 20, "{v}");
    assert!(
        v["errors"]["connect"]["first"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{v}"
    );
}
