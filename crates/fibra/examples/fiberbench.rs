//! Micro-benchmarks of the runtime. Prints one `name value` pair per line.
//!
//! ```text
//! cargo run --release -p fibra --example fiberbench
//! ```
//!
//! - `spawn_join_10000_us`: spawn 10,000 fibers on one worker, each with an empty body, join
//!   all (best of several rounds, after one warm-up round that fills the stack pool).
//! - `os_threads_spawn_join_10000_us`: the same with `std::thread`.
//! - `switch_ns`: one `yield_now` hand-over between two fibers on one worker.
//! - `corosensei_deep_suspend_ns`: the same hand-over pattern with no scheduler at all — two
//!   bare `corosensei` coroutines resumed alternately, each suspending from inside a
//!   non-inlined function. Every such hand-over returns through addresses the CPU's
//!   return-stack predictor did not push; fibra inlines `yield_now` and its park path into the
//!   caller to avoid exactly this cost, which is why `switch_ns` can be lower than this.
//! - `channel_roundtrip_ns`: a message to a fiber and back over two channels, same worker.
//! - `parked_fiber_rss_bytes`: resident memory per fiber while 10,000 fibers are blocked in
//!   `read` on idle sockets (RSS delta / 10,000; includes the socket objects' user-space state).

use fibra::net::{TcpListener, TcpStream};
use fibra::sync::mpsc;
use std::io::Read;
use std::time::{Duration, Instant};

const N: usize = 10_000;

fn spawn_join() -> u128 {
    let mut best = u128::MAX;
    for _ in 0..6 {
        let t = Instant::now();
        let hs: Vec<_> = (0..N).map(|_| fibra::spawn(|| {})).collect();
        for h in hs {
            h.join().unwrap();
        }
        best = best.min(t.elapsed().as_micros());
    }
    best
}

fn os_threads() -> u128 {
    let t = Instant::now();
    let hs: Vec<_> = (0..N).map(|_| std::thread::spawn(|| {})).collect();
    for h in hs {
        h.join().unwrap();
    }
    t.elapsed().as_micros()
}

fn switch_ns() -> f64 {
    const ROUNDS: u64 = 2_000_000;
    let other = fibra::spawn(|| {
        for _ in 0..ROUNDS {
            fibra::yield_now();
        }
    });
    let t = Instant::now();
    for _ in 0..ROUNDS {
        fibra::yield_now();
    }
    let el = t.elapsed();
    other.join().unwrap();
    // Each round of the loop is two hand-overs: to the other fiber and back.
    el.as_nanos() as f64 / (ROUNDS * 2) as f64
}

thread_local! {
    static DEEP_YIELDER: std::cell::Cell<*const corosensei::Yielder<(), ()>> =
        const { std::cell::Cell::new(std::ptr::null()) };
}

#[inline(never)]
fn deep_yield() {
    let y = DEEP_YIELDER.with(|c| c.get());
    // SAFETY: set at coroutine entry to this coroutine's own yielder, which outlives the loop
    // that calls this function; the benchmark resumes coroutines on one thread only.
    unsafe { (*y).suspend(()) };
    DEEP_YIELDER.with(|c| c.set(y));
}

fn corosensei_deep_suspend_ns() -> f64 {
    const ROUNDS: u64 = 2_000_000;
    let mut cos: Vec<corosensei::Coroutine<(), (), ()>> = (0..2)
        .map(|_| {
            corosensei::Coroutine::new(|y: &corosensei::Yielder<(), ()>, ()| {
                DEEP_YIELDER.with(|c| c.set(y as *const _));
                for _ in 0..ROUNDS {
                    deep_yield();
                }
            })
        })
        .collect();
    let t = Instant::now();
    let mut runs = 0u64;
    let mut k = 0;
    while cos[k].resume(()).as_return().is_none() {
        runs += 1;
        k = 1 - k;
    }
    t.elapsed().as_nanos() as f64 / runs as f64
}

fn channel_roundtrip_ns() -> f64 {
    const ROUNDS: u64 = 500_000;
    let (to_tx, to_rx) = mpsc::channel::<u64>();
    let (back_tx, back_rx) = mpsc::channel::<u64>();
    let echo = fibra::spawn(move || {
        while let Ok(v) = to_rx.recv() {
            if back_tx.send(v).is_err() {
                break;
            }
        }
    });
    let t = Instant::now();
    for i in 0..ROUNDS {
        to_tx.send(i).unwrap();
        assert_eq!(back_rx.recv().unwrap(), i);
    }
    let el = t.elapsed();
    drop(to_tx);
    echo.join().unwrap();
    el.as_nanos() as f64 / ROUNDS as f64
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn raise_nofile(want: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn parked_rss() -> u64 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Client ends live in a child process: the fd limit is per process, and only the
    // server-side fibers should count in this process's RSS.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--client", &addr.to_string()])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn client process");
    let mut conns = Vec::with_capacity(N);
    for _ in 0..N {
        conns.push(listener.accept().unwrap().0);
    }
    let (ready_tx, ready_rx) = mpsc::channel();
    let before = rss_bytes();
    let hs: Vec<_> = conns
        .into_iter()
        .map(|mut c: TcpStream| {
            let ready = ready_tx.clone();
            fibra::spawn(move || {
                ready.send(()).unwrap();
                drop(ready);
                let mut buf = [0u8; 64];
                let _ = c.read(&mut buf);
            })
        })
        .collect();
    for _ in 0..N {
        ready_rx.recv().unwrap();
    }
    // Let every fiber reach its parked read.
    fibra::time::sleep(Duration::from_millis(200));
    let after = rss_bytes();
    drop(child.stdin.take());
    let _ = child.wait();
    for h in hs {
        h.join().unwrap();
    }
    after.saturating_sub(before) / N as u64
}

/// The child process of `parked_rss`: holds N connections until its stdin closes.
fn client(addr: &str) {
    raise_nofile(N as u64 + 100);
    let conns: Vec<_> = (0..N)
        .map(|_| std::net::TcpStream::connect(addr).expect("connect"))
        .collect();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(conns);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--client" {
        client(&args[2]);
        return;
    }
    raise_nofile(N as u64 + 1000);
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    // `fiberbench NAME` runs only the benchmarks whose name contains NAME (for profiling).
    let only = args.get(1).cloned().unwrap_or_default();
    let want = move |name: &str| name.contains(only.as_str());
    let want2 = want.clone();
    rt.block_on(move || {
        if want("spawn_join") {
            println!("spawn_join_10000_us {}", spawn_join());
        }
        if want("os_threads") {
            println!("os_threads_spawn_join_10000_us {}", os_threads());
        }
        if want("switch") {
            println!("switch_ns {:.1}", switch_ns());
        }
        if want("corosensei") {
            println!(
                "corosensei_deep_suspend_ns {:.1}",
                corosensei_deep_suspend_ns()
            );
        }
        if want("channel") {
            println!("channel_roundtrip_ns {:.1}", channel_roundtrip_ns());
        }
    });
    if !want2("parked") {
        return;
    }
    drop(rt);
    // A fresh runtime, so the pool holds no stacks and the RSS delta is honest.
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(|| println!("parked_fiber_rss_bytes {}", parked_rss()));
    println!(
        "cores {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
}
