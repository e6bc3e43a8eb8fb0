//! A woken fiber made of steps runs its next step on the worker loop's own stack. A step that
//! blocks there (a lock, a channel, a sleep, a yield) takes that stack over as its fiber's,
//! and a new loop goes on: these tests make steps block in turn, wait on each other, yield,
//! panic after blocking, borrow a shared stack, and stay blocked when the runtime shuts down,
//! and check every outcome.

mod util;

use fibra::fiber::{Builder, Step};
use fibra::net::{TcpListener, TcpStream};
use fibra::sync::mpsc;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Reads what has arrived, until `WouldBlock`; `None` at the end of the stream.
fn drain(s: &TcpStream) -> Option<Vec<u8>> {
    match util::read_available(s) {
        (_, true) => None,
        (got, false) => Some(got),
    }
}

/// Each step: reads what arrived, blocks in `block` with it, writes back what `block`
/// returned, then waits for more without a stack. Counts the steps that blocked.
fn relay(
    conn: TcpStream,
    block: Arc<dyn Fn(Vec<u8>) -> Vec<u8> + Send + Sync>,
    blocked: Arc<AtomicUsize>,
) -> Step {
    let Some(got) = drain(&conn) else {
        return Step::done();
    };
    if !got.is_empty() {
        let answer = block(got);
        blocked.fetch_add(1, Ordering::SeqCst);
        (&conn).write_all(&answer).unwrap();
    }
    conn.when_readable().then(move |ready| {
        ready.unwrap();
        relay(conn, block, blocked)
    })
}

/// `n` relays on one worker whose steps block in `block`; every client sends `rounds`
/// messages and checks each answer is `expect(message)`.
fn run_relays(
    n: usize,
    rounds: usize,
    block: impl Fn(Vec<u8>) -> Vec<u8> + Send + Sync + 'static,
    expect: fn(&[u8]) -> Vec<u8>,
) -> usize {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let block: Arc<dyn Fn(Vec<u8>) -> Vec<u8> + Send + Sync> = Arc::new(block);
        let blocked = Arc::new(AtomicUsize::new(0));
        let mut clients = Vec::new();
        let mut relays = Vec::new();
        for _ in 0..n {
            let (client, server) = util::tcp_pair(&listener);
            let (block, blocked) = (block.clone(), blocked.clone());
            relays.push(
                Builder::new()
                    .spawn_steps(move || relay(server, block, blocked))
                    .unwrap(),
            );
            clients.push(client);
        }
        for round in 0..rounds {
            // Every client sends before any answer is read, so the woken steps block in turn.
            let msgs: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("{round:03}-{i:03}").into_bytes())
                .collect();
            for (client, msg) in clients.iter_mut().zip(&msgs) {
                client.write_all(msg).unwrap();
            }
            for (client, msg) in clients.iter_mut().zip(&msgs) {
                let want = expect(msg);
                let mut back = vec![0u8; want.len()];
                client.read_exact(&mut back).unwrap();
                assert_eq!(back, want);
            }
        }
        drop(clients);
        for r in relays {
            r.join().unwrap();
        }
        blocked.load(Ordering::SeqCst)
    })
}

fn same(msg: &[u8]) -> Vec<u8> {
    msg.to_vec()
}

#[test]
fn steps_that_sleep_in_turn_each_answer_their_own_client() {
    let blocked = run_relays(
        16,
        8,
        |got| {
            fibra::time::sleep(Duration::from_millis(1));
            got
        },
        same,
    );
    assert!(blocked >= 16 * 8, "{blocked} blocked steps");
}

#[test]
fn steps_that_yield_on_the_loop_stack_go_on_where_they_were() {
    let blocked = run_relays(
        16,
        8,
        |mut got| {
            for i in 0..3u8 {
                fibra::yield_now();
                got.push(b'a' + i);
            }
            got
        },
        |msg| [msg, b"abc"].concat(),
    );
    assert!(blocked >= 16 * 8, "{blocked} blocked steps");
}

/// Each step hands its message to a fiber that answers through a channel, and blocks until
/// the answer comes: the answering fiber runs while the step's loop is taken over, and the
/// step resumes on the loop that took over.
#[test]
fn steps_that_wait_on_another_fiber_get_its_answer() {
    let (to_answerer, requests) = mpsc::channel::<(Vec<u8>, mpsc::Sender<Vec<u8>>)>();
    let answerer_started = Arc::new(AtomicUsize::new(0));
    let started = answerer_started.clone();
    let to_answerer = std::sync::Mutex::new(Some(to_answerer));
    let requests = std::sync::Mutex::new(Some(requests));
    let blocked = run_relays(
        12,
        6,
        move |got| {
            // The first step starts the answering fiber (on the same worker).
            if let Some(rx) = requests.lock().unwrap().take() {
                started.fetch_add(1, Ordering::SeqCst);
                fibra::spawn(move || {
                    while let Ok((msg, reply)) = rx.recv() {
                        let mut up = msg.to_ascii_uppercase();
                        up.extend_from_slice(b"!");
                        let _ = reply.send(up);
                    }
                });
            }
            let (tx, rx) = mpsc::channel();
            let sender = to_answerer.lock().unwrap().as_ref().unwrap().clone();
            sender.send((got, tx)).unwrap();
            rx.recv().unwrap()
        },
        |msg| [&msg.to_ascii_uppercase()[..], b"!"].concat(),
    );
    assert_eq!(answerer_started.load(Ordering::SeqCst), 1);
    assert!(blocked >= 12 * 6, "{blocked} blocked steps");
}

