//! A broadcast over WebSocket (`ws::split`): every message a client sends reaches every
//! client of the room, written by each client's own connection fiber from its bounded queue;
//! a client that stops reading fills its queue and is dropped from the room (its connection
//! aborted), and the others go on receiving.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra_http::{ws, Request, Server, ServerHandle};
use tungstenite::Message;

const TIMEOUT: Duration = Duration::from_secs(20);
/// Each client's queue.
const QUEUE: usize = 64 * 1024;

/// The chat room: a sender per member.
#[derive(Default)]
struct Room {
    members: Mutex<HashMap<u64, ws::Sender>>,
    next: AtomicU64,
}

impl Room {
    /// Sends `msg` to every member; one whose queue is full is dropped.
    fn broadcast(&self, msg: &Message) {
        let members: Vec<(u64, ws::Sender)> = self
            .members
            .lock()
            .unwrap()
            .iter()
            .map(|(id, tx)| (*id, tx.clone()))
            .collect();
        for (id, tx) in members {
            if tx.send(msg.clone()).is_err() {
                tx.abort();
                self.members.lock().unwrap().remove(&id);
            }
        }
    }

    fn len(&self) -> usize {
        self.members.lock().unwrap().len()
    }
}

fn server(room: Arc<Room>) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .workers(2)
        .serve(move |req: Request| {
            let room = room.clone();
            ws::upgrade(&req, ws::Config::default(), move |socket| {
                // A zero send timeout: a full queue fails at once (the room drops the client).
                let (conn, tx) = ws::split(socket, QUEUE, Some(Duration::ZERO));
                let id = room.next.fetch_add(1, Ordering::SeqCst);
                room.members.lock().unwrap().insert(id, tx);
                let r = room.clone();
                conn.run(move |msg| r.broadcast(&msg));
                room.members.lock().unwrap().remove(&id);
            })
        })
        .expect("server starts")
}

fn client(addr: SocketAddr) -> tungstenite::WebSocket<TcpStream> {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
    tcp.set_write_timeout(Some(TIMEOUT)).unwrap();
    let (socket, _) = tungstenite::client(format!("ws://{addr}/chat"), tcp).unwrap();
    socket
}

/// Waits (bounded) until the room has `n` members.
fn wait_members(room: &Room, n: usize) {
    let start = Instant::now();
    while room.len() != n {
        assert!(
            start.elapsed() < TIMEOUT,
            "room has {} members, want {n}",
            room.len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn next_text(c: &mut tungstenite::WebSocket<TcpStream>) -> String {
    loop {
        match c.read().unwrap() {
            Message::Text(t) => return t.to_string(),
            Message::Binary(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn every_member_gets_every_message() {
    let room = Arc::new(Room::default());
    let handle = server(room.clone());
    let mut clients: Vec<_> = (0..3).map(|_| client(handle.local_addr())).collect();
    wait_members(&room, 3);
    for (i, c) in clients.iter_mut().enumerate() {
        c.send(Message::text(format!("from {i}"))).unwrap();
    }
    // Each gets all three (the order between senders is not fixed).
    for (i, c) in clients.iter_mut().enumerate() {
        let mut got: Vec<String> = (0..3).map(|_| next_text(c)).collect();
        got.sort();
        assert_eq!(got, ["from 0", "from 1", "from 2"], "client {i}");
    }
    for mut c in clients {
        c.close(None).unwrap();
        // The server completes the close handshake: its close frame comes back.
        loop {
            match c.read() {
                Ok(Message::Close(_)) => break,
                Ok(Message::Text(_)) => continue,
                other => panic!("expected the server's close frame, got {other:?}"),
            }
        }
    }
    wait_members(&room, 0);
    handle.shutdown(Duration::from_secs(5));
}

#[test]
fn a_client_that_stops_reading_is_dropped_and_the_others_go_on() {
    let room = Arc::new(Room::default());
    let handle = server(room.clone());
    let addr = handle.local_addr();
    let mut talker = client(addr);
    let mut reader = client(addr);
    let _stalled = client(addr); // never reads
    wait_members(&room, 3);
    // 64 KiB messages: the stalled client's socket buffers and then its 64 KiB queue fill;
    // the talker and the reader keep up.
    let big = "x".repeat(64 * 1024);
    let mut sent = 0;
    while room.len() == 3 {
        assert!(sent < 10_000, "the stalled client was never dropped");
        talker.send(Message::text(big.clone())).unwrap();
        assert_eq!(next_text(&mut talker).len(), big.len());
        assert_eq!(next_text(&mut reader).len(), big.len());
        sent += 1;
    }
    assert_eq!(room.len(), 2, "only the stalled client left");
    talker.send(Message::text("still here")).unwrap();
    assert_eq!(next_text(&mut talker), "still here");
    assert_eq!(next_text(&mut reader), "still here");
    for mut c in [talker, reader] {
        c.close(None).unwrap();
        while c.read().is_ok() {}
    }
    handle.shutdown(Duration::from_secs(5));
}
