//! The rest of `TcpStream`'s std-like surface over real sockets: peek, discard, vectored writes,
//! sendfile, connect_timeout, shutdown(Write), a listener bound with SO_REUSEPORT, and
//! waiting (`readable`) apart from reading (`try_read`).

use fibra::net::{ListenOptions, TcpListener, TcpStream};
use std::io::{IoSlice, Read, Write};
use std::net::Shutdown;
use std::time::Duration;

fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (s, peer) = listener.accept().unwrap();
    assert_eq!(peer, c.local_addr().unwrap());
    (c, s)
}

#[test]
fn peek_does_not_consume() {
    fibra::Runtime::builder()
        .workers(1)
        .build()
        .unwrap()
        .block_on(|| {
            let (mut c, s) = pair();
            c.write_all(b"hello").unwrap();
            let mut buf = [0u8; 5];
            let mut seen = 0;
            while seen < 5 {
                seen = s.peek(&mut buf).unwrap();
            }
            assert_eq!(&buf, b"hello");
            let mut again = [0u8; 5];
            (&s).read_exact(&mut again).unwrap();
            assert_eq!(&again, b"hello");
        });
}

#[test]
fn discard_drops_exactly_what_it_says_and_sees_the_end() {
    fibra::Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .block_on(|| {
            let (mut c, s) = pair();
            // More than the socket buffers hold, so the writer waits on the discarding reader.
            let data: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
            let expected = data.clone();
            let writer = fibra::spawn(move || {
                c.write_all(&data).unwrap();
                c.shutdown(Shutdown::Write).unwrap();
            });
            let skip = 3_000_001;
            let mut dropped = 0;
            while dropped < skip {
                let n = s.discard(skip - dropped).unwrap();
                assert!(n > 0, "end of stream after {dropped} bytes");
                dropped += n;
            }
            assert_eq!(dropped, skip, "never more than asked");
            let mut rest = Vec::new();
            (&s).read_to_end(&mut rest).unwrap();
            assert_eq!(
                rest,
                expected[skip..],
                "the bytes after the dropped ones, in order"
            );
            assert_eq!(s.discard(10).unwrap(), 0, "end of stream");
            assert_eq!(s.discard(0).unwrap(), 0);
            writer.join().unwrap();
        });
}

#[test]
fn vectored_write_and_half_close() {
    fibra::Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .block_on(|| {
            let (mut c, mut s) = pair();
            let reader = fibra::spawn(move || {
                let mut all = Vec::new();
                s.read_to_end(&mut all).unwrap();
                all
            });
            let bufs = [
                IoSlice::new(b"head "),
                IoSlice::new(b"and "),
                IoSlice::new(b"body"),
            ];
            let mut n = c.write_vectored(&bufs).unwrap();
            // A short vectored write is legal; finish with write_all.
            let all = b"head and body";
            if n < all.len() {
                c.write_all(&all[n..]).unwrap();
                n = all.len();
            }
            assert_eq!(n, all.len());
            c.shutdown(Shutdown::Write).unwrap();
            assert_eq!(reader.join().unwrap(), all);
        });
}

#[test]
fn sendfile_sends_the_requested_range() {
    let path = std::env::temp_dir().join(format!("fibra-sendfile-{}", std::process::id()));
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let p2 = path.clone();
    let got = fibra::Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .block_on(move || {
            let (c, mut s) = pair();
            let reader = fibra::spawn(move || {
                let mut all = Vec::new();
                s.read_to_end(&mut all).unwrap();
                all
            });
            let file = std::fs::File::open(&p2).unwrap();
            c.set_cork(true).unwrap();
            let sent = c.sendfile(&file, 1_000, 250_000).unwrap();
            c.set_cork(false).unwrap();
            assert_eq!(sent, 250_000);
            // Asking for more than the file holds stops at its end.
            let tail = c.sendfile(&file, 299_990, 100).unwrap();
            assert_eq!(tail, 10);
            drop(c);
            reader.join().unwrap()
        });
    let _ = std::fs::remove_file(&path);
    let mut want = data[1_000..251_000].to_vec();
    want.extend_from_slice(&data[299_990..]);
    assert_eq!(got.len(), want.len());
    assert!(got == want);
}

#[test]
fn a_head_written_with_more_leaves_with_the_file_after_it() {
    let path = std::env::temp_dir().join(format!("fibra-more-{}", std::process::id()));
    let data: Vec<u8> = (0..100_001u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let p2 = path.clone();
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100001\r\n\r\n".to_vec();
    let want: Vec<u8> = head.iter().chain(&data).copied().collect();
    let n = want.len();
    let got = fibra::Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .block_on(move || {
            let (c, mut s) = pair();
            // The reader reads the exact length while the writer still holds the socket open:
            // nothing may stay held back after the body (a timeout, not a hang, if it does).
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let reader = fibra::spawn(move || {
                let mut all = vec![0u8; n];
                s.read_exact(&mut all).map(|()| all)
            });
            let file = std::fs::File::open(&p2).unwrap();
            c.write_all_more(&head).unwrap();
            assert_eq!(c.sendfile(&file, 0, 100_001).unwrap(), 100_001);
            let got = reader.join().unwrap();
            drop(c);
            got
        });
    let _ = std::fs::remove_file(&path);
    assert!(got.expect("all bytes before the close") == want);
}

#[test]
fn connect_to_a_closed_port_fails_cleanly() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let err = fibra::Runtime::builder()
        .workers(1)
        .build()
        .unwrap()
        .block_on(move || TcpStream::connect_timeout(&port, Duration::from_secs(30)).unwrap_err());
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn reuse_port_listeners_share_a_port() {
    fibra::Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .block_on(|| {
            let opts = ListenOptions {
                reuse_port: true,
                backlog: 64,
                ..ListenOptions::default()
            };
            let a = TcpListener::bind_with("127.0.0.1:0".parse().unwrap(), &opts).unwrap();
            let addr = a.local_addr().unwrap();
            let b = TcpListener::bind_with(addr, &opts).unwrap();
            assert_eq!(b.local_addr().unwrap(), addr);
            let plain = TcpListener::bind(addr);
            assert!(
                plain.is_err(),
                "a listener without SO_REUSEPORT must not share the port"
            );
        });
}

/// `try_read` never waits, `readable` waits for data, end of stream or the read timeout, on
/// a fiber and on a plain thread.
fn wait_then_try_read() {
    let (mut c, s) = pair();
    let mut buf = [0u8; 64];
    // Nothing sent yet: the first try reads nothing, and later ones make no progress either.
    for _ in 0..3 {
        let e = s.try_read(&mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    }
    s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
    let e = s.readable().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    for round in 0..3u8 {
        let msg = [b'a' + round; 5];
        c.write_all(&msg).unwrap();
        let mut seen = 0;
        while seen < msg.len() {
            s.readable().unwrap();
            match s.try_read(&mut buf) {
                Ok(n) => {
                    assert!(n > 0, "data, not end of stream");
                    got.extend_from_slice(&buf[..n]);
                    seen += n;
                }
                Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
            }
        }
    }
    assert_eq!(got, b"aaaaabbbbbccccc");
    c.shutdown(Shutdown::Write).unwrap();
    loop {
        s.readable().unwrap();
        match s.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => panic!("{n} unexpected bytes"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        }
    }
}

#[test]
fn readable_and_try_read_in_a_fiber() {
    fibra::Runtime::builder()
        .workers(1)
        .build()
        .unwrap()
        .block_on(wait_then_try_read);
}

#[test]
fn readable_and_try_read_on_a_plain_thread() {
    wait_then_try_read();
}
