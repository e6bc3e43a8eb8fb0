//! One pipelined connection shared by the fibers of one worker.
//!
//! # Pipelining
//! A query is appended to the connection's write buffer as `Bind`, `Execute`, `Sync` (with
//! `Parse`, `Describe`, `Sync` before it the first time its statement runs here) and a
//! [`Slot`] for its answer joins the queue. The server answers in order and every query ends
//! with its own `ReadyForQuery`, so the front slot owns every message up to the next one;
//! each query is its own implicit transaction, and one failing does not touch the others.
//!
//! # Who writes, who reads (leader and followers, no extra fiber)
//! - **Writing.** A fiber about to wait flushes the write buffer, after letting the other
//!   runnable fibers of its worker run once (`fibra::yield_now`): the fibers serving the
//!   other requests that arrived in the same round append their queries meanwhile, and one
//!   `write` sends them all (the server, too, then reads them in one go). One fiber writes
//!   at a time (`writing`, which also marks a flush as coming); bytes appended meanwhile are
//!   written by that fiber before it stops, so a query never stays unsent while its owner
//!   waits.
//! - **Reading.** The first waiting fiber that finds no reader becomes the reader
//!   (`reading`): it reads, hands every complete answer to its slot and wakes the slot's
//!   owner, until its own answer is complete or its deadline passes. It then clears
//!   `reading` and wakes the fiber parked on the oldest slot (`waiting`), which becomes the
//!   next reader; the owner of an older query who is not waiting for it is passed over, and
//!   finds no reader, and reads, when it comes to wait. Other fibers wait on their slot's
//!   `Notify` and re-check on every wake-up.
//! - **Waking once per batch.** The server sends each query's answer as its own packet, so
//!   a reader waiting for the last of twenty answers would otherwise wake for each. Before
//!   it waits, the reader sets the socket's low-water mark (`SO_RCVLOWAT`) to the bytes it
//!   expects up to its own answer (each statement's last answer size on this connection).
//!   So that an answer smaller than expected can never leave it waiting, the mark is capped
//!   by what is certain to arrive: [`MIN_ANSWER`] bytes for every query already handed to
//!   the socket and not yet answered, less what of the front answer is already here.
//! - **State** is in a `RefCell` borrowed only between blocking calls: every fiber that uses
//!   a connection runs on the worker that made it (the pool is per worker, and fibers never
//!   migrate), so no borrow is ever held across a park.
//!
//! # Failure
//! A read or write error, end of stream or a protocol violation fails the connection: every
//! queued slot gets the error ([`ErrorKind::Closed`]), later queries on it are refused at once
//! and the pool replaces it. A query whose deadline passes returns [`ErrorKind::Timeout`]; its
//! slot stays queued (its answer is read and dropped), the connection is retired (the pool
//! stops handing it out) and a cancel request is sent for the running query.

mod receive;

use crate::config::Config;
use crate::error::{Error, ErrorKind};
use crate::row::Row;
use crate::startup::{self, BackendKey, READ_CHUNK};
use crate::statement::Statement;
use crate::stream::Stream;
use bytes::BytesMut;
use fibra::sync::Notify;
use postgres_protocol::message::backend::DataRowBody;
use postgres_protocol::message::frontend;
use postgres_types::{ToSql, Type};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// A query's answer: its rows and the number of rows the command affected.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub(crate) rows: Vec<Row>,
    pub(crate) affected: u64,
}

/// What a queued slot waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotKind {
    /// `Parse`/`Describe` of a statement: nobody waits; completing it records the columns.
    Prepare(u64),
    /// `Bind`/`Execute` of a prepared statement, waited for by the fiber that sent it.
    Query(u64),
}

/// The fewest bytes any answer to `Bind`/`Execute`/`Sync` or `Parse`/`Describe`/`Sync` can
/// take: an `ErrorResponse` with no field (6) and `ReadyForQuery` (6). Every other answer is
/// longer (`BindComplete` 5 + `CommandComplete` 6 + `ReadyForQuery` 6 at least).
const MIN_ANSWER: usize = 12;

/// One answer in the queue.
pub(crate) struct Slot {
    kind: SlotKind,
    deadline: Instant,
    /// The bytes its answer is expected to take (the statement's last answer here), for
    /// the reader's low-water mark.
    expect: usize,
    notify: Notify,
    st: RefCell<SlotState>,
    /// Its owner is parked waiting for it, as a follower (not reading).
    waiting: Cell<bool>,
}

#[derive(Default)]
struct SlotState {
    rows: Vec<DataRowBody>,
    columns: Vec<Type>,
    affected: u64,
    error: Option<Error>,
    /// Why its statement could not be prepared: the error to report instead of the server's
    /// "prepared statement does not exist".
    prepare_error: Option<Error>,
    done: bool,
}

