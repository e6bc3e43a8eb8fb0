//! # fibra-postgres — PostgreSQL from fibers, with a blocking API
//!
//! A PostgreSQL client for [fibra] fibers on the runtime-agnostic halves of
//! rust-postgres (`postgres-protocol` for the wire format and authentication,
//! `postgres-types` for values). Calls block the calling fiber; its worker thread runs other
//! fibers meanwhile, and no worker thread ever blocks on the database.
//!
//! ```no_run
//! use fibra_postgres::{Config, Pending, Pool, Statement, Type};
//!
//! let pool = Pool::new(Config::from_url("postgres://app:secret@127.0.0.1/app")?.pool_size(4));
//! let by_id = Statement::new("SELECT name FROM users WHERE id = $1", &[Type::INT8]);
//! fibra::run(move || -> Result<(), fibra_postgres::Error> {
//!     let client = pool.get()?;
//!     let name: String = client.query_one(&by_id, &[&7i64])?.get(0);
//!     // Twenty queries, one round trip: send them all, wait for all (answers read in a few
//!     // wake-ups, not twenty), then take each.
//!     let pending: Vec<_> =
//!         (1..=20i64).map(|id| client.send(&by_id, &[&id])).collect::<Result<_, _>>()?;
//!     Pending::wait_all(&pending);
//!     for p in pending {
//!         let _rows = p.rows()?;
//!     }
//!     println!("{name}");
//!     Ok(())
//! })?;
//! # Ok::<(), fibra_postgres::Error>(())
//! ```
//!
//! - **Prepared statements**: a [`Statement`] is prepared on each connection the first time it
//!   runs there, in the same round trip, and run by name afterwards; values travel in binary.
//! - **Pipelining**: queries from all the fibers of a worker, and the queries one fiber queues
//!   with [`Client::send`], share a connection and are in flight together; each still runs in
//!   its own implicit transaction. The reading fiber sets the socket's low-water mark to the
//!   answers it expects, so a batch of answers costs a few wake-ups, not one each
//!   ([`Pending::wait_all`] makes a whole batch the target).
//! - **A pool per worker** ([`Pool`]): `pool_size` connections per worker thread, opened on
//!   demand, never shared between threads, replaced when they fail.
//! - **Timeouts** ([`Config::connect_timeout`], [`Config::query_timeout`]): a query past its
//!   deadline returns [`ErrorKind::Timeout`], is cancelled on the server, and its connection
//!   is retired.
//! - **Errors** say what happened ([`ErrorKind`]): the server unreachable, authentication
//!   refused (SCRAM-SHA-256, MD5 and cleartext passwords are spoken), a query error with the
//!   server's SQLSTATE ([`DbError`]), the connection lost mid-query (the query's caller gets
//!   the error; the pool opens a new connection for the next one).
//!
//! Not supported: TLS to the server, `COPY`, `LISTEN`/`NOTIFY`, explicit transactions across
//! pooled calls (a transaction's statements must run on one connection: use a [`Client`]
//! from [`Client::connect`]).
//!
//! Modules: `config` (URL and settings), `error`, `stream` (the fibra socket), `startup`
//! (session start, authentication, cancel requests), `conn` (one pipelined connection and its
//! reader/writer protocol), `client` (the blocking API), `pool`, `statement`, `row`.

#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

mod client;
mod config;
mod conn;
mod error;
mod pool;
mod row;
mod startup;
mod statement;
mod stream;

pub use client::{Client, Params, Pending};
pub use config::{
    Config, DEFAULT_CONNECT_TIMEOUT, DEFAULT_POOL_SIZE, DEFAULT_QUERY_TIMEOUT,
    DEFAULT_REDIAL_FIRST, DEFAULT_REDIAL_MAX,
};
pub use error::{DbError, Error, ErrorKind};
pub use pool::Pool;
pub use postgres_types::{FromSql, ToSql, Type};
pub use row::Row;
pub use statement::Statement;
