//! Fibers made of steps (`Builder::spawn_steps`, `Step`, `TcpStream::when_readable`): the next
//! step runs once the socket is readable, with the timeout's error, on another worker's
//! wake-up; a ready-now `Wait` runs the next step at once; panics and results reach `join`; waiting steps are dropped with their runtime.

mod util;

use fibra::fiber::{Builder, Step, Wait};
use fibra::net::{TcpListener, TcpStream};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Reads what has arrived, until `WouldBlock` or the end of the stream.
fn drain(s: &TcpStream) -> Vec<u8> {
    util::read_available(s).0
}

/// Echoes what has arrived, then waits (without a stack) for more; counts its steps.
fn echo(conn: TcpStream, steps: Arc<AtomicUsize>) -> Step {
    steps.fetch_add(1, Ordering::SeqCst);
    let mut buf = [0u8; 256];
    loop {
        match conn.try_read(&mut buf) {
            Ok(0) => return Step::done(),
            Ok(n) => (&conn).write_all(&buf[..n]).unwrap(),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("read failed: {e}"),
        }
    }
    conn.when_readable().then(move |ready| {
        ready.unwrap();
        echo(conn, steps)
    })
}

#[test]
fn echo_over_many_waits_then_join_at_the_end() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut client, server) = util::tcp_pair(&listener);
        let steps = Arc::new(AtomicUsize::new(0));
        let counted = steps.clone();
        let h = Builder::new()
            .spawn_steps(move || echo(server, counted))
            .unwrap();
        for round in 0..50u32 {
            let msg = format!("round {round:>4}");
            client.write_all(msg.as_bytes()).unwrap();
            let mut back = vec![0u8; msg.len()];
            client.read_exact(&mut back).unwrap();
            assert_eq!(back, msg.as_bytes());
            assert!(!h.is_finished());
        }
        drop(client);
        h.join().unwrap();
        // One step per wake-up (at least one per round trip), and the last one saw the EOF.
        assert!(steps.load(Ordering::SeqCst) >= 51);
    });
}

#[test]
fn the_read_timeout_reaches_the_next_step() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let kind = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (_client, server) = util::tcp_pair(&listener);
        server
            .set_read_timeout(Some(Duration::from_millis(30)))
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let h = Builder::new()
            .spawn_steps(move || {
                drain(&server);
                server.when_readable().then(move |ready| {
                    tx.send(ready.map_err(|e| e.kind())).unwrap();
                    drop(server);
                    Step::done()
                })
            })
            .unwrap();
        h.join().unwrap();
        rx.recv_timeout(util::PATIENCE).unwrap()
    });
    assert_eq!(kind, Err(io::ErrorKind::TimedOut));
}

#[test]
fn a_socket_registered_on_one_worker_wakes_steps_on_another() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let got = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut client, server) = util::tcp_pair(&listener);
        // Register the socket with worker 0's poller: wait on it there first.
        let server = Builder::new()
            .worker(0)
            .spawn(move || {
                server
                    .set_read_timeout(Some(Duration::from_millis(1)))
                    .unwrap();
                let mut b = [0u8; 1];
                let e = (&server).read(&mut b).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                server.set_read_timeout(None).unwrap();
                assert!(fibra::current_worker() == Some(0));
                server
            })
            .unwrap()
            .join()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let h = Builder::new()
            .worker(1)
            .spawn_steps(move || {
                server.when_readable().then(move |ready| {
                    ready.unwrap();
                    tx.send((fibra::current_worker(), drain(&server))).unwrap();
                    Step::done()
                })
            })
            .unwrap();
        client.write_all(b"wake").unwrap();
        h.join().unwrap();
        rx.recv_timeout(util::PATIENCE).unwrap()
    });
    assert_eq!(got, (Some(1), b"wake".to_vec()));
}

#[test]
fn a_ready_now_wait_runs_the_next_step_at_once_with_its_outcome() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let got = rt.block_on(|| {
        let (tx, rx) = mpsc::channel();
        let h = Builder::new()
            .spawn_steps(move || {
                Wait::ready().then(move |first| {
                    let err = io::Error::other("known already");
                    Wait::now(Err(err)).then(move |second| {
                        tx.send((first.is_ok(), second.unwrap_err().to_string()))
                            .unwrap();
                        Step::done()
                    })
                })
            })
            .unwrap();
        h.join().unwrap();
        rx.recv_timeout(util::PATIENCE).unwrap()
    });
    assert_eq!(got, (true, "known already".to_string()));
}

#[test]
fn a_panic_in_a_later_step_comes_back_from_join() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let msg = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut client, server) = util::tcp_pair(&listener);
        // Drained before the client writes (and the fiber starts), so the step has to wait.
        assert!(drain(&server).is_empty());
        let h = Builder::new()
            .spawn_steps(move || {
                server.when_readable().then(move |_| {
                    drop(server);
                    panic!("second step failed")
                })
            })
            .unwrap();
        client.write_all(b"x").unwrap();
        let payload = h.join().unwrap_err();
        payload.downcast_ref::<&str>().unwrap().to_string()
    });
    assert_eq!(msg, "second step failed");
}

#[test]
fn steps_still_waiting_are_dropped_with_the_runtime() {
    struct Flag(mpsc::Sender<()>);
    impl Drop for Flag {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let (tx, rx) = mpsc::channel();
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let client = rt.block_on(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (client, server) = util::tcp_pair(&listener);
        let flag = Flag(tx);
        Builder::new()
            .spawn_steps(move || {
                drain(&server);
                server.when_readable().then(move |_| {
                    drop((server, flag));
                    Step::done()
                })
            })
            .unwrap();
        // Let the fiber run its first step and start waiting.
        for _ in 0..10 {
            fibra::yield_now();
        }
        client
    });
    assert!(rx.try_recv().is_err(), "dropped while the runtime ran");
    drop(rt);
    rx.recv_timeout(util::PATIENCE)
        .expect("the waiting step's state was not dropped");
    drop(client);
}
