//! `fibra hello --tls-cert FILE --tls-key FILE --http3`, the built binary: it announces HTTP/3
//! on the UDP twin of its HTTPS port and answers a request there (a QUIC client from
//! fibra-quic, the request's frames and field section written by hand), and its HTTPS
//! answers over TCP carry `Alt-Svc: h3=":PORT"; ma=86400` (its HTTP/3 ones do not); SIGTERM closes its HTTP/3 connections
//! gracefully (H3_NO_ERROR). Without --tls-cert the flag is refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{ChildStdout, Stdio};
use std::time::Duration;

mod h3_client;
mod tls_util;

use h3_client::{addr_after, get, with_h3};

use tls_util::{connect_trusting, hello, serve, Certs, Hello};

/// Starts `cmd` with its stdout piped: the process (killed on drop) and its stdout's lines.
fn spawn(mut cmd: std::process::Command) -> (Hello, std::io::Lines<BufReader<ChildStdout>>) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fibra");
    let stdout = child.stdout.take().expect("piped stdout");
    (Hello(child), BufReader::new(stdout).lines())
}

/// `fibra ARGS`, the built binary.
fn fibra(args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fibra"));
    cmd.args(args);
    cmd
}

/// `fibra hello --http3` with a new certificate: the process, its certificates, and the
/// UDP and HTTPS addresses it announced.
fn start_http3(name: &str) -> (Hello, Certs, SocketAddr, SocketAddr) {
    let certs = Certs::new(name);
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let (child, mut lines) = spawn(hello(&["--tls-cert", &cert, "--tls-key", &key, "--http3"]));
    let (mut udp, mut https) = (None, None);
    while udp.is_none() || https.is_none() {
        let line = lines.next().expect("fibra hello's banner").unwrap();
        udp = udp.or_else(|| addr_after(&line, "HTTP/3 on udp://"));
        https = https.or_else(|| addr_after(&line, "listening on https://"));
    }
    (child, certs, udp.unwrap(), https.unwrap())
}

