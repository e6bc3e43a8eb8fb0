//! The client against a real server the test starts itself (`util::Cluster`): queries,
//! prepared statements, pipelining, the pool across fibers and workers, errors (query, auth,
//! conversion), waiting for a batch at once, a connection killed mid-query, a query past its timeout, a stopped server and
//! its return, and that a waiting query never blocks its worker.

mod util;

use fibra_postgres::{Client, Config, ErrorKind, Pending, Pool, Statement, Type};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use util::Cluster;

static WORLD: LazyLock<Statement> = LazyLock::new(|| {
    Statement::new(
        "SELECT id, randomnumber FROM world WHERE id = $1",
        &[Type::INT4],
    )
});
static SLEEP: LazyLock<Statement> =
    LazyLock::new(|| Statement::new("SELECT pg_sleep($1)", &[Type::FLOAT8]));
static PID: LazyLock<Statement> = LazyLock::new(|| Statement::new("SELECT pg_backend_pid()", &[]));

fn config(c: &Cluster) -> Config {
    Config::from_url(&c.url()).unwrap()
}

/// A runtime with `workers` workers running `f` in a fiber.
fn on_fibers<T: Send + 'static>(workers: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    let rt = fibra::Runtime::builder().workers(workers).build().unwrap();
    rt.block_on(f)
}

#[test]
fn queries_against_a_live_server() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let cfg = config(&cluster);
    let socket_cfg = Config::from_url(&cluster.socket_url()).unwrap();
    let bad_pw = config(&cluster).password("wrong");
    let bad_db = Config::from_url(&cluster.url().replace("hello_world", "no_such_db")).unwrap();
    on_fibers(1, move || {
        // SCRAM-SHA-256 over TCP, and trust over the Unix socket.
        let client = Client::connect(&cfg).unwrap();
        let row = client.query_one(&WORLD, &[&1i32]).unwrap();
        assert_eq!(row.get::<i32>(0), 1);
        let n: i32 = row.get(1);
        assert!((1..=10_000).contains(&n));
        let unix = Client::connect(&socket_cfg).unwrap();
        assert_eq!(unix.query_one(&WORLD, &[&2i32]).unwrap().get::<i32>(0), 2);

        // Twenty queries in flight on one connection, answers in order.
        let pending: Vec<_> = (1..=20i32)
            .map(|id| client.send(&WORLD, &[&id]).unwrap())
            .collect();
        for (id, p) in (1..=20i32).zip(pending) {
            assert_eq!(p.one().unwrap().get::<i32>(0), id);
        }

        // No row, and a query error with its SQLSTATE; the connection stays usable.
        let none = client.query(&WORLD, &[&0i32]).unwrap();
        assert!(none.is_empty());
        assert_eq!(
            client.query_one(&WORLD, &[&0i32]).unwrap_err().kind(),
            ErrorKind::RowCount
        );
        let missing = Statement::new("SELECT x FROM no_such_table", &[]);
        let e = client.query(&missing, &[]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Db, "{e}");
        assert_eq!(e.code(), Some("42P01"));
        assert!(!e.is_unavailable());
        // Failing to prepare is forgotten: the next use tries again and fails the same way.
        assert_eq!(
            client.query(&missing, &[]).unwrap_err().code(),
            Some("42P01")
        );
        let div = Statement::new("SELECT 1 / $1", &[Type::INT4]);
        assert_eq!(
            client.query(&div, &[&0i32]).unwrap_err().code(),
            Some("22012")
        );
        assert_eq!(client.query_one(&div, &[&1i32]).unwrap().get::<i32>(0), 1);
        assert!(client.is_usable());

        // Errors in a pipeline stay with their own query.
        let a = client.send(&div, &[&0i32]).unwrap();
        let b = client.send(&WORLD, &[&3i32]).unwrap();
        assert_eq!(a.rows().unwrap_err().code(), Some("22012"));
        assert_eq!(b.one().unwrap().get::<i32>(0), 3);

        // Conversions: parameter count and type, column type, NULL.
        let e = client.query(&WORLD, &[]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conversion);
        let e = client.query(&WORLD, &[&"one"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conversion, "{e}");
        let row = client.query_one(&WORLD, &[&4i32]).unwrap();
        assert_eq!(
            row.try_get::<String>(0).unwrap_err().kind(),
            ErrorKind::Conversion
        );
        assert_eq!(
            row.try_get::<i32>(5).unwrap_err().kind(),
            ErrorKind::Conversion
        );
        let null = Statement::new("SELECT NULL::int4, 'ü'::text", &[]);
        let row = client.query_one(&null, &[]).unwrap();
        assert_eq!(row.get::<Option<i32>>(0), None);
        assert_eq!(row.get::<&str>(1), "ü");
        assert_eq!(
            row.try_get::<i32>(0).unwrap_err().kind(),
            ErrorKind::Conversion
        );

        // Affected rows.
        let touch = Statement::new(
            "UPDATE world SET randomnumber = randomnumber WHERE id <= $1",
            &[Type::INT4],
        );
        assert_eq!(client.execute(&touch, &[&10i32]).unwrap(), 10);

        // Authentication and startup failures.
        let e = Client::connect(&bad_pw).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
        assert_eq!(e.code(), Some("28P01"));
        let e = Client::connect(&bad_db).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        assert_eq!(e.code(), Some("3D000"));
    });
    pool_across_fibers_and_workers(&cluster);
    waiting_for_a_batch(&cluster);
    an_owner_not_waiting_holds_nobody_up(&cluster);
    waiting_never_blocks_the_worker(&cluster);
    connection_killed_mid_query(&cluster);
    query_past_its_timeout(&cluster);
}

