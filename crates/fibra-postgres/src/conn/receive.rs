//! The reading side of a pipelined connection: the reader reads and hands every complete
//! answer to its slot (`read_until`, `dispatch`, `take_reply`), passes the reading on when its
//! own answer is in (`hand_over`), sets the socket's low-water mark for the answers it waits
//! for (`set_low_water`), and fails the connection (`fail`) on an error. See the parent
//! module's docs for the protocol.

use std::rc::Rc;

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;
use postgres_types::Type;

use super::{is_timeout, Connection, Reply, Slot, SlotKind, MIN_ANSWER};
use crate::error::{DbError, Error, ErrorKind};
use crate::row::Row;
use crate::startup::{self, READ_CHUNK};

impl Connection {
    /// As the reader: reads and dispatches until `slot` is done or the connection failed
    /// (false), or its deadline passed (true).
    pub(super) fn read_until(&self, slot: &Slot) -> bool {
        let (mut rbuf, mut scratch) = {
            let mut st = self.st.borrow_mut();
            (
                std::mem::take(&mut st.rbuf),
                std::mem::take(&mut st.scratch),
            )
        };
        let timed_out = loop {
            loop {
                let before = rbuf.len();
                match Message::parse(&mut rbuf) {
                    Ok(Some(msg)) => {
                        if let Err(e) = self.dispatch(msg, before - rbuf.len()) {
                            self.fail(e);
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        self.fail(Error::io(ErrorKind::Protocol, "bad message", e));
                        break;
                    }
                }
            }
            if slot.st.borrow().done {
                break false;
            }
            let Some(left) = fibra::time::remaining(slot.deadline) else {
                break true;
            };
            self.set_low_water(slot, rbuf.len());
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut scratch) {
                Ok(0) => self.fail(Error::new(
                    ErrorKind::Closed,
                    "the server closed the connection",
                )),
                Ok(n) => rbuf.extend_from_slice(&scratch[..n]),
                Err(e) if is_timeout(&e) => break true,
                Err(e) => self.fail(Error::io(ErrorKind::Closed, "read from the server", e)),
            }
        };
        let mut st = self.st.borrow_mut();
        st.rbuf = rbuf;
        st.scratch = scratch;
        timed_out
    }

    /// Sets the socket's low-water mark for the reader waiting for `slot`, with `partial`
    /// bytes of a message already in the read buffer (see the module doc).
    pub(super) fn set_low_water(&self, slot: &Slot, partial: usize) {
        let mut st = self.st.borrow_mut();
        let mut expected = 0;
        for s in st.queue.iter() {
            expected += s.expect;
            if std::ptr::eq(&**s, slot) {
                break;
            }
        }
        let certain = MIN_ANSWER * (st.queue.len() - st.unsent.min(st.queue.len()));
        let here = st.front_seen + partial;
        let mark = expected
            .min(certain)
            .saturating_sub(here)
            .clamp(1, READ_CHUNK);
        if mark != st.low_water {
            st.low_water = if self.stream.set_recv_low_water(mark).is_ok() {
                mark
            } else {
                // Left as it was; the next read tries again.
                st.low_water
            };
        }
    }

