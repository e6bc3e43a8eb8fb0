//! TCP echo with 10,000 concurrent connections served by one worker.
//!
//! The client side runs in a child process (the fd limit is per process), itself on fibra:
//! 10,000 fibers connect, wait until all are connected, then each sends a unique message and
//! checks its echo. The server counts how many connections were open at once.

mod util;

use fibra::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

const N: usize = 10_000;

fn client(addr: String) {
    assert!(
        util::raise_nofile(N as u64 + 200) >= N as u64 + 100,
        "fd limit too low"
    );
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let ok = rt.block_on(move || {
        let (tx, rx) = fibra::sync::mpsc::channel::<fibra::sync::oneshot::Sender<()>>();
        let hs: Vec<_> = (0..N)
            .map(|i| {
                let tx = tx.clone();
                let addr = addr.clone();
                fibra::spawn(move || -> bool {
                    let mut s = TcpStream::connect(addr.as_str()).expect("connect");
                    let (go_tx, go_rx) = fibra::sync::oneshot::channel();
                    tx.send(go_tx).unwrap();
                    drop(tx);
                    go_rx.recv().unwrap();
                    let msg = format!("hello {i:>10}\n");
                    s.write_all(msg.as_bytes()).unwrap();
                    let mut back = vec![0u8; msg.len()];
                    s.read_exact(&mut back).unwrap();
                    back == msg.as_bytes()
                })
            })
            .collect();
        drop(tx);
        let gates: Vec<_> = rx.iter().collect();
        assert_eq!(gates.len(), N);
        for g in gates {
            g.send(()).unwrap();
        }
        hs.into_iter()
            .filter(|_| true)
            .map(|h| h.join().unwrap())
            .filter(|&b| b)
            .count()
    });
    println!("CLIENT-OK {ok}");
}

#[test]
fn echo_10000_concurrent_connections_on_one_worker() {
    if util::child_role().as_deref() == Some("client") {
        client(std::env::var("FIBRA_TEST_ARGS").unwrap());
        return;
    }
    assert!(
        util::raise_nofile(N as u64 + 200) >= N as u64 + 100,
        "fd limit too low"
    );
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (a2, p2) = (active.clone(), peak.clone());
    let listener = rt.block_on(|| TcpListener::bind("127.0.0.1:0").unwrap());
    let addr = listener.local_addr().unwrap();
    let server = rt.spawn(move || {
        for _ in 0..N {
            let (mut conn, _) = listener.accept().unwrap();
            let (active, peak) = (a2.clone(), p2.clone());
            fibra::spawn(move || {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                let mut buf = [0u8; 256];
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => conn.write_all(&buf[..n]).unwrap(),
                    }
                }
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    let mut child = util::child(
        "echo_10000_concurrent_connections_on_one_worker",
        "client",
        &addr.to_string(),
    )
    .spawn()
    .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > util::PATIENCE * 5 {
            let _ = child.kill();
            panic!("client process did not finish");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "client failed: {err}");
    assert!(
        out.contains(&format!("CLIENT-OK {N}")),
        "stdout: {out}\nstderr: {err}"
    );
    server.join().unwrap();
    assert_eq!(
        peak.load(Ordering::SeqCst),
        N,
        "all connections were open at once"
    );
}
