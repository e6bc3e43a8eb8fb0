//! [`SendStream`] and [`RecvStream`]: the halves of a QUIC stream as `std::io::Write` and
//! `std::io::Read`, parking the calling fiber while flow control or missing data holds them.
//!
//! Each half has its own `Notify` (the two in one `StreamWaiters`, registered in the
//! connection's state), which the driver wakes on the stream's events (see `state`'s waiter
//! protocol). An operation that gives the
//! connection something to send (data, FIN, a reset, a stop, new flow-control credit after a
//! read) marks the connection dirty and notifies the driver.

use crate::config::varint;
use crate::error::Error;
use crate::state::{ConnRef, ConnState, State, StreamWaiters, READER, WRITER};
use bytes::Bytes;
use quinn_proto::{FinishError, ReadError, ReadableError, StreamId, WriteError};
use std::io::{self, Read, Write};
use std::sync::Arc;

/// The sending half of a stream: bytes written are queued in quinn-proto and sent by the
/// endpoint's driver.
///
/// `write` parks while the stream's or the connection's flow-control window (or quinn's send
/// window) is full, and returns as soon as some bytes are taken ([`write_chunks`] hands over
/// `Bytes` without copying them). `flush` does nothing: every
/// written byte is already queued. End the stream with [`finish`](SendStream::finish), or
/// abandon it with [`reset`](SendStream::reset); dropping an unfinished stream finishes it.
///
/// [`write_chunks`]: SendStream::write_chunks
pub struct SendStream {
    conn: Arc<ConnRef>,
    id: StreamId,
    /// `writer` is this half's.
    waiters: Arc<StreamWaiters>,
    /// Finished or reset by this side: no more writes.
    done: bool,
}

/// The receiving half of a stream. `read` parks until data arrives and returns `Ok(0)` at
/// the end of the stream (the peer's FIN); a stream the peer reset fails with an error that
/// names the code ([`Error::Reset`]). Dropping it before the end asks the peer to stop
/// sending (`STOP_SENDING` with code 0).
pub struct RecvStream {
    conn: Arc<ConnRef>,
    id: StreamId,
    /// `reader` is this half's.
    waiters: Arc<StreamWaiters>,
    end: End,
    early: bool,
}

/// How a receiving stream ended, as far as this handle has seen.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Open,
    /// FIN read: every later read is `Ok(0)`.
    Finished,
    /// Reset by the peer with this code.
    Reset(u64),
    /// Stopped by this side.
    Stopped,
}

impl SendStream {
    pub(crate) fn new(conn: Arc<ConnRef>, id: StreamId, waiters: Arc<StreamWaiters>) -> SendStream {
        SendStream {
            conn,
            id,
            waiters,
            done: false,
        }
    }

    /// The stream's id.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Ends the stream: the peer reads to the end of what was written, then `Ok(0)`. Never
    /// waits. Fails if the stream was finished or reset already, or the peer stopped it.
    pub fn finish(&mut self) -> io::Result<()> {
        let id = self.id;
        let r = self.conn.with_dirty(|c| {
            if let Some(e) = c.lost() {
                return Err(e);
            }
            c.conn
                .send_stream(id)
                .finish()
                .map_err(|e| finish_error(id, e))
        });
        self.done = true;
        self.conn.kick();
        r
    }