    /// Gives one message, `len` bytes of the stream, to the front slot; an error fails the
    /// connection.
    pub(super) fn dispatch(&self, msg: Message, len: usize) -> Result<(), Error> {
        let mut st = self.st.borrow_mut();
        st.front_seen += len;
        let front = match msg {
            Message::NoticeResponse(_)
            | Message::ParameterStatus(_)
            | Message::NotificationResponse(_) => return Ok(()),
            Message::ErrorResponse(ref body) if st.queue.is_empty() => {
                // FATAL with nothing pending: the server is shutting this session down.
                return Err(Error::db(ErrorKind::Closed, DbError::parse(body)));
            }
            _ => match st.queue.front() {
                Some(s) => s.clone(),
                None => {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        "a message arrived with no query waiting",
                    ))
                }
            },
        };
        let mut s = front.st.borrow_mut();
        match msg {
            Message::DataRow(row) => s.rows.push(row),
            Message::CommandComplete(body) => {
                s.affected = body
                    .tag()
                    .ok()
                    .and_then(|t| t.rsplit(' ').next()?.parse().ok())
                    .unwrap_or(0);
            }
            Message::RowDescription(body) => {
                let mut fields = body.fields();
                while let Some(f) = fields
                    .next()
                    .map_err(|e| Error::io(ErrorKind::Protocol, "row description", e))?
                {
                    s.columns
                        .push(Type::from_oid(f.type_oid()).unwrap_or(Type::UNKNOWN));
                }
            }
            Message::ErrorResponse(body) => {
                s.error = Some(Error::db(ErrorKind::Db, DbError::parse(&body)));
            }
            Message::ReadyForQuery(_) => {
                st.queue.pop_front();
                let size = std::mem::take(&mut st.front_seen);
                s.done = true;
                if let SlotKind::Query(id) = front.kind {
                    if let Some(p) = st.prepared.iter_mut().find(|p| p.id == id) {
                        p.last_answer = size;
                    }
                }
                if let SlotKind::Prepare(id) = front.kind {
                    let i = st.prepared.iter().position(|p| p.id == id);
                    match (i, s.error.is_some()) {
                        // Failed to prepare: forget it, so the next use tries again, and give
                        // the reason to the queries queued behind it.
                        (Some(i), true) => {
                            st.prepared.swap_remove(i);
                            let e = s.error.clone();
                            for q in st.queue.iter() {
                                match q.kind {
                                    SlotKind::Prepare(p) if p == id => break,
                                    SlotKind::Query(p) if p == id => {
                                        q.st.borrow_mut().prepare_error = e.clone()
                                    }
                                    _ => {}
                                }
                            }
                        }
                        (Some(i), false) => {
                            st.prepared[i].columns = Some(std::mem::take(&mut s.columns).into());
                        }
                        (None, _) => {}
                    }
                }
                drop(s);
                drop(st);
                front.notify.notify_one();
            }
            Message::ParseComplete
            | Message::BindComplete
            | Message::ParameterDescription(_)
            | Message::NoData
            | Message::EmptyQueryResponse
            | Message::PortalSuspended
            | Message::CloseComplete => {}
            _ => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    "unexpected message in a query's answer",
                ))
            }
        }
        Ok(())
    }

    /// The answer, if `slot` is complete.
    pub(super) fn take_reply(&self, slot: &Slot) -> Option<Result<Reply, Error>> {
        let mut s = slot.st.borrow_mut();
        if !s.done {
            return None;
        }
        if let Some(e) = s.error.take() {
            return Some(Err(s.prepare_error.take().unwrap_or(e)));
        }
        let SlotKind::Query(id) = slot.kind else {
            return Some(Ok(Reply::default()));
        };
        let columns = self
            .st
            .borrow()
            .prepared
            .iter()
            .find(|p| p.id == id)
            .and_then(|p| p.columns.clone());
        let rows = std::mem::take(&mut s.rows);
        let Some(columns) = columns else {
            if rows.is_empty() {
                return Some(Ok(Reply {
                    rows: Vec::new(),
                    affected: s.affected,
                }));
            }
            return Some(Err(Error::new(
                ErrorKind::Protocol,
                "rows for a statement that was never described",
            )));
        };
        Some(Ok(Reply {
            rows: rows
                .into_iter()
                .map(|r| Row::new(columns.clone(), r))
                .collect(),
            affected: s.affected,
        }))
    }

    /// Wakes the owner of the oldest slot being waited for, to take over reading. Only a
    /// fiber parked in [`Connection::wait_done`] is chosen: the owner of an older query that
    /// is not waiting for it (it holds the `Pending` and does something else) would leave
    /// every other waiter without a reader until it came back. A fiber that starts waiting
    /// later finds no reader and reads itself.
    pub(super) fn hand_over(&self) {
        let next = {
            let st = self.st.borrow();
            st.queue.iter().find(|s| s.waiting.get()).cloned()
        };
        if let Some(s) = next {
            s.notify.notify_one();
        }
    }

    /// Gives up on `slot` after its deadline: retires the connection and cancels the query.
    pub(super) fn time_out(&self) -> Error {
        let first = {
            let mut st = self.st.borrow_mut();
            !std::mem::replace(&mut st.retired, true)
        };
        if first {
            let (config, key) = (self.config.clone(), self.key);
            fibra::spawn(move || {
                let _ = startup::cancel(&config, key);
            });
        }
        Error::new(
            ErrorKind::Timeout,
            format!(
                "no answer within {:?} (query cancelled)",
                self.config.get_query_timeout()
            ),
        )
    }

    /// Marks the connection failed: every queued slot gets `e` and the socket is shut.
    pub(super) fn fail(&self, e: Error) {
        let slots: Vec<Rc<Slot>> = {
            let mut st = self.st.borrow_mut();
            if st.failed.is_some() {
                return;
            }
            st.failed = Some(e.clone());
            st.queue.drain(..).collect()
        };
        self.stream.shutdown();
        for s in slots {
            {
                let mut ss = s.st.borrow_mut();
                ss.error = Some(e.clone());
                ss.done = true;
            }
            s.notify.notify_one();
        }
    }
}