#[test]
fn hello_answers_http3_and_advertises_it() {
    let (child, certs, udp, https) = start_http3("http3");
    assert_eq!(udp.port(), https.port(), "the UDP twin of the HTTPS port");

    // HTTPS: the answer names the HTTP/3 port.
    let mut tls = connect_trusting(&certs.der, &https.to_string());
    tls.write_all(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let _ = tls.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    let expected = format!("\r\nalt-svc: h3=\":{}\"; ma=86400\r\n", udp.port());
    assert!(reply.to_ascii_lowercase().contains(&expected), "{reply}");

    // HTTP/3: the same answer.
    let (head, body) = with_h3(certs.der.clone(), udp, |conn| {
        let answer = get(conn, "/plaintext");
        conn.close(0x100, b"done");
        answer
    });
    assert_eq!(&head[..3], &[0x00, 0x00, 0xc0 | 25], "`:status 200` first");
    assert_eq!(body, b"Hello, World!");
    // ...without `Alt-Svc`: the client is on HTTP/3 already (its value would be a literal).
    let value = format!("h3=\":{}\"", udp.port());
    assert!(
        !head.windows(value.len()).any(|w| w == value.as_bytes()),
        "{head:x?}"
    );
    drop(child);
}

#[test]
fn sigterm_closes_http3_connections_gracefully() {
    let (mut child, certs, udp, _) = start_http3("http3-sigterm");
    let pid = child.0.id() as libc::pid_t;
    let code = with_h3(certs.der.clone(), udp, move |conn| {
        let (_, body) = get(conn, "/plaintext");
        assert_eq!(body, b"Hello, World!");
        // SAFETY: signals the process this test started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        // The server drains: GOAWAY, then (nothing in flight) its close, with H3_NO_ERROR.
        let (_send, mut recv) = match conn.open_bi() {
            Ok(pair) => pair,
            Err(e) => return fibra_quic::Error::of(&e).and_then(fibra_quic::Error::code),
        };
        let mut buf = [0u8; 64];
        let e = loop {
            match recv.read(&mut buf) {
                Ok(0) => panic!("a stream ended instead of the connection"),
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        fibra_quic::Error::of(&e)
            .and_then(fibra_quic::Error::code)
            .or_else(|| {
                conn.closed_error()
                    .as_ref()
                    .and_then(fibra_quic::Error::of)
                    .and_then(fibra_quic::Error::code)
            })
    });
    assert_eq!(code, Some(0x100), "closed with H3_NO_ERROR");
    // And the process exits, successfully, within its grace period.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running 60 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn http3_needs_a_certificate() {
    let out = hello(&["--http3"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-cert"), "{err}");
}

#[test]
fn a_site_file_site_with_http3_answers_over_quic_and_only_it_advertises_it() {
    let certs = Certs::new("http3-site");
    let dir = certs.dir.clone();
    let file = dir.join("site.toml");
    // Two HTTPS sites on two addresses; only the first has http3.
    let (a, b) = (fibra_testkit::spare_addr(), fibra_testkit::spare_addr());
    std::fs::write(
        &file,
        format!(
            "[[site]]\nhosts = [\"localhost\"]\nlisten = [\"{a}\"]\ndefault = true\n\
             http3 = true\ntls = {{ cert = \"cert.pem\", key = \"key.pem\" }}\n\
             access_log = {{ path = \"access.log\" }}\n\
             [[site.route]]\npath = \"/\"\nrespond = {{ body = \"over h3\\n\" }}\n\n\
             [[site]]\nhosts = [\"localhost\"]\nlisten = [\"{b}\"]\ndefault = true\n\
             tls = {{ cert = \"cert.pem\", key = \"key.pem\" }}\n\
             [[site.route]]\npath = \"/\"\nrespond = {{ body = \"no h3\\n\" }}\n"
        ),
    )
    .unwrap();
    let (child, mut lines) = spawn(fibra(&["serve", "--config", file.to_str().unwrap()]));
    let mut udp = Vec::new();
    let banner = loop {
        let line = lines.next().expect("fibra serve's banner").unwrap();
        match addr_after(&line, "HTTP/3 on udp://") {
            Some(a) => udp.push(a),
            None => break line,
        }
    };
    assert_eq!(udp.len(), 1, "one HTTP/3 endpoint: {udp:?}");
    let https: Vec<&str> = banner
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("https://"))
        .map(|w| w.trim_end_matches('/'))
        .collect();
    assert_eq!(https.len(), 2, "{banner}");
    let (advertising, without) = (https[0], https[1]);
    assert_eq!(
        advertising.rsplit(':').next(),
        Some(udp[0].port().to_string().as_str())
    );

    // Over HTTPS: the http3 site names its UDP port, the other says nothing.
    let ask = |addr: &str| {
        let mut tls = connect_trusting(&certs.der, addr);
        tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = Vec::new();
        let _ = tls.read_to_end(&mut reply);
        String::from_utf8_lossy(&reply).to_ascii_lowercase()
    };
    let advertised = format!("\r\nalt-svc: h3=\":{}\"; ma=86400\r\n", udp[0].port());
    let reply = ask(advertising);
    assert!(
        reply.contains(&advertised) && reply.ends_with("over h3\n"),
        "{reply}"
    );
    let reply = ask(without);
    assert!(
        !reply.contains("alt-svc") && reply.ends_with("no h3\n"),
        "{reply}"
    );

    // Over HTTP/3: the site's answer, in its access log as HTTP/3.0.
    let (head, body) = with_h3(certs.der.clone(), udp[0], |conn| {
        let answer = get(conn, "/hello");
        conn.close(0x100, b"done");
        answer
    });
    assert_eq!(&head[..3], &[0x00, 0x00, 0xc0 | 25], "`:status 200` first");
    assert_eq!(body, b"over h3\n");
    let value = format!("h3=\":{}\"", udp[0].port());
    assert!(
        !head.windows(value.len()).any(|w| w == value.as_bytes()),
        "no Alt-Svc over HTTP/3: {head:x?}"
    );
    let log = dir.join("access.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("\"GET /hello HTTP/3.0\" 200") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no HTTP/3 line in {text:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(child);
}

#[test]
fn serve_sends_a_file_of_several_chunks_over_http3_byte_for_byte() {
    let certs = Certs::new("http3-file");
    let root = certs.dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    // A full 128 KiB DATA frame and a shorter one; every byte different from its neighbours.
    let content: Vec<u8> = (0..200_003u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &content).unwrap();
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let tls = ["--tls-cert", &cert, "--tls-key", &key, "--http3"];
    let (child, lines) = spawn(serve(root.to_str().unwrap(), &tls));
    let udp = lines
        .map_while(Result::ok)
        .find_map(|line| addr_after(&line, "HTTP/3 on udp://"))
        .expect("the HTTP/3 line");
    let (head, body) = with_h3(certs.der.clone(), udp, |conn| {
        let answer = get(conn, "/big.bin");
        conn.close(0x100, b"done");
        answer
    });
    assert_eq!(&head[..3], &[0x00, 0x00, 0xc0 | 25], "`:status 200` first");
    assert_eq!(body.len(), content.len());
    assert!(body == content, "the file's bytes, in order");

    // `fibra bench --h3` counts such bodies without copying them: every byte of each.
    let url = format!("https://127.0.0.1:{}/big.bin", udp.port());
    let out = fibra(&[
        "bench",
        "--h3",
        "-n",
        "12",
        "-c",
        "2",
        "-m",
        "2",
        "-t",
        "1",
        "--insecure",
        "--json",
        &url,
    ])
    .stderr(Stdio::null())
    .output()
    .expect("run fibra bench");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bench's JSON");
    assert_eq!(v["requests"]["succeeded"], 12, "{v}");
    assert_eq!(v["traffic"]["body"], 12 * content.len() as u64, "{v}");
    drop(child);
}

#[test]
fn hello_on_four_workers_answers_every_http3_connection() {
    let certs = Certs::new("http3-workers");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let args = [
        "hello",
        "--addr",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "4",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--http3",
    ];
    let (child, lines) = spawn(fibra(&args));
    let udp = lines
        .map_while(Result::ok)
        .find_map(|line| addr_after(&line, "HTTP/3 on udp://"))
        .expect("the HTTP/3 line");
    // Each from a new port, with a new connection ID, by which the kernel places it on one
    // of the 4 workers' sockets.
    for i in 0..16 {
        let (head, body) = with_h3(certs.der.clone(), udp, |conn| {
            let answer = get(conn, "/plaintext");
            conn.close(0x100, b"done");
            answer
        });
        assert_eq!(&head[..3], &[0x00, 0x00, 0xc0 | 25], "connection {i}: 200");
        assert_eq!(body, b"Hello, World!", "connection {i}");
    }
    drop(child);
}

#[test]
fn with_http3_0rtt_a_post_in_early_data_gets_425_and_a_get_is_served() {
    let certs = Certs::new("http3-0rtt");
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let tls = [
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--http3",
        "--http3-0rtt",
    ];
    let (child, lines) = spawn(hello(&tls));
    let udp = lines
        .map_while(Result::ok)
        .find_map(|line| addr_after(&line, "HTTP/3 on udp://"))
        .expect("the HTTP/3 line");
    let der = certs.der.clone();
    let (post, get_early, post_later) = h3_client::in_runtime(move || {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der).unwrap();
        let quic = fibra_quic::Config {
            zero_rtt: true,
            ..fibra_quic::Config::default()
        };
        let config = quic
            .client(fibra_quic::Config::client_tls(roots, &[b"h3"]).unwrap())
            .unwrap();
        let socket = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = fibra_quic::Endpoint::client(socket).unwrap();
        // A first connection for the session ticket.
        let first = client.connect(udp, "localhost", config.clone()).unwrap();
        let _control = h3_client::open_control(&first);
        assert_eq!(get(&first, "/plaintext").1, b"Hello, World!");
        first.close(0x100, b"");
        // The second sends two requests in its first flight (this fiber does not park
        // before both are written, and the client's driver runs on its worker).
        let conn = client.connect_early(udp, "localhost", config).unwrap();
        let _control = h3_client::open_control(&conn);
        let (mut post_send, mut post_recv) = conn.open_bi().unwrap();
        post_send
            .write_all(&h3_client::headers_frame(20, "/echo", Some(4)))
            .unwrap();
        post_send
            .write_all(&h3_client::data_frame(b"once"))
            .unwrap();
        post_send.finish().unwrap();
        let (mut get_send, mut get_recv) = conn.open_bi().unwrap();
        get_send
            .write_all(&h3_client::headers_frame(17, "/plaintext", None))
            .unwrap();
        get_send.finish().unwrap();
        let post = h3_client::read_answer(&mut post_recv);
        let get_early = h3_client::read_answer(&mut get_recv);
        assert!(
            conn.accepted_0rtt().unwrap(),
            "the server took the early data"
        );
        let (mut send, mut recv) = conn.open_bi().unwrap();
        send.write_all(&h3_client::headers_frame(20, "/echo", Some(4)))
            .unwrap();
        send.write_all(&h3_client::data_frame(b"once")).unwrap();
        send.finish().unwrap();
        let post_later = h3_client::read_answer(&mut recv);
        conn.close(0x100, b"");
        (post, get_early, post_later)
    });
    // `:status 425`: static index 70, past the 6-bit prefix (63 + 7).
    assert_eq!(
        &post.0[..4],
        &[0x00, 0x00, 0xff, 7],
        "425 for a POST in early data"
    );
    assert!(String::from_utf8_lossy(&post.1).contains("too early"));
    assert_eq!(
        &get_early.0[..3],
        &h3_client::STATUS_200,
        "a GET in early data"
    );
    assert_eq!(get_early.1, b"Hello, World!");
    assert_eq!(
        &post_later.0[..3],
        &h3_client::STATUS_200,
        "the POST after the handshake"
    );
    assert_eq!(post_later.1, b"once");
    drop(child);
}