    /// Writes all of `last`, then ends the stream: `write_all(last)` and
    /// [`finish`](SendStream::finish) in one locked step, with one wake-up of the endpoint's
    /// driver, when flow control takes `last` at once (a short answer's frames). Parks while
    /// flow control holds the rest back, as `write` does. On an error the stream takes no
    /// more writes; what was written may have been sent.
    pub fn finish_with(&mut self, mut last: &[u8]) -> io::Result<()> {
        if self.done {
            return Err(Error::StreamClosed { stream: self.id }.into());
        }
        let (cid, id) = (self.conn.id, self.id);
        loop {
            let finished = self.conn.wait_for(&self.waiters.writer, |st| {
                let mut send = live_conn(st, cid)?.conn.send_stream(id);
                let before = last.len();
                let step = loop {
                    if last.is_empty() {
                        break send
                            .finish()
                            .map(|()| true)
                            .map_err(|e| finish_error(id, e));
                    }
                    match send.write(last) {
                        Ok(n) => last = &last[n..],
                        // Some taken: let the driver send it before parking.
                        Err(WriteError::Blocked) if last.len() < before => break Ok(false),
                        Err(WriteError::Blocked) => return Ok(None),
                        Err(e) => break Err(write_error(id, e)),
                    }
                };
                st.mark_dirty(cid);
                step.map(Some)
            });
            self.conn.kick();
            match finished {
                Ok(false) => continue,
                Ok(true) => {
                    self.done = true;
                    return Ok(());
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
    }

    /// Abandons the stream (`RESET_STREAM` with `code`, below 2⁶²): unsent data is dropped
    /// and the peer's reads fail with the code. Never waits.
    pub fn reset(&mut self, code: u64) -> io::Result<()> {
        let id = self.id;
        let r = self.conn.with_dirty(|c| {
            c.conn
                .send_stream(id)
                .reset(varint(code))
                .map_err(|_| Error::StreamClosed { stream: id }.into())
        });
        self.done = true;
        self.conn.kick();
        r
    }

    /// Parks until no more than `max_unsent` of the bytes written are still waiting for
    /// their first packet, or the peer stopped the stream (the next write says so), or the
    /// connection is over (an error). Never waits for acknowledgements, only for the
    /// endpoint's driver to make packets, which flow and congestion control may hold back.
    ///
    /// Flow control lets a writer run as far ahead as the peer's window (a megabyte or more);
    /// the driver then makes packets of data written long before, out of the cache. A writer
    /// that produces data as it goes (a file read chunk by chunk) waits here before making
    /// the next chunk, so that its data is made into packets while the cache still holds it.
    pub fn wait_sent(&mut self, max_unsent: u64) -> io::Result<()> {
        let (cid, id) = (self.conn.id, self.id);
        self.conn.wait_for(&self.waiters.writer, |st| {
            let c = live_conn(st, cid)?;
            if !c.unsent_above(id, max_unsent) {
                return Ok(Some(()));
            }
            match c.sent_watch.iter_mut().find(|(s, _)| *s == id) {
                Some(watch) => watch.1 = max_unsent,
                None => c.sent_watch.push((id, max_unsent)),
            }
            Ok(None)
        })
    }

    /// Writes `chunks` in order without copying them: the stream keeps each `Bytes` until
    /// the peer has acknowledged it (quinn-proto's `write_chunks`). Parks while flow control
    /// takes nothing more, and returns once every chunk is written (each is then empty). On
    /// an error, what is left in `chunks` was not written.
    pub fn write_chunks(&mut self, chunks: &mut [Bytes]) -> io::Result<()> {
        if self.done {
            return Err(Error::StreamClosed { stream: self.id }.into());
        }
        let mut first = 0;
        loop {
            while chunks.get(first).is_some_and(Bytes::is_empty) {
                first += 1;
            }
            if first == chunks.len() {
                return Ok(());
            }
            let rest = &mut chunks[first..];
            self.write_with(|send| send.write_chunks(rest).map(drop))?;
        }
    }

    /// Runs one quinn-proto write on the stream, parking while it is blocked by flow
    /// control, and wakes the driver once it went through.
    fn write_with<T>(
        &mut self,
        mut write: impl FnMut(&mut quinn_proto::SendStream<'_>) -> Result<T, WriteError>,
    ) -> io::Result<T> {
        let (cid, id) = (self.conn.id, self.id);
        let done = self.conn.wait_for(&self.waiters.writer, |st| {
            match write(&mut live_conn(st, cid)?.conn.send_stream(id)) {
                Ok(done) => {
                    st.mark_dirty(cid);
                    Ok(Some(done))
                }
                Err(WriteError::Blocked) => Ok(None),
                Err(e) => Err(write_error(id, e)),
            }
        })?;
        self.conn.kick();
        Ok(done)
    }
}

/// Connection `cid`, for a write to one of its streams: fails once the endpoint's driver has
/// stopped or the connection is over.
fn live_conn(st: &mut State, cid: u64) -> io::Result<&mut ConnState> {
    let c = st.running_conn(cid)?;
    match c.lost() {
        Some(e) => Err(e),
        None => Ok(c),
    }
}

/// The error for a write to stream `id` that quinn-proto refused (not `Blocked`: that one
/// waits).
fn write_error(id: StreamId, e: WriteError) -> io::Error {
    match e {
        WriteError::Stopped(code) => refused(id, Some(code)),
        WriteError::ClosedStream | WriteError::Blocked => refused(id, None),
    }
}

/// The error for finishing stream `id` that quinn-proto refused.
fn finish_error(id: StreamId, e: FinishError) -> io::Error {
    match e {
        FinishError::Stopped(code) => refused(id, Some(code)),
        FinishError::ClosedStream => refused(id, None),
    }
}

/// The peer stopped stream `id` with `stopped`'s code, or (`None`) the stream is closed.
fn refused(id: StreamId, stopped: Option<quinn_proto::VarInt>) -> io::Error {
    match stopped {
        Some(code) => Error::Stopped {
            stream: id,
            code: code.into_inner(),
        }
        .into(),
        None => Error::StreamClosed { stream: id }.into(),
    }
}

impl Write for SendStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.done {
            return Err(Error::StreamClosed { stream: self.id }.into());
        }
        self.write_with(|send| send.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        let (cid, id) = (self.conn.id, self.id);
        {
            let mut st = self.conn.shared.lock();
            let Some(c) = st.conns.get_mut(&cid) else {
                return;
            };
            c.release_stream(id, WRITER);
            if self.done || c.error.is_some() {
                return;
            }
            // Errors mean the stream is over already (the peer stopped it).
            let _ = c.conn.send_stream(id).finish();
            st.mark_dirty(cid);
        }
        self.conn.kick();
    }
}

impl std::fmt::Debug for SendStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendStream").field("id", &self.id).finish()
    }
}

/// What one attempt to read found.
enum Got {
    /// Bytes copied; the stream's end, if it came right after them.
    Data(usize, End),
    /// Nothing yet.
    Blocked,
    /// The stream is over (FIN, reset), with nothing more to read.
    End(End),
}

impl RecvStream {
    pub(crate) fn new(
        conn: Arc<ConnRef>,
        id: StreamId,
        waiters: Arc<StreamWaiters>,
        early: bool,
    ) -> RecvStream {
        RecvStream {
            conn,
            id,
            waiters,
            end: End::Open,
            early,
        }
    }

