//! A WebSocket chat room: every text message a client sends goes to every client.
//!
//! Each connection's fiber runs its side of the socket (`ws::Connection::run`); the room
//! holds a `ws::Sender` per client and broadcasts through them. A client whose 256 KiB queue
//! is full (it stopped reading) is dropped from the room and its connection ended, so one
//! slow client cannot grow the server's memory or hold the others up.
//!
//! ```sh
//! cargo run --release -p fibra-http --example ws_chat -- 8080
//! # then, in two terminals: websocat ws://127.0.0.1:8080/ (or a browser's WebSocket)
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra_http::{ws, Request, Server};

/// The clients of the room, by id.
#[derive(Default)]
struct Room {
    members: Mutex<HashMap<u64, ws::Sender>>,
    next_id: AtomicU64,
}

impl Room {
    /// Sends `msg` to every member; one whose queue is full is dropped.
    fn broadcast(&self, msg: &ws::Message) {
        let members: Vec<(u64, ws::Sender)> = {
            let m = self.members.lock().unwrap();
            m.iter().map(|(id, tx)| (*id, tx.clone())).collect()
        };
        for (id, tx) in members {
            if tx.send(msg.clone()).is_err() {
                tx.abort();
                self.members.lock().unwrap().remove(&id);
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .map(|p| p.parse().expect("a port number"))
        .unwrap_or(8080);
    let room = Arc::new(Room::default());
    println!("chat on ws://127.0.0.1:{port}/");
    Server::bind(("127.0.0.1", port)).run(move |req: Request| {
        let room = room.clone();
        ws::upgrade(&req, ws::Config::default(), move |socket| {
            // No waiting for a full queue: that client is too slow to keep.
            let (conn, tx) = ws::split(socket, 256 * 1024, Some(Duration::ZERO));
            let id = room.next_id.fetch_add(1, Ordering::Relaxed);
            room.members.lock().unwrap().insert(id, tx);
            let r = room.clone();
            conn.run(move |msg| {
                if msg.is_text() {
                    r.broadcast(&msg);
                }
            });
            room.members.lock().unwrap().remove(&id);
        })
    })
}
