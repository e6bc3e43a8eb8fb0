//! Several fibers may wait on one socket: every waiter is woken, none sleeps forever.

mod util;

use fibra::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn two_fibers_accepting_on_one_listener_both_get_connections() {
    let got = util::within("two acceptors", || {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        rt.block_on(|| {
            let listener = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
            let addr = listener.local_addr().unwrap();
            let acceptors: Vec<_> = (0..2)
                .map(|_| {
                    let l = listener.clone();
                    fibra::spawn(move || {
                        let (mut s, _) = l.accept().unwrap();
                        let mut b = [0u8; 1];
                        s.read_exact(&mut b).unwrap();
                        b[0]
                    })
                })
                .collect();
            // Both acceptors park before the first connection arrives.
            fibra::time::sleep(Duration::from_millis(20));
            let mut clients = Vec::new();
            for byte in [b'a', b'b'] {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(&[byte]).unwrap();
                clients.push(c);
                fibra::time::sleep(Duration::from_millis(5));
            }
            let mut got: Vec<u8> = acceptors.into_iter().map(|h| h.join().unwrap()).collect();
            got.sort();
            got
        })
    });
    assert_eq!(got, b"ab");
}

#[test]
fn two_readers_of_one_stream_are_both_woken() {
    let got = util::within("two readers", || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().unwrap();
            let server = Arc::new(server);
            let readers: Vec<_> = (0..2)
                .map(|i| {
                    let s = server.clone();
                    fibra::fiber::Builder::new()
                        .worker(i)
                        .spawn(move || {
                            let mut b = [0u8; 1];
                            (&*s).read_exact(&mut b).unwrap();
                            b[0]
                        })
                        .unwrap()
                })
                .collect();
            fibra::time::sleep(Duration::from_millis(20));
            client.write_all(b"x").unwrap();
            fibra::time::sleep(Duration::from_millis(20));
            client.write_all(b"y").unwrap();
            let mut got: Vec<u8> = readers.into_iter().map(|h| h.join().unwrap()).collect();
            got.sort();
            got
        })
    });
    assert_eq!(got, b"xy");
}
