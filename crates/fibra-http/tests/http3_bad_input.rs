//! Bad input at the HTTP/3 layer: a request body that never ends (no FIN, DATA frames for
//! as long as the server takes them). Over `max_body_bytes` it is answered 413; to a
//! handler that does not read it, the server answers and stops the stream; either way the
//! stream is stopped (the client's writes fail), and other requests on that connection and
//! on another one are served meanwhile.
//!
//! A QPACK encoder stream asking for a dynamic table (any capacity: the server allows none)
//! is `tests/http3.rs`'s `a_qpack_encoder_stream_may_not_insert` (QPACK_ENCODER_STREAM_ERROR).

mod h3_util;
mod util;

use std::io::Write;

use fibra_http::Settings;
use fibra_quic::Connection;
use h3_util::*;

/// DATA frames of this many bytes, at most this many of them (64 MiB: far past any window
/// and limit; the stream is stopped long before).
const CHUNK: usize = 1024;
const MAX_CHUNKS: usize = 64 * 1024;

/// Opens a POST to `path` on `conn` and keeps sending DATA frames, never the end, from a
/// fiber of its own; returns the receiving half and that fiber, which ends with how many
/// body bytes were written and the write's error.
fn endless_body(
    conn: &Connection,
    path: &str,
) -> (
    fibra_quic::RecvStream,
    fibra::JoinHandle<(usize, Option<String>)>,
) {
    let (mut send, recv) = conn.open_bi().unwrap();
    let mut head = Vec::new();
    frame(&mut head, 0x01, &request_section(true, path, false, &[]));
    send.write_all(&head).unwrap();
    let writer = fibra::spawn(move || {
        let mut data = Vec::new();
        frame(&mut data, 0x00, &[b'b'; CHUNK]);
        for i in 0..MAX_CHUNKS {
            if let Err(e) = send.write_all(&data) {
                return (i * CHUNK, Some(e.to_string()));
            }
        }
        (MAX_CHUNKS * CHUNK, None)
    });
    (recv, writer)
}

/// Runs an endless body to `path` on a server with `settings` while other requests are
/// made; returns the endless request's status and body and how its writer ended.
fn endless_request(
    settings: Settings,
    path: &'static str,
) -> (u16, Vec<u8>, usize, Option<String>) {
    let (tx, rx) = std::sync::mpsc::channel();
    run("an endless body", move || {
        let (addr, config) = server(settings);
        let conn = connect(addr, config.clone());
        let _control = open_control(&conn);
        let (mut recv, writer) = endless_body(&conn, path);
        // Meanwhile: the same connection, and another one.
        let get = request(false, "/hello", &[], &[]);
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");
        let other = connect(addr, config);
        let _other_control = open_control(&other);
        assert_eq!(exchange(&other, &get).unwrap().body, b"hello");
        let answer = read_answer(&mut recv).unwrap();
        let (written, error) = writer.join().unwrap();
        // And after it.
        assert_eq!(exchange(&conn, &get).unwrap().body, b"hello");
        tx.send((answer.status(), answer.body, written, error))
            .unwrap();
    });
    rx.recv().unwrap()
}

#[test]
fn an_endless_body_over_the_limit_is_answered_413_and_stopped() {
    let settings = Settings {
        max_body_bytes: 4096,
        ..Settings::default()
    };
    let (status, _, written, error) = endless_request(settings, "/echo");
    println!("{written} body bytes written before: {error:?}");
    assert_eq!(status, 413);
    assert!(error.is_some(), "the stream was not stopped");
    assert!(written < MAX_CHUNKS * CHUNK);
}

#[test]
fn an_endless_body_nobody_reads_is_answered_then_stopped() {
    let (status, body, written, error) = endless_request(Settings::default(), "/hello");
    println!("{written} body bytes written before: {error:?}");
    assert_eq!(status, 200);
    assert_eq!(body, b"hello");
    assert!(error.is_some(), "the stream was not stopped");
    assert!(written < MAX_CHUNKS * CHUNK);
}
