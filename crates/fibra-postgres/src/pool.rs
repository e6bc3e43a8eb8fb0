//! [`Pool`]: connections kept per worker thread, opened on demand, replaced when they fail.
//!
//! A `Pool` is a `Send + Sync` handle; the connections live in a thread-local table of the
//! worker that opened them, so a connection never crosses threads and its state needs no
//! lock. [`Pool::get`] hands out the worker's connections round-robin; concurrent fibers
//! share them, their queries pipelined.
//!
//! A server that cannot be reached is not dialled on every call: after a failed connect the
//! pool's workers wait ([`Config::redial_backoff`], [`fibra::net::RedialBackoff`]) before one
//! call tries again; meanwhile [`Pool::get`] fails at once, naming the last failure. So a
//! database that is down costs a few connects a second, and one that is back is used again
//! within half a second.

use crate::client::Client;
use crate::config::Config;
use crate::conn::Connection;
use crate::error::{Error, ErrorKind};
use fibra::net::RedialBackoff;
use fibra::sync::Notify;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Connections to one database, `pool_size` per worker thread.
///
/// ```no_run
/// use fibra_postgres::{Pool, Statement, Type};
///
/// let pool = Pool::new(fibra_postgres::Config::from_url(
///     "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world",
/// )?);
/// let world = Statement::new("SELECT randomnumber FROM world WHERE id = $1", &[Type::INT4]);
/// fibra::run(move || -> Result<(), fibra_postgres::Error> {
///     let n: i32 = pool.get()?.query_one(&world, &[&42i32])?.get(0);
///     println!("{n}");
///     Ok(())
/// })?;
/// # Ok::<(), fibra_postgres::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Pool {
    id: u64,
    config: Arc<Config>,
    down: Arc<Down>,
}

/// When to connect again after failed connects, shared by the workers, and the last failure
/// (for the errors of the calls that do not try).
#[derive(Debug)]
struct Down {
    backoff: RedialBackoff,
    last: Mutex<Option<Error>>,
}

impl Down {
    /// The error of a call that does not connect because the last connects failed.
    #[cold]
    fn not_connecting(&self, wait: Duration) -> Error {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (kind, why) = match &last {
            Some(e) => (e.kind(), e.message()),
            None => (ErrorKind::Connect, "connect failed"),
        };
        // A wrong password stays an authentication error; anything else is unavailability.
        let kind = match kind {
            ErrorKind::Auth | ErrorKind::Config => kind,
            _ => ErrorKind::Connect,
        };
        Error::new(
            kind,
            format!(
                "not connecting: {} connects failed in a row (last: {why}); next try in {} ms",
                self.backoff.failures(),
                wait.as_millis()
            ),
        )
    }

    /// Notes a connect's outcome.
    fn record(&self, r: &Result<Connection, Error>) {
        match r {
            Ok(_) => self.backoff.succeeded(),
            Err(e) => {
                *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
                self.backoff.failed();
            }
        }
    }
}

/// One worker's share of a pool.
struct WorkerPool {
    slots: RefCell<Vec<Entry>>,
    next: Cell<usize>,
    /// Notified when a connection attempt ends (either way).
    changed: Notify,
}

#[derive(Clone)]
enum Entry {
    Empty,
    Connecting,
    Ready(Rc<Connection>),
}

thread_local! {
    static LOCAL: RefCell<Vec<(u64, Rc<WorkerPool>)>> = const { RefCell::new(Vec::new()) };
}

impl Pool {
    /// A pool for `config`; no connection is opened until a fiber asks for one.
    pub fn new(config: Config) -> Pool {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let (first, max) = config.get_redial_backoff();
        Pool {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            config: Arc::new(config),
            down: Arc::new(Down {
                backoff: RedialBackoff::new(first, max),
                last: Mutex::new(None),
            }),
        }
    }

    /// The pool's settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A connection of this worker's share: a ready one round-robin, or a new one opened by
    /// the calling fiber when the share is not full. Fails at once with the connect error
    /// when the server cannot be reached, so a caller can answer `503` quickly; later calls
    /// fail at once too until the pool's backoff lets one try again (see the module docs).
    pub fn get(&self) -> Result<Client, Error> {
        let wp = self.worker_pool();
        let deadline = fibra::time::deadline_in(self.config.get_connect_timeout());
        loop {
            let n = self.config.get_pool_size();
            let start = wp.next.get();
            wp.next.set(start.wrapping_add(1));
            // Our turn's slot: use it if ready, fill it if empty (so the share grows to
            // `pool_size`); if another fiber is connecting it, any ready one will do.
            let empty = {
                let mut slots = wp.slots.borrow_mut();
                let usable = |e: &Entry| matches!(e, Entry::Ready(c) if c.is_usable());
                for e in slots.iter_mut() {
                    if matches!(e, Entry::Ready(_)) && !usable(e) {
                        *e = Entry::Empty;
                    }
                }
                let turn = start % n;
                let pick = if matches!(slots[turn], Entry::Connecting) {
                    (0..n).map(|k| (turn + k) % n).find(|&i| usable(&slots[i]))
                } else {
                    Some(turn)
                };
                if let Some(Entry::Ready(c)) = pick.map(|i| &slots[i]) {
                    return Ok(Client::from_conn(c.clone()));
                }
                let empty = pick.or_else(|| slots.iter().position(|e| matches!(e, Entry::Empty)));
                if let Some(i) = empty {
                    slots[i] = Entry::Connecting;
                }
                empty
            };
            match empty {
                Some(i) => {
                    let r = match self.down.backoff.permit() {
                        Ok(()) => {
                            let r = Connection::open(self.config.clone());
                            self.down.record(&r);
                            r.map(Rc::new)
                        }
                        Err(wait) => Err(self.down.not_connecting(wait)),
                    };
                    wp.slots.borrow_mut()[i] = match &r {
                        Ok(c) => Entry::Ready(c.clone()),
                        Err(_) => Entry::Empty,
                    };
                    wp.changed.notify_all();
                    return r.map(Client::from_conn);
                }
                None => {
                    // Every slot is being connected by another fiber: wait for one.
                    let Some(left) = fibra::time::remaining(deadline) else {
                        return Err(Error::new(
                            ErrorKind::Connect,
                            "no connection became ready within the connect timeout",
                        ));
                    };
                    wp.changed.wait_timeout(left);
                }
            }
        }
    }

    fn worker_pool(&self) -> Rc<WorkerPool> {
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            if let Some((_, wp)) = l.iter().find(|(id, _)| *id == self.id) {
                return wp.clone();
            }
            let wp = Rc::new(WorkerPool {
                slots: RefCell::new(vec![Entry::Empty; self.config.get_pool_size()]),
                next: Cell::new(0),
                changed: Notify::new(),
            });
            l.push((self.id, wp.clone()));
            wp
        })
    }
}
