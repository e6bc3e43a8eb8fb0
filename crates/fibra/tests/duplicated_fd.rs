//! A socket whose open file description has another descriptor (a `dup` taken before or after
//! the socket was wrapped) stays in epoll after the socket is closed; the poller must not
//! report events for the dropped socket's freed state (run under AddressSanitizer in CI).

mod util;

use fibra::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

#[test]
fn events_on_a_duplicated_fd_after_the_socket_is_dropped_reach_no_other_socket() {
    let echoed = util::within("sockets after stale events", || {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        rt.block_on(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let pair = || {
                let client = TcpStream::connect(addr).unwrap();
                let (server, _) = listener.accept().unwrap();
                (client, server)
            };
            // Sockets registered with the worker, then dropped while a `dup` of each keeps
            // its open file description (and so its epoll registration) alive.
            let mut keep: Vec<OwnedFd> = Vec::new();
            let mut old_peers = Vec::new();
            for _ in 0..16 {
                let (mut client, server) = pair();
                client.write_all(b"a").unwrap();
                let mut b = [0u8; 1];
                (&server).read_exact(&mut b).unwrap(); // registers it
                keep.push(server.as_fd().try_clone_to_owned().unwrap());
                drop(server);
                old_peers.push(client);
            }
            // New sockets, whose states may reuse the released ones' memory, with readers
            // parked on them.
            let mut clients = Vec::new();
            let mut readers = Vec::new();
            for _ in 0..16 {
                let (client, server) = pair();
                readers.push(fibra::spawn(move || {
                    let mut b = [0u8; 5];
                    (&server).read_exact(&mut b).map(|_| b)
                }));
                clients.push(client);
            }
            fibra::time::sleep(Duration::from_millis(10));
            // Events on the old descriptions: had they reached a new socket's state (a
            // hang-up marks reads "ready for ever"), its reader would spin instead of parking.
            for mut c in old_peers {
                c.write_all(b"more").unwrap();
                drop(c);
            }
            fibra::time::sleep(Duration::from_millis(10));
            for c in &mut clients {
                c.write_all(b"hello").unwrap();
            }
            let got: Vec<[u8; 5]> = readers
                .into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect();
            drop(keep);
            got
        })
    });
    assert!(echoed.iter().all(|b| b == b"hello"));
}

#[test]
fn a_stream_made_from_a_cloned_std_socket() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let n = rt.block_on(|| {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = std_listener.local_addr().unwrap();
        let mut total = 0;
        for _ in 0..8 {
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            let (accepted, _) = std_listener.accept().unwrap();
            let dup = accepted.try_clone().unwrap(); // before `from_std`
            let s = TcpStream::from_std(accepted).unwrap();
            client.write_all(b"z").unwrap();
            let mut b = [0u8; 1];
            total += (&s).read(&mut b).unwrap();
            drop(s);
            client.write_all(b"after").unwrap();
            fibra::time::sleep(Duration::from_millis(5));
            drop(dup);
        }
        total
    });
    assert_eq!(n, 8);
}