/// A step blocks, and other fibers' steps run and block meanwhile on the loops that took
/// over; then it panics: the panic reaches its join, and the other fibers go on.
#[test]
fn a_step_that_blocked_and_then_panics_reaches_its_join() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let msg = rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut bad_client, bad) = util::tcp_pair(&listener);
        assert_eq!(drain(&bad), Some(Vec::new()));
        let failing = Builder::new()
            .spawn_steps(move || {
                bad.when_readable().then(move |_| {
                    fibra::time::sleep(Duration::from_millis(5));
                    drop(bad);
                    panic!("failed after blocking")
                })
            })
            .unwrap();
        let blocked = Arc::new(AtomicUsize::new(0));
        let block: Arc<dyn Fn(Vec<u8>) -> Vec<u8> + Send + Sync> = Arc::new(|got| {
            fibra::time::sleep(Duration::from_millis(1));
            got
        });
        let (mut client, server) = util::tcp_pair(&listener);
        let counted = blocked.clone();
        let good = Builder::new()
            .spawn_steps(move || relay(server, block, counted))
            .unwrap();
        bad_client.write_all(b"x").unwrap();
        for round in 0..20u32 {
            let msg = format!("round {round:02}");
            client.write_all(msg.as_bytes()).unwrap();
            let mut back = vec![0u8; msg.len()];
            client.read_exact(&mut back).unwrap();
            assert_eq!(back, msg.as_bytes());
        }
        let payload = failing.join().unwrap_err();
        drop(client);
        good.join().unwrap();
        assert!(blocked.load(Ordering::SeqCst) >= 20);
        payload.downcast_ref::<&str>().unwrap().to_string()
    });
    assert_eq!(msg, "failed after blocking");
}

/// A step on the loop's stack borrows a shared stack and blocks on it.
#[test]
fn steps_that_block_on_a_shared_stack_answer_their_clients() {
    let blocked = run_relays(
        8,
        6,
        |got| {
            fibra::fiber::on_shared_stack(move || {
                fibra::time::sleep(Duration::from_millis(1));
                got.iter().rev().copied().collect()
            })
        },
        |msg| msg.iter().rev().copied().collect(),
    );
    assert!(blocked >= 8 * 6, "{blocked} blocked steps");
}

/// Steps blocked for good in a step (a channel nobody sends on) when the runtime shuts down
/// are cancelled: what they hold is dropped.
#[test]
fn steps_blocked_for_good_are_cancelled_at_shutdown() {
    struct Flag(std::sync::mpsc::Sender<()>);
    impl Drop for Flag {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let (dropped_tx, dropped) = std::sync::mpsc::channel();
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let (clients, _keep) = rt.block_on(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let entered = Arc::new(AtomicUsize::new(0));
        let mut clients = Vec::new();
        let mut senders = Vec::new();
        for _ in 0..4 {
            let (mut client, server) = util::tcp_pair(&listener);
            assert_eq!(drain(&server), Some(Vec::new()));
            let flag = Flag(dropped_tx.clone());
            let (never_tx, never_rx) = mpsc::channel::<()>();
            senders.push(never_tx);
            let entered = entered.clone();
            Builder::new()
                .spawn_steps(move || {
                    server.when_readable().then(move |_| {
                        let _held = (server, flag);
                        entered.fetch_add(1, Ordering::SeqCst);
                        let _ = never_rx.recv();
                        Step::done()
                    })
                })
                .unwrap();
            client.write_all(b"x").unwrap();
            clients.push(client);
        }
        let deadline = std::time::Instant::now() + util::PATIENCE;
        while entered.load(Ordering::SeqCst) < 4 {
            assert!(std::time::Instant::now() < deadline, "steps did not start");
            fibra::yield_now();
        }
        (clients, senders)
    });
    assert!(dropped.try_recv().is_err(), "dropped while the runtime ran");
    drop(rt);
    for _ in 0..4 {
        dropped
            .recv_timeout(util::PATIENCE)
            .expect("a blocked step's state was not dropped");
    }
    drop(clients);
}
