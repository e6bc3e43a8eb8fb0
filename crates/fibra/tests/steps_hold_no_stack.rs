//! A fiber made of steps holds no stack while it waits: 500 of them waiting on sockets map
//! (almost) no memory, where 500 ordinary fibers blocked in `readable` map a stack each.
//! (Alone in its binary: it counts the process's memory mappings.)

mod util;

use fibra::fiber::{Builder, Step};
use fibra::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const N: usize = 500;

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

/// `n` connected pairs: (clients, server sides).
fn pairs(listener: &TcpListener, n: usize) -> (Vec<TcpStream>, Vec<TcpStream>) {
    (0..n)
        .map(|_| {
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().unwrap();
            (client, server)
        })
        .unzip()
}

/// Reads until `WouldBlock`, so the reactor knows the socket is drained (a new socket counts
/// as readable until a read comes back empty).
fn drain(s: &TcpStream) {
    let mut b = [0u8; 16];
    while let Ok(1..) = s.try_read(&mut b) {}
}

/// Yields until `counter` reaches `n` (every fiber has started and is about to wait).
fn until(counter: &AtomicUsize, n: usize) {
    let deadline = std::time::Instant::now() + util::PATIENCE;
    while counter.load(Ordering::SeqCst) < n {
        assert!(std::time::Instant::now() < deadline, "fibers did not start");
        fibra::yield_now();
    }
}

/// Wakes every server side with a byte and checks each fiber read it.
fn wake_all(clients: &mut [TcpStream], done: &AtomicUsize) {
    for c in clients.iter_mut() {
        c.write_all(b"!").unwrap();
    }
    until(done, clients.len());
}

#[test]
fn waiting_steps_map_no_stacks_and_blocked_fibers_do() {
    assert!(util::raise_nofile(4 * N as u64 + 100) > 4 * N as u64);
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let (steps_growth, fibers_growth) = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();

        // N fibers made of steps, each waiting for its socket.
        let (mut clients, servers) = pairs(&listener, N);
        let (started, done) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let before = mappings();
        let handles: Vec<_> = servers
            .into_iter()
            .map(|s| {
                let (started, done) = (started.clone(), done.clone());
                Builder::new()
                    .spawn_steps(move || {
                        drain(&s);
                        started.fetch_add(1, Ordering::SeqCst);
                        s.when_readable().then(move |ready| {
                            ready.unwrap();
                            let mut b = [0u8; 1];
                            assert_eq!((&s).read(&mut b).unwrap(), 1);
                            done.fetch_add(1, Ordering::SeqCst);
                            Step::done()
                        })
                    })
                    .unwrap()
            })
            .collect();
        until(&started, N);
        let steps_growth = mappings().saturating_sub(before);
        wake_all(&mut clients, &done);
        for h in handles {
            h.join().unwrap();
        }

        // The same with ordinary fibers blocked in `readable`.
        let (mut clients, servers) = pairs(&listener, N);
        let (started, done) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let before = mappings();
        let handles: Vec<_> = servers
            .into_iter()
            .map(|s| {
                let (started, done) = (started.clone(), done.clone());
                fibra::spawn(move || {
                    drain(&s);
                    started.fetch_add(1, Ordering::SeqCst);
                    s.readable().unwrap();
                    let mut b = [0u8; 1];
                    assert_eq!((&s).read(&mut b).unwrap(), 1);
                    done.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        until(&started, N);
        let fibers_growth = mappings().saturating_sub(before);
        wake_all(&mut clients, &done);
        for h in handles {
            h.join().unwrap();
        }
        (steps_growth, fibers_growth)
    });
    // Each blocked fiber maps its own stack (a stack and its guard page are separate
    // mappings), less the few stacks the pool had idle.
    assert!(
        fibers_growth >= N - 16,
        "blocked fibers: {fibers_growth} new mappings"
    );
    assert!(
        steps_growth < N / 10,
        "waiting steps: {steps_growth} new mappings"
    );
}
