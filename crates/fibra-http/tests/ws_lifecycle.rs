//! A WebSocket's life around its messages: graceful shutdown closes open sockets with 1001
//! (in the blocking `read` loop and in a split `Connection::run`) and the server stops once
//! the clients have answered; an idle peer is pinged, one that answers stays, one that stays
//! silent is closed with 1001.

mod ws_util;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fibra_http::{ws, Request, Server, ServerHandle};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::Message;
use ws_util::{client, echo, raw_handshake};

/// `/echo`: the blocking loop; `/split`: the same echo through a `Sender`.
fn server(config: ws::Config) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(1)
        .serve(move |req: Request| match req.uri().path() {
            "/split" => ws::upgrade(&req, config.clone(), |socket| {
                let (conn, tx) = ws::split(socket, 1 << 20, None);
                conn.run(move |msg| {
                    let _ = tx.send(msg);
                })
            }),
            _ => ws::upgrade(&req, config.clone(), echo),
        })
        .expect("server starts")
}

#[test]
fn graceful_shutdown_closes_open_sockets_with_1001() {
    let handle = server(ws::Config::default());
    let addr = handle.local_addr();
    let mut clients: Vec<_> = ["/echo", "/split"]
        .iter()
        .map(|path| {
            let mut c = client(addr, path);
            c.send(Message::text(*path)).unwrap();
            assert_eq!(c.read().unwrap(), Message::text(*path));
            c
        })
        .collect();
    let grace = Duration::from_secs(60);
    let start = Instant::now();
    let shutdown = std::thread::spawn(move || handle.shutdown(grace));
    for (c, path) in clients.iter_mut().zip(["/echo", "/split"]) {
        match c.read() {
            Ok(Message::Close(Some(frame))) => {
                assert_eq!(frame.code, CloseCode::Away, "{path}");
            }
            other => panic!("{path}: expected a close with 1001, got {other:?}"),
        }
        // Reading on sends our close reply; the server then ends the connection.
        loop {
            match c.read() {
                Err(tungstenite::Error::ConnectionClosed) => break,
                Ok(Message::Close(_)) => {}
                other => panic!("{path}: expected the end after the handshake, got {other:?}"),
            }
        }
    }
    shutdown.join().unwrap();
    assert!(
        start.elapsed() < grace,
        "the server waited out its grace period instead of closing"
    );
}

/// Reads one unmasked server frame: (opcode byte, payload).
fn read_frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).ok()?;
    assert!(head[1] < 126, "short frames only here");
    let mut payload = vec![0; head[1] as usize];
    s.read_exact(&mut payload).ok()?;
    Some((head[0], payload))
}

#[test]
fn a_silent_peer_is_pinged_then_closed_with_1001() {
    let config = ws::Config::default()
        .idle_timeout(Some(Duration::from_millis(100)))
        .ping_timeout(Duration::from_millis(100));
    let handle = server(config);
    for path in ["/echo", "/split"] {
        let mut s = raw_handshake(handle.local_addr(), path);
        // Sends nothing, answers nothing: a ping, then the close, then the end.
        assert_eq!(read_frame(&mut s), Some((0x89, vec![])), "{path}: a ping");
        let (op, payload) = read_frame(&mut s).expect("a close frame");
        assert_eq!(op, 0x88, "{path}");
        assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1001, "{path}");
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{path}: nothing after the close: {rest:?}");
    }
    handle.shutdown(Duration::from_secs(5));
}

#[test]
fn a_peer_that_answers_pings_stays() {
    let config = ws::Config::default()
        .idle_timeout(Some(Duration::from_millis(50)))
        .ping_timeout(Duration::from_secs(10));
    let handle = server(config);
    for path in ["/echo", "/split"] {
        let mut c = client(handle.local_addr(), path);
        // Three pings in a row, each answered (tungstenite queues the pong; flush sends it).
        for _ in 0..3 {
            assert!(matches!(c.read(), Ok(Message::Ping(_))), "{path}");
            c.flush().unwrap();
        }
        c.send(Message::text("still here")).unwrap();
        loop {
            match c.read().unwrap() {
                Message::Ping(_) => c.flush().unwrap(),
                msg => {
                    assert_eq!(msg, Message::text("still here"), "{path}");
                    break;
                }
            }
        }
        c.close(None).unwrap();
        while c.read().is_ok() {}
    }
    handle.shutdown(Duration::from_secs(5));
}
