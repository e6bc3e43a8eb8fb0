//! `UnixStream`'s non-blocking reads and readiness (`try_read`, `readable`, `when_readable`),
//! as `TcpStream` has them, so a Unix-socket connection can wait without a stack too.

use fibra::fiber::{Builder, Step};
use fibra::net::{UnixListener, UnixStream};
use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn try_read_says_would_block_until_data_arrives() {
    fibra::run(|| {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(
            a.try_read(&mut buf).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
        b.write_all(b"ping").unwrap();
        a.readable().unwrap();
        assert_eq!(a.try_read(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
        // A read timeout bounds `readable`.
        a.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        assert_eq!(
            a.readable().unwrap_err().kind(),
            std::io::ErrorKind::TimedOut
        );
        drop(b);
        a.set_read_timeout(None).unwrap();
        a.readable().unwrap();
        assert_eq!(a.try_read(&mut buf).unwrap(), 0, "end of stream");
    });
}

#[test]
fn a_fiber_made_of_steps_waits_on_a_unix_stream() {
    let path = std::env::temp_dir().join(format!("fibra-unix-steps-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let p = path.clone();
    fibra::run(move || {
        let listener = UnixListener::bind(&p).unwrap();
        listener
            .set_accept_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut client = UnixStream::connect(&p).unwrap();
        let (server, _) = listener.accept().unwrap();
        let h = Builder::new()
            .spawn_steps(move || {
                let wait = server.when_readable();
                wait.then(move |ready| {
                    ready.unwrap();
                    let mut buf = [0u8; 8];
                    let n = server.try_read(&mut buf).unwrap();
                    (&server).write_all(&buf[..n]).unwrap();
                    Step::done()
                })
            })
            .unwrap();
        client.write_all(b"hi").unwrap();
        let mut reply = [0u8; 2];
        client.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"hi");
        h.join().unwrap();
    });
    let _ = std::fs::remove_file(&path);
}
