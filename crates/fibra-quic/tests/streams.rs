//! Streams over loopback: echo on a bidirectional stream, 50 at once, a 4 MiB transfer
//! through a small flow-control window, chunks handed over without a copy (`write_chunks`),
//! a unidirectional stream, `open_bi` waiting for the
//! peer's stream limit, a reset seen by the reader and a stop seen by the writer, each with
//! its code; `finish_with` (the last write and the end in one step), `read_to` (appending
//! to a buffer without zeroing its room), each half of a stream still woken after the
//! other half was dropped, and `wait_sent` (a writer waiting for its data to go out).

mod util;

use fibra::sync::Notify;
use fibra_quic::{Config, Connection, Error, RecvStream, SendStream};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;
use util::{pair, pair_with, pattern, run, Pair};

/// Serves `conn`: echoes every bidirectional stream it accepts, each in its own fiber on the
/// endpoint's worker, until the connection ends.
fn echo_server(conn: Connection, worker: usize) {
    fibra::fiber::Builder::new()
        .worker(worker)
        .spawn(move || {
            while let Ok((mut send, mut recv)) = conn.accept_bi() {
                fibra::fiber::Builder::new()
                    .worker(worker)
                    .spawn(move || {
                        let mut buf = vec![0u8; 16 * 1024];
                        loop {
                            match recv.read(&mut buf) {
                                Ok(0) => break,
                                Ok(n) => send.write_all(&buf[..n]).unwrap(),
                                Err(e) => panic!("echo read: {e}"),
                            }
                        }
                        send.finish().unwrap();
                    })
                    .unwrap();
            }
        })
        .unwrap();
}

/// A connection whose streams each hold at most 64 KiB unread, on both sides: a few MiB make
/// a writer wait for flow control many times.
fn small_window_pair() -> Pair {
    pair_with(&Config {
        stream_receive_window: 64 * 1024,
        ..Config::default()
    })
}

/// A new stream on `p` (with `echo_server` answering): a fiber of its own sends
/// `pattern(1 MiB, seed)` on it and finishes it. Returns the data, the stream's receiving
/// half, and that fiber.
fn echoing_a_mebibyte(p: &Pair, seed: u8) -> (Vec<u8>, RecvStream, fibra::JoinHandle<()>) {
    echo_server(p.accepted.clone(), p.server.worker());
    let data = pattern(1 << 20, seed);
    let (mut send, recv) = p.conn.open_bi().unwrap();
    let sent = data.clone();
    let writer = fibra::spawn(move || {
        send.write_all(&sent).unwrap();
        send.finish().unwrap();
    });
    (data, recv, writer)
}

/// Sends `data` on a new stream of `conn`, finishes it, and reads the reply to its end.
fn round_trip(conn: &Connection, data: &[u8]) -> Vec<u8> {
    round_trip_with(conn, |send| send.write_all(data).unwrap())
}

/// As [`round_trip`], with `write` sending the data.
fn round_trip_with(conn: &Connection, write: impl FnOnce(&mut SendStream)) -> Vec<u8> {
    let (mut send, mut recv) = conn.open_bi().unwrap();
    // Write and read at once: a large payload fills the windows both ways.
    let reader = fibra::spawn(move || {
        let mut back = Vec::new();
        recv.read_to_end(&mut back).unwrap();
        back
    });
    write(&mut send);
    send.finish().unwrap();
    reader.join().unwrap()
}

#[test]
fn echo_over_a_bidirectional_stream() {
    let back = run("echo", || {
        let p = pair();
        echo_server(p.accepted.clone(), p.server.worker());
        round_trip(&p.conn, b"hello over QUIC")
    });
    assert_eq!(back, b"hello over QUIC");
}