    /// Whether the peer opened this stream with 0-RTT data, before the handshake was done
    /// (a server with [`Config::zero_rtt`](crate::Config::zero_rtt) only). Such data may be
    /// a replay of an earlier connection's: act on it only if doing it twice does no harm
    /// (HTTP/3 answers a non-idempotent request so opened with 425 Too Early).
    pub fn is_0rtt(&self) -> bool {
        self.early
    }

    /// The stream's id.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Asks the peer to stop sending (`STOP_SENDING` with `code`, below 2⁶²) and drops what
    /// has arrived unread; later reads fail. Never waits.
    pub fn stop(&mut self, code: u64) -> io::Result<()> {
        let id = self.id;
        let r = self.conn.with_dirty(|c| {
            c.conn
                .recv_stream(id)
                .stop(varint(code))
                .map_err(|_| Error::StreamClosed { stream: id }.into())
        });
        self.end = End::Stopped;
        self.conn.kick();
        r
    }

    fn ended(&self) -> io::Result<usize> {
        match self.end {
            End::Open | End::Finished => Ok(0),
            End::Reset(code) => Err(Error::Reset {
                stream: self.id,
                code,
            }
            .into()),
            End::Stopped => Err(Error::StreamClosed { stream: self.id }.into()),
        }
    }
}

/// Hands `put` up to `max` bytes of what stream `id` has, in order (`max` above 0); returns
/// what it found and whether quinn-proto wants to send new flow-control credit.
fn read_chunks(
    conn: &mut quinn_proto::Connection,
    id: StreamId,
    max: usize,
    put: &mut impl FnMut(&[u8]),
) -> (Got, bool) {
    let mut stream = conn.recv_stream(id);
    let mut chunks = match stream.read(true) {
        Ok(chunks) => chunks,
        // Ordered reads only, so never `IllegalOrderedRead`: the stream is gone (stopped).
        Err(ReadableError::ClosedStream) | Err(ReadableError::IllegalOrderedRead) => {
            return (Got::End(End::Stopped), false)
        }
    };
    let mut n = 0;
    let mut end = End::Open;
    while n < max {
        match chunks.next(max - n) {
            Ok(Some(chunk)) => {
                put(&chunk.bytes);
                n += chunk.bytes.len();
            }
            Ok(None) => {
                end = End::Finished;
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(code)) => {
                end = End::Reset(code.into_inner());
                break;
            }
        }
    }
    let credit = chunks.finalize().should_transmit();
    let got = match (n, end) {
        (0, End::Open) => Got::Blocked,
        (0, end) => Got::End(end),
        (n, end) => Got::Data(n, end),
    };
    (got, credit)
}

impl RecvStream {
    /// Appends up to `max` bytes to `buf`, as `read` would put them in a slice: parks until
    /// some arrive, `Ok(0)` at the end of the stream. Only what arrived is written to
    /// `buf`'s spare capacity, which need not be zeroed first (a request's buffer is mostly
    /// room it never uses).
    pub fn read_to(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        self.read_with(max, |bytes| buf.extend_from_slice(bytes))
    }

