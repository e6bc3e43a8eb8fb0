//! `--proxy-protocol-from CIDR`: the PROXY header is expected from the listed sources only.
//! The test's client (127.0.0.1) is trusted by one server, where a request without the
//! header is closed unanswered and one with it is served, and not by another, where plain
//! requests are served. A malformed CIDR is a clear error.

mod ops_util;

use ops_util::{exchange, fibra, get, start};

const V1: &str = "PROXY TCP4 203.0.113.9 192.0.2.1 4711 80\r\n";

#[test]
fn the_header_is_expected_from_trusted_sources_only() {
    let trusting = ["hello", "--port", "0", "--workers", "1"];
    let mut trusted = start(fibra(
        &[&trusting[..], &["--proxy-protocol-from", "127.0.0.0/8"]].concat(),
    ));
    let addr = trusted.addr();
    assert_eq!(
        get(&addr, "/plaintext"),
        "",
        "no header from a trusted source: closed"
    );
    let reply = exchange(
        &addr,
        format!("{V1}GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");

    let mut other = start(fibra(
        &[
            &trusting[..],
            &[
                "--proxy-protocol-from",
                "10.0.0.0/8",
                "--proxy-protocol-from",
                "192.0.2.1",
            ],
        ]
        .concat(),
    ));
    let addr = other.addr();
    let reply = get(&addr, "/plaintext");
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.ends_with("Hello, World!"), "{reply}");
}

#[test]
fn a_malformed_cidr_is_a_clear_error() {
    let out = fibra(&[
        "hello",
        "--port",
        "0",
        "--proxy-protocol-from",
        "10.0.0.0/40",
    ])
    .stderr(std::process::Stdio::piped())
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("10.0.0.0/40") && err.contains("--proxy-protocol-from"),
        "{err}"
    );
}