#[test]
fn fifty_concurrent_bidirectional_streams_each_echo() {
    let results = run("50 streams", || {
        let p = pair();
        echo_server(p.accepted.clone(), p.server.worker());
        let clients: Vec<_> = (0..50u8)
            .map(|i| {
                let conn = p.conn.clone();
                fibra::spawn(move || {
                    let data = pattern(10_000 + usize::from(i) * 97, i);
                    round_trip(&conn, &data) == data
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(results, vec![true; 50]);
}

#[test]
fn four_mib_through_a_64_kib_window_arrive_byte_exact() {
    let (len, exact) = run("4 MiB", || {
        let p = small_window_pair();
        echo_server(p.accepted.clone(), p.server.worker());
        let data = pattern(4 << 20, 7);
        let back = round_trip(&p.conn, &data);
        (back.len(), back == data)
    });
    assert_eq!(len, 4 << 20);
    assert!(exact, "the echoed bytes differ");
}

#[test]
fn chunks_written_without_copying_arrive_in_order_through_a_small_window() {
    let (len, exact, emptied) = run("chunks", || {
        let p = small_window_pair();
        echo_server(p.accepted.clone(), p.server.worker());
        let data = pattern(1 << 20, 5);
        // Uneven pieces, an empty one among them, together 16x the peer's window.
        let cuts = [0, 1, 1, 4_000, 70_000, 500_000, 1 << 20];
        let mut chunks: Vec<bytes::Bytes> = cuts
            .windows(2)
            .map(|w| bytes::Bytes::copy_from_slice(&data[w[0]..w[1]]))
            .collect();
        let back = round_trip_with(&p.conn, |send| send.write_chunks(&mut chunks).unwrap());
        (
            back.len(),
            back == data,
            chunks.iter().all(bytes::Bytes::is_empty),
        )
    });
    assert_eq!(len, 1 << 20);
    assert!(exact, "the echoed bytes differ");
    assert!(emptied, "every chunk was taken");
}

#[test]
fn a_unidirectional_stream_carries_data_to_its_end() {
    let (got, id_is_uni) = run("uni", || {
        let p = pair();
        let server = p.accepted.clone();
        let reader = fibra::spawn(move || {
            let mut recv = server.accept_uni().unwrap();
            let mut got = Vec::new();
            recv.read_to_end(&mut got).unwrap();
            // At the end, reads keep saying 0.
            assert_eq!(recv.read(&mut [0u8; 8]).unwrap(), 0);
            (got, recv.id().dir() == fibra_quic::proto::Dir::Uni)
        });
        let mut send = p.conn.open_uni().unwrap();
        send.write_all(&pattern(100_000, 3)).unwrap();
        send.finish().unwrap();
        reader.join().unwrap()
    });
    assert_eq!(got, pattern(100_000, 3));
    assert!(id_is_uni);
}

#[test]
fn open_bi_waits_while_the_peer_stream_limit_is_reached() {
    let results = run("stream limit", || {
        let config = Config {
            max_concurrent_bidi_streams: 4,
            ..Config::default()
        };
        let p = pair_with(&config);
        echo_server(p.accepted.clone(), p.server.worker());
        // 20 fibers open streams at once; at most 4 are open at a time, the others wait in
        // `open_bi` until a finished stream gives its credit back.
        let clients: Vec<_> = (0..20u8)
            .map(|i| {
                let conn = p.conn.clone();
                fibra::spawn(move || {
                    let data = pattern(3000, i);
                    round_trip(&conn, &data) == data
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(results, vec![true; 20]);
}

#[test]
fn a_reset_stream_fails_the_reader_with_its_code() {
    let (message, code, first) = run("reset", || {
        let p = pair();
        let (mut send, _recv) = p.conn.open_bi().unwrap();
        send.write_all(b"partial").unwrap();
        // The reader takes what was sent, then waits for more, on the other worker.
        let read = Arc::new(Notify::new());
        let server = p.accepted.clone();
        let signal = read.clone();
        let reader = fibra::fiber::Builder::new()
            .worker(p.server.worker() + 1)
            .spawn(move || {
                let (_s, mut recv) = server.accept_bi().unwrap();
                let mut first = [0u8; 7];
                recv.read_exact(&mut first).unwrap();
                signal.notify_one();
                let mut buf = [0u8; 64];
                let e = recv.read(&mut buf).unwrap_err();
                // Later reads fail the same way.
                let again = recv.read(&mut buf).unwrap_err();
                assert_eq!(Error::of(&again).and_then(Error::code), Some(7));
                (e.to_string(), Error::of(&e).and_then(Error::code), first)
            })
            .unwrap();
        read.wait();
        send.reset(7).unwrap();
        reader.join().unwrap()
    });
    assert_eq!(&first, b"partial");
    assert_eq!(code, Some(7), "{message}");
    assert!(
        message.contains("reset") && message.contains('7'),
        "{message}"
    );
}

/// A new stream on `p` that the server's side stops with code 9 after reading its first
/// bytes: writes until the STOP_SENDING arrives (a bounded wait), and returns the stream
/// and the error its write got.
fn stopped_by_the_peer(p: &Pair) -> (SendStream, std::io::Error) {
    let (mut send, _recv) = p.conn.open_bi().unwrap();
    send.write_all(b"first").unwrap();
    let (_s, mut recv) = p.accepted.accept_bi().unwrap();
    let mut five = [0u8; 5];
    recv.read_exact(&mut five).unwrap();
    recv.stop(9).unwrap();
    for _ in 0..60_000 {
        match send.write_all(b"more") {
            Ok(()) => fibra::time::sleep(Duration::from_millis(1)),
            Err(e) => return (send, e),
        }
    }
    panic!("the writer never saw the stop");
}

#[test]
fn a_stopped_stream_fails_the_writer_with_its_code() {
    let (message, code) = run("stop", || {
        let (_send, e) = stopped_by_the_peer(&pair());
        (e.to_string(), Error::of(&e).and_then(Error::code))
    });
    assert_eq!(code, Some(9), "{message}");
    assert!(
        message.contains("stopped") && message.contains('9'),
        "{message}"
    );
}

#[test]
fn finish_with_writes_what_is_left_and_ends_the_stream_through_a_small_window() {
    let (small, large, exact, after) = run("finish_with", || {
        let p = small_window_pair();
        echo_server(p.accepted.clone(), p.server.worker());
        let small = round_trip_with_end(&p.conn, b"one write and the end");
        // 64 times the peer's window: finish_with parks and goes on as flow control allows.
        let data = pattern(4 << 20, 3);
        let back = round_trip_with_end(&p.conn, &data);
        // Once ended, the stream takes nothing more.
        let (mut send, _recv) = p.conn.open_bi().unwrap();
        send.finish_with(b"x").unwrap();
        let after = (
            send.finish_with(b"y").is_err(),
            send.write(b"z").is_err(),
            send.finish().is_err(),
        );
        (small, back.len(), back == data, after)
    });
    assert_eq!(small, b"one write and the end");
    assert_eq!(large, 4 << 20);
    assert!(exact, "the echoed bytes differ");
    assert_eq!(after, (true, true, true), "writes after the end fail");
}

/// Sends `data` with `finish_with` on a new stream of `conn` and reads the reply to its end.
fn round_trip_with_end(conn: &Connection, data: &[u8]) -> Vec<u8> {
    let (mut send, mut recv) = conn.open_bi().unwrap();
    let reader = fibra::spawn(move || {
        let mut back = Vec::new();
        recv.read_to_end(&mut back).unwrap();
        back
    });
    send.finish_with(data).unwrap();
    reader.join().unwrap()
}

/// The two halves of a stream share one registration; dropping one must leave the other
/// woken by flow control (a half that is never woken again would hang, and `run` fails it).
#[test]
fn each_half_of_a_stream_is_woken_after_the_other_is_dropped() {
    let (sent_alone, read_alone) = run("halves", || {
        let p = small_window_pair();
        let accepted = p.accepted.clone();
        let worker = p.server.worker();
        let server = fibra::fiber::Builder::new()
            .worker(worker)
            .spawn(move || {
                // First stream: count what the client writes after it dropped its reader.
                let (_send, mut recv) = accepted.accept_bi().unwrap();
                let mut got = Vec::new();
                recv.read_to_end(&mut got).unwrap();
                // Second: answer 4 MiB to a client that dropped its writer.
                let (mut send, mut recv) = accepted.accept_bi().unwrap();
                let mut request = Vec::new();
                recv.read_to_end(&mut request).unwrap();
                assert_eq!(request, b"go");
                send.write_all(&pattern(4 << 20, 9)).unwrap();
                send.finish().unwrap();
                got.len()
            })
            .unwrap();
        let (mut send, recv) = p.conn.open_bi().unwrap();
        drop(recv);
        send.write_all(&pattern(4 << 20, 8)).unwrap();
        send.finish().unwrap();
        drop(send);
        let (mut send, mut recv) = p.conn.open_bi().unwrap();
        send.finish_with(b"go").unwrap();
        drop(send);
        let mut back = Vec::new();
        recv.read_to_end(&mut back).unwrap();
        (server.join().unwrap(), back == pattern(4 << 20, 9))
    });
    assert_eq!(sent_alone, 4 << 20, "the writer whose reader was dropped");
    assert!(read_alone, "the reader whose writer was dropped");
}

#[test]
fn read_to_appends_what_arrives_up_to_its_limit_through_a_small_window() {
    let (exact, calls, zero, kept) = run("read_to", || {
        let p = small_window_pair();
        let (data, mut recv, writer) = echoing_a_mebibyte(&p, 4);
        // What is there stays; each call appends at most 1,000 bytes.
        let mut back = b"kept".to_vec();
        let zero = recv.read_to(&mut back, 0).unwrap();
        let mut calls = 0;
        loop {
            let before = back.len();
            let n = recv.read_to(&mut back, 1_000).unwrap();
            assert!(
                n <= 1_000 && back.len() == before + n,
                "{n} bytes, {before} -> {}",
                back.len()
            );
            if n == 0 {
                break;
            }
            calls += 1;
        }
        writer.join().unwrap();
        (
            back[4..] == data[..],
            calls,
            zero,
            back.starts_with(b"kept"),
        )
    });
    assert!(exact, "the bytes read differ");
    assert!(
        calls >= 1_049,
        "1 MiB in reads of at most 1,000 bytes took {calls}"
    );
    assert_eq!(zero, 0, "a read of at most 0 bytes");
    assert!(kept, "what the buffer held stays in front");
}

#[test]
fn discard_drops_what_arrives_up_to_its_limit_and_the_stream_goes_on() {
    let (total, most, zero, after) = run("discard", || {
        let p = small_window_pair();
        let (data, mut recv, writer) = echoing_a_mebibyte(&p, 6);
        let zero = recv.discard(0).unwrap();
        // The first 700,000 bytes dropped, in calls of at most 5,000; the rest read.
        let (mut total, mut most) = (0, 0);
        while total < 700_000 {
            let n = recv.discard(5_000.min(700_000 - total)).unwrap();
            assert!(n > 0, "the stream ended after {total} bytes");
            most = most.max(n);
            total += n;
        }
        let mut rest = Vec::new();
        recv.read_to_end(&mut rest).unwrap();
        writer.join().unwrap();
        // Nothing is left to drop at the end of the stream.
        let after = recv.discard(1_000).unwrap();
        (total, most, zero, (rest == data[700_000..], after))
    });
    assert_eq!(total, 700_000);
    assert!(most <= 5_000, "a call dropped {most} bytes");
    assert_eq!(zero, 0, "a discard of at most 0 bytes");
    assert!(after.0, "the bytes after the dropped ones, in order");
    assert_eq!(after.1, 0, "at the end of the stream");
}

/// `wait_sent` returns once the bytes written went out in packets, without waiting for the
/// reader (here it reads only afterwards); it returns at once on a stream the peer stopped
/// (the next write says why), and fails once the connection is closed.
#[test]
fn wait_sent_returns_once_the_data_went_out_and_never_hangs_on_a_stopped_stream() {
    run("wait_sent", || {
        let p = pair();
        let data = pattern(1 << 20, 5);
        let (mut send, _recv) = p.conn.open_bi().unwrap();
        let mut chunks: Vec<bytes::Bytes> = data
            .chunks(128 * 1024)
            .map(bytes::Bytes::copy_from_slice)
            .collect();
        send.write_chunks(&mut chunks).unwrap();
        send.wait_sent(0).unwrap();
        send.wait_sent(64 * 1024).unwrap();
        send.finish().unwrap();
        let (_s, mut recv) = p.accepted.accept_bi().unwrap();
        let mut got = Vec::new();
        recv.read_to_end(&mut got).unwrap();
        assert!(got == data, "the mebibyte arrived as written");

        let (mut send, _) = stopped_by_the_peer(&p);
        send.wait_sent(0).unwrap();

        let (mut send, _recv) = p.conn.open_bi().unwrap();
        send.write_all(b"last").unwrap();
        p.conn.close(0, b"bye");
        assert!(send.wait_sent(0).is_err(), "the connection is closed");
    });
}

/// Twenty writers that each wait for their last chunk to go out before making the next
/// (a file sent chunk by chunk): the driver wakes only a few of them a round, and every
/// stream still arrives whole.
#[test]
fn twenty_writers_pacing_themselves_with_wait_sent_all_finish_byte_exact() {
    run("wait_sent x20", || {
        let p = pair();
        echo_server(p.accepted.clone(), p.server.worker());
        let streams: Vec<_> = (0..20u8)
            .map(|seed| {
                let data = pattern(512 * 1024, seed);
                let (mut send, mut recv) = p.conn.open_bi().unwrap();
                let sent = data.clone();
                let writer = fibra::spawn(move || {
                    for chunk in sent.chunks(64 * 1024) {
                        send.write_chunks(&mut [bytes::Bytes::copy_from_slice(chunk)])
                            .unwrap();
                        send.wait_sent(16 * 1024).unwrap();
                    }
                    send.finish().unwrap();
                });
                let reader = fibra::spawn(move || {
                    let mut back = Vec::new();
                    recv.read_to_end(&mut back).unwrap();
                    back
                });
                (data, writer, reader)
            })
            .collect();
        for (data, writer, reader) in streams {
            writer.join().unwrap();
            assert!(reader.join().unwrap() == data, "a stream came back altered");
        }
    });
}
