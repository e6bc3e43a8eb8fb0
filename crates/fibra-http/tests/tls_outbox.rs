//! Another fiber sends on a TLS connection through its owner's [`Outbox`]: after a `101`, the
//! connection's fiber (the only one that touches the rustls session) echoes what the client
//! sends, while a second fiber queues 200 numbered lines; the owner waits for "readable or
//! output queued" and writes what is queued. The client gets every line, in order, and every
//! echo. A second test: a client that stops reading holds the sender (the outbox stays
//! bounded) until its timeout.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use fibra_http::tls::{server_config_from_pem, Tls};
use fibra_http::{Outbox, Request, Response, Server, ServerHandle, Tcp, Transport};
use http::StatusCode;
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

mod tls_util;

use tls_util::{tcp, Certs, CLIENT_TIMEOUT as TIMEOUT};

const LINES: usize = 200;

/// A rustls client to `addr` trusting the test certificate.
fn client(certs: &Certs, addr: std::net::SocketAddr) -> StreamOwned<ClientConnection, TcpStream> {
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(certs.client_config(), name).unwrap();
    StreamOwned::new(conn, tcp(addr))
}

fn server(certs: &Certs, on_upgrade: fn(Tls<Tcp>)) -> ServerHandle {
    let config = server_config_from_pem(certs.cert(), certs.key()).expect("server config");
    Server::bind("127.0.0.1:0")
        .workers(2)
        .tls(config)
        .serve(move |_req: Request| {
            let mut resp = Response::new(fibra_http::ResponseBody::upgrade(move |io| {
                let Ok((tls, early)) = io.downcast::<Tls<Tcp>>() else {
                    panic!("the transport is Tls<Tcp>");
                };
                assert!(early.is_empty(), "the client waits for the 101");
                on_upgrade(tls);
            }));
            *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            resp.headers_mut()
                .insert("upgrade", http::HeaderValue::from_static("lines"));
            resp.headers_mut()
                .insert("connection", http::HeaderValue::from_static("upgrade"));
            resp
        })
        .expect("server starts")
}

/// Sends the upgrade request and reads the `101` head.
fn upgrade(s: &mut (impl Read + Write)) {
    s.write_all(
        b"GET /lines HTTP/1.1\r\nHost: localhost\r\nUpgrade: lines\r\nConnection: upgrade\r\n\r\n",
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "EOF inside the 101 head");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
}

/// The owner: echoes input, writes what the ticker fiber queues, ends at the client's EOF.
fn echo_and_tick(mut tls: Tls<Tcp>) {
    tls.set_read_timeout(Some(TIMEOUT)).unwrap();
    let (outbox, tx) = Outbox::new(16 * 1024);
    let ticker = fibra::spawn(move || {
        for i in 0..LINES {
            if tx
                .send(format!("tick {i}\n").into_bytes(), Some(TIMEOUT))
                .is_err()
            {
                return;
            }
            if i % 16 == 0 {
                fibra::fiber::yield_now();
            }
        }
    });
    let mut buf = [0u8; 1024];
    loop {
        match outbox.wait_readable(&tls) {
            Ok(fibra_http::outbox::Woken::Queued) => {
                outbox.flush_to(&mut tls).unwrap();
            }
            Ok(fibra_http::outbox::Woken::Readable) => match tls.try_read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let mut line = b"echo ".to_vec();
                    line.extend_from_slice(&buf[..n]);
                    tls.write_all(&line).unwrap();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("owner read: {e}"),
            },
            Err(e) => panic!("owner wait: {e}"),
        }
    }
    ticker.join().unwrap();
    // What the ticker queued after the last wake-up.
    outbox.flush_to(&mut tls).unwrap();
    let _ = tls.shutdown(std::net::Shutdown::Write);
}