/// The connection's mutable state; see the module doc for who touches what when.
struct State {
    wbuf: BytesMut,
    rbuf: BytesMut,
    /// Where reads land before they are appended to `rbuf` (copying what arrived is cheaper
    /// than zeroing `rbuf`'s spare room for every read).
    scratch: Box<[u8]>,
    writing: bool,
    reading: bool,
    queue: VecDeque<Rc<Slot>>,
    /// Statements sent to this connection: their columns once the server described them,
    /// and the size of their last answer (0 before the first).
    prepared: Vec<Prepared>,
    /// Slots at the back of `queue` whose messages are still in `wbuf` (no writer has taken
    /// them yet): their answers are not certain to come.
    unsent: usize,
    /// Bytes of the stream read since the front slot's answer began (its messages so far,
    /// and notices), not counting the partial message in `rbuf`.
    front_seen: usize,
    /// The socket's receive low-water mark as last set (1, the default, at first).
    low_water: usize,
    failed: Option<Error>,
    retired: bool,
}

/// A statement prepared (or being prepared) on this connection.
struct Prepared {
    id: u64,
    columns: Option<Arc<[Type]>>,
    last_answer: usize,
}

/// A session with the server.
pub(crate) struct Connection {
    stream: Stream,
    config: Arc<Config>,
    key: BackendKey,
    st: RefCell<State>,
}

impl Connection {
    /// Connects and authenticates (within the config's connect timeout).
    pub(crate) fn open(config: Arc<Config>) -> Result<Connection, Error> {
        let stream = Stream::connect(&config)?;
        let (key, rbuf) = startup::startup(&stream, &config)?;
        let _ = stream.set_write_timeout(Some(config.get_query_timeout()));
        Ok(Connection {
            stream,
            config,
            key,
            st: RefCell::new(State {
                wbuf: BytesMut::with_capacity(4096),
                rbuf,
                scratch: vec![0; READ_CHUNK].into_boxed_slice(),
                writing: false,
                reading: false,
                queue: VecDeque::new(),
                prepared: Vec::new(),
                unsent: 0,
                front_seen: 0,
                low_water: 1,
                failed: None,
                retired: false,
            }),
        })
    }

    /// Whether new queries may be sent here (not failed, not retired).
    pub(crate) fn is_usable(&self) -> bool {
        let st = self.st.borrow();
        st.failed.is_none() && !st.retired
    }

    /// Queries queued and not yet answered.
    pub(crate) fn in_flight(&self) -> usize {
        self.st.borrow().queue.len()
    }

