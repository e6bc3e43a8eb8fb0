//! `yield_now` hands the worker to the other runnable fibers in turn.

use std::sync::{Arc, Mutex};

#[test]
fn yielding_fibers_interleave_round_robin() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l2 = log.clone();
    rt.block_on(move || {
        let hs: Vec<_> = (0..3)
            .map(|id| {
                let log = l2.clone();
                fibra::spawn(move || {
                    for step in 0..4 {
                        log.lock().unwrap().push((id, step));
                        fibra::yield_now();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    let log = log.lock().unwrap();
    let expected: Vec<(i32, i32)> = (0..4).flat_map(|s| (0..3).map(move |id| (id, s))).collect();
    assert_eq!(*log, expected);
}

#[test]
fn a_busy_yielding_fiber_does_not_starve_io() {
    // One fiber spins with yield_now until a socket read completes on the same worker.
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let spins = rt.block_on(|| {
        use std::io::{Read, Write};
        let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d2 = done.clone();
        let spinner = fibra::spawn(move || {
            let mut spins = 0u64;
            while !d2.load(std::sync::atomic::Ordering::SeqCst) && spins < 50_000_000 {
                spins += 1;
                fibra::yield_now();
            }
            spins
        });
        let mut c = fibra::net::TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        spinner.join().unwrap()
    });
    assert!(spins < 50_000_000, "I/O was starved by a yielding fiber");
}