#[test]
fn another_fiber_sends_through_the_owner_while_it_echoes() {
    let certs = Certs::new("echo");
    let handle = server(&certs, echo_and_tick);
    let mut client = client(&certs, handle.local_addr());
    upgrade(&mut client);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut pings = 0;
    // Pings until every tick has come; each ping gets its echo.
    while got
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"tick "))
        .count()
        < LINES
    {
        assert!(pings < 10_000, "the ticks stopped coming");
        if pings < 20 {
            client
                .write_all(format!("ping {pings}\n").as_bytes())
                .unwrap();
            client.flush().unwrap();
            pings += 1;
        }
        let n = client.read(&mut buf).unwrap();
        assert!(n > 0, "EOF before every tick came");
        got.extend_from_slice(&buf[..n]);
    }
    client.conn.send_close_notify();
    client.flush().unwrap();
    client.sock.shutdown(std::net::Shutdown::Write).unwrap();
    loop {
        match client.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => panic!("client read: {e}"),
        }
    }
    let text = String::from_utf8(got).unwrap();
    let ticks: Vec<&str> = text.lines().filter(|l| l.starts_with("tick ")).collect();
    let want: Vec<String> = (0..LINES).map(|i| format!("tick {i}")).collect();
    assert_eq!(ticks, want, "every tick, in order");
    let echoed = text.matches("echo ping ").count();
    // A ping may be echoed together with the next one (one read), so count the pings in the
    // echoes.
    let echoed_pings = text.matches("ping ").count();
    assert!(
        echoed >= 1 && echoed_pings == pings,
        "{echoed_pings} of {pings} pings echoed"
    );
    handle.shutdown(Duration::from_secs(5));
}

/// The owner of a connection whose client never reads: the ticker's sends fill the socket,
/// then the outbox, then time out; the result goes back to the test.
fn stalled(tls: Tls<Tcp>) {
    let mut tls = tls;
    tls.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let limit = 64 * 1024;
    let (outbox, tx) = Outbox::new(limit);
    let sender = fibra::spawn(move || {
        let mut sent = 0usize;
        loop {
            match tx.send(vec![b'x'; 16 * 1024], Some(Duration::from_secs(3))) {
                Ok(()) => sent += 1,
                Err(e) => return (e.kind(), sent),
            }
        }
    });
    // The owner writes until the client's window and the socket buffers are full (the write
    // times out), then stops draining.
    let mut max_queued = 0;
    loop {
        max_queued = max_queued.max(outbox.queued_bytes());
        match outbox.wait_readable(&tls) {
            Ok(fibra_http::outbox::Woken::Queued) => {
                if outbox.flush_to(&mut tls).is_err() {
                    break;
                }
            }
            Ok(fibra_http::outbox::Woken::Readable) => {
                let mut buf = [0u8; 64];
                match tls.try_read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
            Err(_) => break,
        }
    }
    let (kind, sent) = sender.join().unwrap();
    max_queued = max_queued.max(outbox.queued_bytes());
    STALLED
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .send((kind, sent, max_queued))
        .unwrap();
}

/// Where `stalled` reports (sender's error, messages sent, most bytes queued).
static STALLED: std::sync::Mutex<Option<mpsc::Sender<(io::ErrorKind, usize, usize)>>> =
    std::sync::Mutex::new(None);

#[test]
fn a_client_that_stops_reading_holds_the_sender_and_the_outbox_stays_bounded() {
    let certs = Certs::new("stalled");
    let (tx, rx) = mpsc::channel();
    *STALLED.lock().unwrap() = Some(tx);
    let handle = server(&certs, stalled);
    let mut client = client(&certs, handle.local_addr());
    upgrade(&mut client);
    // The client reads nothing more.
    let (kind, sent, max_queued) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(
        kind == io::ErrorKind::TimedOut || kind == io::ErrorKind::BrokenPipe,
        "the sender stopped with {kind:?}"
    );
    assert!(sent > 0, "some messages went out before the stall");
    assert!(
        max_queued <= 64 * 1024,
        "the outbox held {max_queued} bytes, over its limit"
    );
    drop(client);
    handle.shutdown(Duration::from_secs(5));
}
