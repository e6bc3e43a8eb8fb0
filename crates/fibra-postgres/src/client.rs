//! [`Client`]: the blocking query API over one connection, and [`Pending`], a query sent and
//! not yet waited for (pipelining).

use crate::config::Config;
use crate::conn::{Connection, Reply, Slot};
use crate::error::{Error, ErrorKind};
use crate::row::Row;
use crate::statement::Statement;
use postgres_types::ToSql;
use std::rc::Rc;
use std::sync::Arc;

/// A connection to the server, for the fibers of one worker thread.
///
/// Clones share the connection, and concurrent queries from them are pipelined on it. Every
/// call blocks the calling fiber, never the worker: while it waits, the worker runs other
/// fibers. A `Client` is not `Send`: it stays on the worker that made it (take one from a
/// [`Pool`](crate::Pool) in each fiber that needs it).
#[derive(Clone)]
pub struct Client {
    conn: Rc<Connection>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("in_flight", &self.conn.in_flight())
            .finish()
    }
}

/// The parameters of a query: references to values of types the parameters accept.
pub type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Client {
    /// Opens a connection of its own (outside any pool).
    pub fn connect(config: &Config) -> Result<Client, Error> {
        Ok(Client {
            conn: Rc::new(Connection::open(Arc::new(config.clone()))?),
        })
    }

    pub(crate) fn from_conn(conn: Rc<Connection>) -> Client {
        Client { conn }
    }

    /// Runs `stmt` and returns its rows.
    pub fn query(&self, stmt: &Statement, params: Params<'_>) -> Result<Vec<Row>, Error> {
        self.send(stmt, params)?.rows()
    }

    /// Runs `stmt`, which must return exactly one row ([`ErrorKind::RowCount`] otherwise).
    pub fn query_one(&self, stmt: &Statement, params: Params<'_>) -> Result<Row, Error> {
        self.send(stmt, params)?.one()
    }

    /// Runs `stmt` and returns the number of rows it affected (inserted, updated, …).
    pub fn execute(&self, stmt: &Statement, params: Params<'_>) -> Result<u64, Error> {
        self.send(stmt, params)?.execute()
    }

    /// Queues `stmt` without waiting for it. Queries queued before a wait go to the server
    /// together and their answers come back in one stream, so N queries cost one round trip:
    ///
    /// ```no_run
    /// # use fibra_postgres::{Client, Error, Statement, Type};
    /// # fn f(client: &Client, world: &Statement) -> Result<(), Error> {
    /// let pending: Vec<_> = (1..=20i32)
    ///     .map(|id| client.send(world, &[&id]))
    ///     .collect::<Result<_, _>>()?;
    /// for p in pending {
    ///     let row = p.one()?;
    ///     let _n: i32 = row.get(1);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn send(&self, stmt: &Statement, params: Params<'_>) -> Result<Pending, Error> {
        let slot = self.conn.send(stmt, params)?;
        Ok(Pending {
            conn: self.conn.clone(),
            slot,
        })
    }

    /// Whether the connection still takes queries (it has not failed or been retired).
    pub fn is_usable(&self) -> bool {
        self.conn.is_usable()
    }
}

/// A query sent with [`Client::send`]: wait for it with [`rows`](Pending::rows),
/// [`one`](Pending::one) or [`execute`](Pending::execute). Dropping it without waiting
/// discards its answer; the query is still sent, with the next query waited for on the same
/// connection, and runs.
pub struct Pending {
    conn: Rc<Connection>,
    slot: Rc<Slot>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pending")
    }
}

impl Pending {
    fn wait(self) -> Result<Reply, Error> {
        self.conn.wait(&self.slot)
    }

    /// Waits for the rows.
    pub fn rows(self) -> Result<Vec<Row>, Error> {
        self.wait().map(|r| r.rows)
    }

    /// Waits for exactly one row.
    pub fn one(self) -> Result<Row, Error> {
        let mut rows = self.wait()?.rows;
        if rows.len() != 1 {
            return Err(Error::new(
                ErrorKind::RowCount,
                format!("expected one row, got {}", rows.len()),
            ));
        }
        Ok(rows.pop().expect("one row"))
    }

    /// Waits for the number of rows affected.
    pub fn execute(self) -> Result<u64, Error> {
        self.wait().map(|r| r.affected)
    }

    /// Waits until every query in `pending` is answered (or has failed or timed out); their
    /// [`rows`](Pending::rows), [`one`](Pending::one) or [`execute`](Pending::execute) then
    /// return at once. Cheaper than waiting for them one by one: the answers on one
    /// connection come in order, so this waits for the last one listed on each first, and a batch of
    /// answers is read in as few wake-ups as the connection can manage instead of one each.
    /// Errors are left for those calls to return.
    ///
    /// ```no_run
    /// # use fibra_postgres::{Client, Error, Pending, Statement};
    /// # fn f(client: &Client, world: &Statement) -> Result<(), Error> {
    /// let pending: Vec<_> = (1..=20i32)
    ///     .map(|id| client.send(world, &[&id]))
    ///     .collect::<Result<_, _>>()?;
    /// Pending::wait_all(&pending);
    /// let rows: Vec<_> = pending.into_iter().map(Pending::one).collect::<Result<_, _>>()?;
    /// # Ok(()) }
    /// ```
    pub fn wait_all(pending: &[Pending]) {
        let mut waited: Vec<&Rc<Connection>> = Vec::new();
        for p in pending.iter().rev() {
            if !waited.iter().any(|c| Rc::ptr_eq(c, &p.conn)) {
                waited.push(&p.conn);
                let _ = p.conn.wait_done(&p.slot);
            }
        }
        // Sent in another order than listed: the rest (returns at once for those done).
        for p in pending {
            let _ = p.conn.wait_done(&p.slot);
        }
    }
}
