//! `TcpStream::readable_or_notified`: the wait of a fiber that owns a connection and also
//! writes what other fibers queue. It wakes for a notification from another fiber or thread,
//! for input, and for a permit stored before it waited; it honours the read timeout; and a
//! notification that wakes it is taken, not left behind.

mod util;

use fibra::net::{TcpListener, TcpStream};
use fibra::sync::Notify;
use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::Duration;

/// A connected pair (server side, client side) on the current runtime.
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (server, client)
}

#[test]
fn wakes_for_a_notification_input_a_stored_permit_and_times_out() {
    let results = util::within("readable_or_notified", || {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        rt.block_on(|| {
            let (mut server, mut client) = pair();
            server
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            let notify = Arc::new(Notify::new());
            let mut out = Vec::new();
            // A new socket counts as readable until a read finds it empty.
            let mut rest = [0u8; 16];
            assert_eq!(
                server.try_read(&mut rest).unwrap_err().kind(),
                ErrorKind::WouldBlock
            );

            // 1. Notified by a fiber on another worker while parked.
            let n = notify.clone();
            let waker = fibra::fiber::Builder::new()
                .worker(1)
                .spawn(move || {
                    fibra::time::sleep(Duration::from_millis(20));
                    n.notify_one();
                })
                .unwrap();
            out.push(server.readable_or_notified(&notify).unwrap());
            waker.join().unwrap();

            // 2. Notified from a plain thread.
            let n = notify.clone();
            let thread = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                n.notify_one();
            });
            out.push(server.readable_or_notified(&notify).unwrap());
            thread.join().unwrap();

            // 3. Input: not notified, and the data is there.
            client.write_all(b"x").unwrap();
            out.push(server.readable_or_notified(&notify).unwrap());
            let mut b = [0u8; 1];
            server.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"x");

            // 4. A permit stored while nobody waited is taken at once.
            notify.notify_one();
            out.push(server.readable_or_notified(&notify).unwrap());

            // 5. Nothing: the read timeout, and the notification taken in 4 is not seen again
            // (a read that finds nothing first tells the reactor the socket is drained).
            assert_eq!(
                server.try_read(&mut rest).unwrap_err().kind(),
                ErrorKind::WouldBlock
            );
            server
                .set_read_timeout(Some(Duration::from_millis(50)))
                .unwrap();
            let e = server.readable_or_notified(&notify).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            out
        })
    });
    assert_eq!(results, vec![true, true, false, true]);
}