    /// Queues `stmt` with `params` (nothing is written until a fiber waits).
    pub(crate) fn send(
        &self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Rc<Slot>, Error> {
        let mut st = self.st.borrow_mut();
        if let Some(e) = &st.failed {
            return Err(e.clone());
        }
        if params.len() != stmt.params().len() {
            return Err(Error::new(
                ErrorKind::Conversion,
                format!(
                    "the statement takes {} parameters, {} given",
                    stmt.params().len(),
                    params.len()
                ),
            ));
        }
        let deadline = fibra::time::deadline_in(self.config.get_query_timeout());
        let st = &mut *st;
        let expect = match st.prepared.iter().find(|p| p.id == stmt.id()) {
            Some(p) => p.last_answer,
            None => {
                let oids = stmt.params().iter().map(Type::oid);
                frontend::parse(stmt.name(), stmt.sql(), oids, &mut st.wbuf)
                    .and_then(|()| frontend::describe(b'S', stmt.name(), &mut st.wbuf))
                    .map_err(|e| Error::io(ErrorKind::Conversion, "statement", e))?;
                frontend::sync(&mut st.wbuf);
                st.prepared.push(Prepared {
                    id: stmt.id(),
                    columns: None,
                    last_answer: 0,
                });
                st.queue.push_back(Slot::new(
                    SlotKind::Prepare(stmt.id()),
                    deadline,
                    MIN_ANSWER,
                ));
                st.unsent += 1;
                0
            }
        };
        let mark = st.wbuf.len();
        let formats = (!params.is_empty()).then_some(1i16);
        let bound = frontend::bind(
            "",
            stmt.name(),
            formats,
            params.iter().zip(stmt.params()),
            |(p, ty), buf| match p.to_sql_checked(ty, buf)? {
                postgres_types::IsNull::Yes => Ok(postgres_protocol::IsNull::Yes),
                postgres_types::IsNull::No => Ok(postgres_protocol::IsNull::No),
            },
            Some(1i16),
            &mut st.wbuf,
        );
        if let Err(e) = bound {
            st.wbuf.truncate(mark);
            let why = match e {
                frontend::BindError::Conversion(e) => e.to_string(),
                frontend::BindError::Serialization(e) => e.to_string(),
            };
            return Err(Error::new(
                ErrorKind::Conversion,
                format!("parameter: {why}"),
            ));
        }
        frontend::execute("", 0, &mut st.wbuf)
            .map_err(|e| Error::io(ErrorKind::Conversion, "execute", e))?;
        frontend::sync(&mut st.wbuf);
        let slot = Slot::new(SlotKind::Query(stmt.id()), deadline, expect.max(MIN_ANSWER));
        st.queue.push_back(slot.clone());
        st.unsent += 1;
        Ok(slot)
    }

    /// Waits for `slot`'s answer (see the module doc); flushes queued queries first.
    pub(crate) fn wait(&self, slot: &Slot) -> Result<Reply, Error> {
        self.wait_done(slot)?;
        self.take_reply(slot).expect("the slot is done")
    }

    /// Waits until `slot`'s answer is complete (or the connection failed), leaving the answer
    /// in the slot; a timeout is an error.
    pub(crate) fn wait_done(&self, slot: &Slot) -> Result<(), Error> {
        self.flush();
        loop {
            if slot.st.borrow().done {
                return Ok(());
            }
            let Some(left) = fibra::time::remaining(slot.deadline) else {
                return Err(self.time_out());
            };
            let lead = {
                let mut st = self.st.borrow_mut();
                !std::mem::replace(&mut st.reading, true)
            };
            if lead {
                let guard = FailOnUnwind(self);
                let timed_out = self.read_until(slot);
                std::mem::forget(guard);
                self.st.borrow_mut().reading = false;
                self.hand_over();
                if timed_out && !slot.st.borrow().done {
                    return Err(self.time_out());
                }
            } else {
                let waiting = Waiting::start(slot);
                slot.notify.wait_timeout(left);
                drop(waiting);
            }
        }
    }

    /// Writes the write buffer unless another fiber is writing or about to (it writes what
    /// we added); first lets the worker's other runnable fibers add their queries.
    fn flush(&self) {
        {
            let mut st = self.st.borrow_mut();
            if st.writing || st.wbuf.is_empty() || st.failed.is_some() {
                return;
            }
            st.writing = true;
        }
        let guard = FailOnUnwind(self);
        fibra::yield_now();
        let mut buf = {
            let mut st = self.st.borrow_mut();
            if st.failed.is_some() {
                st.writing = false;
                drop(st);
                std::mem::forget(guard);
                return;
            }
            st.unsent = 0;
            st.wbuf.split()
        };
        loop {
            let r = self.stream.write_all(&buf);
            let mut st = self.st.borrow_mut();
            if let Err(e) = r {
                st.writing = false;
                drop(st);
                std::mem::forget(guard);
                self.fail(Error::io(ErrorKind::Closed, "write to the server", e));
                return;
            }
            buf.clear();
            if st.wbuf.is_empty() {
                // Give the (empty, allocated) buffer back so its memory is reused.
                st.wbuf.unsplit(buf);
                st.writing = false;
                std::mem::forget(guard);
                return;
            }
            st.unsent = 0;
            std::mem::swap(&mut buf, &mut st.wbuf);
        }
    }
}

/// Fails the connection if the fiber reading or writing for the others unwinds (it is
/// cancelled at runtime shutdown): the buffers it holds are gone, so the byte stream cannot
/// be followed any more. Forgotten on every normal exit.
struct FailOnUnwind<'a>(&'a Connection);

impl Drop for FailOnUnwind<'_> {
    fn drop(&mut self) {
        {
            let mut st = self.0.st.borrow_mut();
            st.reading = false;
            st.writing = false;
        }
        self.0.fail(Error::new(
            ErrorKind::Closed,
            "the fiber reading or writing for this connection was cancelled",
        ));
    }
}

impl Slot {
    fn new(kind: SlotKind, deadline: Instant, expect: usize) -> Rc<Slot> {
        Rc::new(Slot {
            kind,
            deadline,
            expect,
            notify: Notify::new(),
            st: RefCell::new(SlotState::default()),
            waiting: Cell::new(false),
        })
    }
}

/// Marks a slot's owner as waiting for it while alive; cleared however the wait ends (the
/// fiber may unwind from it when cancelled).
struct Waiting<'a>(&'a Slot);

impl<'a> Waiting<'a> {
    fn start(slot: &'a Slot) -> Waiting<'a> {
        slot.waiting.set(true);
        Waiting(slot)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.set(false);
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}
