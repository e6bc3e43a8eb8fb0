//! A socket a fiber has used (so it is registered with a worker's poller) can be handed to a
//! plain thread or a blocking task, where a read that must wait blocks the thread (with the
//! stream's timeout) as documented, then back to a fiber.

use fibra::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn a_registered_stream_blocks_on_a_plain_thread_and_in_spawn_blocking() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let (on_thread, in_blocking, back_in_fiber, timed_out) = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4];
        client.write_all(b"one.").unwrap();
        (&server).read_exact(&mut buf).unwrap(); // registers the stream with this worker
        assert_eq!(&buf, b"one.");

        // A plain thread: its read has to wait for data sent later.
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 4];
            (&server).read_exact(&mut buf).map(|_| (buf, server))
        });
        fibra::time::sleep(Duration::from_millis(20));
        client.write_all(b"two.").unwrap();
        let (on_thread, server) = fibra::task::spawn_blocking(move || t.join().unwrap()).unwrap();

        // A blocking task, the same.
        let task = fibra::spawn(move || {
            fibra::task::spawn_blocking(move || {
                let mut buf = [0u8; 4];
                (&server).read_exact(&mut buf).map(|_| (buf, server))
            })
        });
        fibra::time::sleep(Duration::from_millis(20));
        client.write_all(b"thr.").unwrap();
        let (in_blocking, server) = task.join().unwrap().unwrap();

        // Back in a fiber.
        client.write_all(b"for.").unwrap();
        (&server).read_exact(&mut buf).unwrap();

        // The read timeout applies on the thread.
        server
            .set_read_timeout(Some(Duration::from_millis(30)))
            .unwrap();
        let timed_out = fibra::task::spawn_blocking(move || {
            let mut b = [0u8; 1];
            (&server).read(&mut b).unwrap_err().kind()
        });
        (on_thread, in_blocking, buf, timed_out)
    });
    assert_eq!(&on_thread, b"two.");
    assert_eq!(&in_blocking, b"thr.");
    assert_eq!(&back_in_fiber, b"for.");
    assert_eq!(timed_out, std::io::ErrorKind::TimedOut);
}