    /// Drops up to `max` bytes of what has arrived, waiting until some do; returns how many,
    /// `Ok(0)` at the end of the stream. Nothing is copied: for a reader that only counts
    /// what it receives (a load generator reading bodies).
    pub fn discard(&mut self, max: usize) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        self.read_with(max, |_| {})
    }

    /// `read`'s, `read_to`'s and `discard`'s work: up to `max` bytes (above 0) handed to
    /// `put`.
    fn read_with(&mut self, max: usize, mut put: impl FnMut(&[u8])) -> io::Result<usize> {
        if self.end != End::Open {
            return self.ended();
        }
        let (cid, id) = (self.conn.id, self.id);
        let mut kick = false;
        let got = self.conn.wait_for(&self.waiters.reader, |st| {
            let failed = st.failed();
            let c = st.conn(cid)?;
            let (got, credit) = read_chunks(&mut c.conn, id, max, &mut put);
            let lost = c.lost();
            if credit {
                st.mark_dirty(cid);
                kick = true;
            }
            match got {
                Got::Blocked => match lost.or(failed) {
                    Some(e) => Err(e),
                    None => Ok(None),
                },
                got => Ok(Some(got)),
            }
        });
        if kick {
            self.conn.kick();
        }
        match got? {
            Got::Data(n, end) => {
                self.end = end;
                Ok(n)
            }
            Got::End(end) => {
                self.end = end;
                self.ended()
            }
            Got::Blocked => unreachable!("a blocked read waits"),
        }
    }
}

impl Read for RecvStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut at = 0;
        self.read_with(buf.len(), |bytes| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        })
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        let (cid, id) = (self.conn.id, self.id);
        {
            let mut st = self.conn.shared.lock();
            let Some(c) = st.conns.get_mut(&cid) else {
                return;
            };
            c.release_stream(id, READER);
            if self.end != End::Open || c.error.is_some() {
                return;
            }
            let _ = c.conn.recv_stream(id).stop(0u32.into());
            st.mark_dirty(cid);
        }
        self.conn.kick();
    }
}

impl std::fmt::Debug for RecvStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvStream").field("id", &self.id).finish()
    }
}