fn pool_across_fibers_and_workers(cluster: &Cluster) {
    let pool = Pool::new(config(cluster).pool_size(2));
    let done = on_fibers(2, move || {
        let done = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..40)
            .map(|f| {
                let (pool, done) = (pool.clone(), done.clone());
                fibra::spawn(move || {
                    for q in 0..10i32 {
                        let id = 1 + (f * 10 + q) % 10_000;
                        let client = pool.get().unwrap();
                        let row = client.query_one(&WORLD, &[&id]).unwrap();
                        assert_eq!(row.get::<i32>(0), id);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        done.load(Ordering::Relaxed)
    });
    assert_eq!(done, 400);
}

/// `Pending::wait_all`, and answers much smaller than their statement's last one: the
/// reader's low-water mark is sized from the last answer, and must never wait for bytes that
/// are not coming (a 5 s query timeout turns such a wait into a failure).
fn waiting_for_a_batch(cluster: &Cluster) {
    let cfg = config(cluster).query_timeout(Duration::from_secs(5));
    on_fibers(1, move || {
        let client = Client::connect(&cfg).unwrap();
        let series = Statement::new("SELECT generate_series(1, $1)", &[Type::INT4]);
        let div = Statement::new("SELECT 1 / $1", &[Type::INT4]);
        for round in 0..3 {
            // A large answer (about 30 kB) teaches the connection this statement's size...
            assert_eq!(client.query(&series, &[&3000i32]).unwrap().len(), 3000);
            // ...then answers of no row, alone and at the end of a pipeline.
            assert!(client.query(&series, &[&0i32]).unwrap().is_empty());
            let big = client.send(&series, &[&3000i32]).unwrap();
            let small = client.send(&series, &[&0i32]).unwrap();
            assert_eq!(big.rows().unwrap().len(), 3000);
            assert!(small.rows().unwrap().is_empty(), "round {round}");
        }
        // A batch, an error in its middle, waited for at once, then read in order.
        let pending: Vec<_> = (1..=30i32)
            .map(|id| match id {
                15 => client.send(&div, &[&0i32]).unwrap(),
                _ => client.send(&WORLD, &[&id]).unwrap(),
            })
            .collect();
        Pending::wait_all(&pending);
        for (id, p) in (1..=30i32).zip(pending) {
            if id == 15 {
                assert_eq!(p.rows().unwrap_err().code(), Some("22012"));
            } else {
                assert_eq!(p.one().unwrap().get::<i32>(0), id);
            }
        }
        // Sizes learned from large answers, then a batch of small ones.
        let pending: Vec<_> = (0..20)
            .map(|_| client.send(&series, &[&0i32]).unwrap())
            .collect();
        Pending::wait_all(&pending);
        for p in pending {
            assert!(p.rows().unwrap().is_empty());
        }
        assert!(client.is_usable());
    });
}

/// The reader's role passes to a fiber that waits, never to the owner of a query that is not
/// being waited for: fiber A reads, and when A's first answer is in, A's second query is the
/// oldest unanswered one, but A sleeps instead of waiting for it. B, whose query is queued
/// behind A's two, must still get its answer (2 s query timeout) before A comes back (4 s).
/// One worker, one connection: B yields until A is reading (A's wait yields once to gather
/// queries, then writes and reads), so the order is fixed.
fn an_owner_not_waiting_holds_nobody_up(cluster: &Cluster) {
    let pool = Pool::new(
        config(cluster)
            .pool_size(1)
            .query_timeout(Duration::from_secs(2)),
    );
    on_fibers(1, move || {
        let client = pool.get().unwrap();
        let b = {
            let pool = pool.clone();
            fibra::spawn(move || {
                for _ in 0..10 {
                    fibra::yield_now();
                }
                let client = pool.get().unwrap();
                client
                    .query_one(&WORLD, &[&9i32])
                    .map(|row| row.get::<i32>(0))
            })
        };
        let first = client.send(&SLEEP, &[&0.2f64]).unwrap();
        let second = client.send(&SLEEP, &[&0.5f64]).unwrap();
        first.rows().unwrap();
        fibra::time::sleep(Duration::from_secs(4));
        let b = b.join().unwrap();
        assert_eq!(b.unwrap(), 9, "B's query waited for A to come back");
        second.rows().unwrap();
    });
}

fn waiting_never_blocks_the_worker(cluster: &Cluster) {
    let cfg = config(cluster);
    on_fibers(1, move || {
        let client = Client::connect(&cfg).unwrap();
        let finished = Arc::new(AtomicBool::new(false));
        let ticks = Arc::new(AtomicUsize::new(0));
        let (f, t) = (finished.clone(), ticks.clone());
        // The only worker: this fiber runs only if the query below parks its fiber.
        let ticker = fibra::spawn(move || {
            while !f.load(Ordering::Relaxed) && t.load(Ordering::Relaxed) < 100_000 {
                t.fetch_add(1, Ordering::Relaxed);
                fibra::time::sleep(Duration::from_millis(1));
            }
        });
        client.query(&SLEEP, &[&0.3f64]).unwrap();
        finished.store(true, Ordering::Relaxed);
        ticker.join().unwrap();
        assert!(ticks.load(Ordering::Relaxed) > 0);
    });
}

fn connection_killed_mid_query(cluster: &Cluster) {
    let pool = Pool::new(config(cluster).pool_size(1));
    let admin = Config::from_url(&cluster.socket_url()).unwrap();
    on_fibers(1, move || {
        let client = pool.get().unwrap();
        let pid: i32 = client.query_one(&PID, &[]).unwrap().get(0);
        let sleeper = {
            let client = pool.get().unwrap();
            // Not Send: run the sleeping query on this fiber, kill from another.
            drop(client);
            let pool = pool.clone();
            fibra::fiber::Builder::new()
                .worker(0)
                .spawn(move || {
                    let c = pool.get().unwrap();
                    c.query(&SLEEP, &[&30.0f64]).unwrap_err()
                })
                .unwrap()
        };
        fibra::time::sleep(Duration::from_millis(200));
        let kill = Statement::new("SELECT pg_terminate_backend($1)", &[Type::INT4]);
        let admin = Client::connect(&admin).unwrap();
        assert!(admin.query_one(&kill, &[&pid]).unwrap().get::<bool>(0));
        let e = sleeper.join().unwrap();
        assert!(e.is_unavailable(), "{e}");
        assert!(!client.is_usable());
        // The pool heals: a new connection (another backend) answers.
        let fresh = pool.get().unwrap();
        let pid2: i32 = fresh.query_one(&PID, &[]).unwrap().get(0);
        assert_ne!(pid, pid2);
    });
}

fn query_past_its_timeout(cluster: &Cluster) {
    let pool = Pool::new(
        config(cluster)
            .pool_size(1)
            .query_timeout(Duration::from_millis(300)),
    );
    let admin = Config::from_url(&cluster.socket_url()).unwrap();
    on_fibers(1, move || {
        let client = pool.get().unwrap();
        let e = client.query(&SLEEP, &[&30.0f64]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
        assert!(e.is_unavailable());
        assert!(!client.is_usable());
        // The next query gets a new connection and answers.
        let row = pool.get().unwrap().query_one(&WORLD, &[&5i32]).unwrap();
        assert_eq!(row.get::<i32>(0), 5);
        // The cancel request ended the sleep on the server (within a bounded wait).
        let admin = Client::connect(&admin).unwrap();
        let sleeping = Statement::new(
            "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep($1)' \
             AND state = 'active'",
            &[],
        );
        let mut n = 1;
        for _ in 0..200 {
            n = admin.query_one(&sleeping, &[]).unwrap().get::<i64>(0);
            if n == 0 {
                break;
            }
            fibra::time::sleep(Duration::from_millis(50));
        }
        assert_eq!(n, 0, "the timed-out query still runs on the server");
    });
}

#[test]
fn server_stopped_and_restarted() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let pool = Pool::new(config(&cluster).pool_size(1));
    let cluster = Arc::new(cluster);
    let c2 = cluster.clone();
    on_fibers(1, move || {
        let first = pool.get().unwrap();
        first.query_one(&WORLD, &[&1i32]).unwrap();
        // pg_ctl blocks its thread: run it on a helper thread while this fiber parks.
        let c = c2.clone();
        fibra::task::spawn_blocking(move || c.stop());
        // The idle connection learns of the shutdown on its next use; new ones are refused.
        let e = first.query_one(&WORLD, &[&1i32]).unwrap_err();
        assert!(e.is_unavailable(), "{e}");
        for _ in 0..3 {
            let e = match pool.get() {
                Ok(c) => c.query_one(&WORLD, &[&1i32]).unwrap_err(),
                Err(e) => e,
            };
            assert!(e.is_unavailable(), "{e}");
            assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        }
        let c = c2.clone();
        fibra::task::spawn_blocking(move || c.start_server());
        let row = pool.get().unwrap().query_one(&WORLD, &[&7i32]).unwrap();
        assert_eq!(row.get::<i32>(0), 7);
    });
    drop(cluster);
}
