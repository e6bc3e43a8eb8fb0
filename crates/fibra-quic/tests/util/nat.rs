//! [`Nat`]: a relay that stands for a client's NAT, whose outside address changes when a
//! test says so (NAT rebinding, RFC 9000 §9.3): the server sees the same connection's
//! datagrams come from a new port.

use super::receive_until;
use fibra::net::UdpSocket;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// What the relay's fibers share.
struct Shared {
    stop: AtomicBool,
    /// The inside socket: the client writes to it, and gets the server's answers from it.
    inside: UdpSocket,
    /// The client's address, once it has written.
    client: Mutex<Option<SocketAddr>>,
    /// The outside socket in use: the server sees the client at its address.
    outside: Mutex<Arc<UdpSocket>>,
}

/// A NAT between one client and `server`.
pub struct Nat {
    /// Where the client sends.
    pub addr: SocketAddr,
    server: SocketAddr,
    shared: Arc<Shared>,
    fibers: Vec<fibra::JoinHandle<()>>,
}

impl Nat {
    /// A NAT to `server`, with a first outside address; runs in fibers until dropped.
    pub fn start(server: SocketAddr) -> Nat {
        let inside = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = inside.local_addr().unwrap();
        let outside = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            inside,
            client: Mutex::new(None),
            outside: Mutex::new(outside.clone()),
        });
        let st = shared.clone();
        let mut nat = Nat {
            addr,
            server,
            shared,
            fibers: vec![fibra::spawn(move || outbound(&st, server))],
        };
        nat.answers_from(outside);
        nat
    }

    /// Moves the client to a new outside address (a new port); what the server sends to the
    /// old one still reaches the client, as it would until a real NAT forgot the mapping.
    /// Returns the new address.
    pub fn rebind(&mut self) -> SocketAddr {
        let outside = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let at = outside.local_addr().unwrap();
        *self.shared.outside.lock().unwrap() = outside.clone();
        self.answers_from(outside);
        at
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// A fiber that passes what the server sends to `outside` back to the client.
    fn answers_from(&mut self, outside: Arc<UdpSocket>) {
        let st = self.shared.clone();
        self.fibers
            .push(fibra::spawn(move || inbound(&st, &outside)));
    }
}

impl Drop for Nat {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        for f in self.fibers.drain(..) {
            let _ = f.join();
        }
    }
}

/// Client → server, through the outside socket in use.
fn outbound(st: &Shared, server: SocketAddr) {
    receive_until(&st.inside, &st.stop, "nat, inside", |d, from| {
        *st.client.lock().unwrap() = Some(from);
        let outside = st.outside.lock().unwrap().clone();
        // Loopback refuses only when the receiver's buffer is full: a network's loss.
        let _ = outside.send_to(d, server);
    });
}

/// Server → client, from one outside socket.
fn inbound(st: &Shared, outside: &UdpSocket) {
    receive_until(outside, &st.stop, "nat, outside", |d, _| {
        let client = *st.client.lock().unwrap();
        if let Some(client) = client {
            let _ = st.inside.send_to(d, client);
        }
    });
}
