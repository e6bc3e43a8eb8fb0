//! The owner fiber of an HTTP/2 connection: it reads the client's frames and hands them to
//! [`Recv`], starts a fiber for each new request stream, and writes what the streams have
//! put into the shared output, batched: one `write` for every response that became ready
//! while it waited. Between rounds it waits for input or a wake-up from a stream fiber; an
//! idle connection (no stream) waits without a stack.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::fiber::{Resume, Step};

use super::frame::{self, code, Head, HEAD_LEN, MAX_FRAME};
use super::recv::{NewStream, Recv, DRAIN_PING};
use super::shared::ConnShared;
use super::stream::{self, ConnInfo};
use super::stream_io::StreamIo;
use super::{CONNECTION_WINDOW, MAX_CONCURRENT_STREAMS, PREFACE, STREAM_WINDOW};
use crate::going_away::GoingAwayList;
use crate::lifecycle::Owner;
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::{self, is_timeout, Transport};

/// Input read and handled per round before the output is written: a flood's answers are
/// written (and so meet the client's backpressure) before more of it is read.
const READ_BUDGET: usize = 64 * 1024;

/// The size of each read.
const SCRATCH_LEN: usize = 16 * 1024;

/// How long a drain waits for the client to acknowledge its first GOAWAY (by answering the
/// PING sent with it) before the final GOAWAY names the last stream taken. h2o waits 1 s.
const DRAIN_PING_WAIT: Duration = Duration::from_secs(1);

/// The last stream id a drain's first GOAWAY names: any (RFC 9113 §6.8).
const ANY_STREAM: u32 = 0x7fff_ffff;

thread_local! {
    /// Where reads land: one per worker, zeroed once. Taken out while in use (a TLS read
    /// may write, and so wait, and another connection of the thread then reads with a
    /// scratch of its own).
    static SCRATCH: Cell<Option<Box<[u8]>>> = const { Cell::new(None) };
}

/// An HTTP/2 connection between the owner fiber's rounds.
pub(super) struct Connection<T, H: ?Sized, O> {
    pub(super) io: T,
    pub(super) shared: Arc<ConnShared>,
    pub(super) recv: Recv,
    /// Input of a frame not yet whole, kept between reads.
    pub(super) partial: Vec<u8>,
    /// Bytes read before the switch to HTTP/2 (the preface, and what followed it).
    pub(super) early: Vec<u8>,
    /// The buffer swapped with the shared output when it is written.
    pub(super) spare: Vec<u8>,
    /// The last read found the socket drained.
    pub(super) drained: bool,
    pub(super) settings: Arc<Settings>,
    pub(super) handler: Arc<H>,
    pub(super) owner: O,
    pub(super) peer: Option<SocketAddr>,
    /// The TLS server name (SNI), for each stream's request.
    pub(super) server_name: Option<Arc<str>>,
    pub(super) worker: Option<usize>,
    /// The streamed bodies' shutdown signals, set with the GOAWAY.
    pub(super) streamed: Arc<GoingAwayList>,
    /// Whether an idle connection waits without a stack.
    pub(super) stackless: bool,
    /// A drain's first GOAWAY is out and its final one is not: when that is due at the
    /// latest.
    pub(super) drain_deadline: Option<Instant>,
}

/// Bytes left unused at the start of the output buffers, so that what is written starts 5
/// bytes into a 64-byte line. Over TLS, rustls copies each record's plaintext to 5 bytes
/// (the record header) into a buffer of its own; with both buffers line-aligned that copy ran
/// 5 bytes past its source modulo 4 KiB, where the CPU's string copy (`rep movsb` on AMD Zen 4;
/// `transport::COPY_ALIGN` is the same fix for HTTP/1.1) is many times slower. Measured on a
/// 1 MiB file over TLS (`h2load -c32 -m1`, one worker): 906-1,280 µs of CPU per response
/// without the offset, 587-657 µs with it (`docs/lab/http2-framing-2026-11-29.md`).
const OUT_SKEW: usize = 5;

/// An empty output buffer: its unused start, then room for the frames.
pub(super) fn new_out() -> Vec<u8> {
    let mut v = Vec::with_capacity(16 * 1024);
    v.resize(OUT_SKEW, 0);
    v
}

/// Why the connection ends.
enum End {
    /// A connection error: GOAWAY with this code, then the close.
    Error(u32),
    /// The client closed, or the transport failed: nothing more to say.
    Gone,
}

impl<T, H, O> Connection<T, H, O>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    /// Writes the server's SETTINGS and the connection window, before the client speaks.
    pub(super) fn greet(&mut self) -> bool {
        {
            let mut st = self.shared.lock();
            frame::put_settings(
                &mut st.out,
                &[
                    (
                        frame::setting::MAX_CONCURRENT_STREAMS,
                        MAX_CONCURRENT_STREAMS,
                    ),
                    (frame::setting::INITIAL_WINDOW_SIZE, STREAM_WINDOW),
                    (
                        frame::setting::MAX_HEADER_LIST_SIZE,
                        self.settings.max_head_bytes as u32,
                    ),
                ],
            );
            frame::put_window_update(&mut st.out, 0, CONNECTION_WINDOW - 65_535);
        }
        let _ = self.io.set_read_timeout(Some(self.settings.header_timeout));
        self.flush().is_ok()
    }

    /// Runs the connection until it ends, or returns the stackless wait of an idle one.
    pub(super) fn run(mut self: Box<Self>) -> Step {
        loop {
            if let Err(end) = self.read() {
                self.close(end);
                return Step::done();
            }
            self.spawn_streams();
            if self.flush().is_err() {
                self.close(End::Gone);
                return Step::done();
            }
            let (idle, streams) = {
                let mut st = self.shared.lock();
                st.owner_woken = false;
                (
                    st.fibers == 0 && st.streams.is_empty(),
                    !st.streams.is_empty(),
                )
            };
            let ctl = self.owner.ctl();
            ctl.idle.store(idle, std::sync::atomic::Ordering::Relaxed);
            if ctl.shutting_down.load(std::sync::atomic::Ordering::Relaxed)
                && self.recv.goaway.is_none()
                && self.drain()
            {
                continue;
            }
            if idle && self.recv.goaway.is_some() {
                self.close(End::Gone);
                return Step::done();
            }
            if !self.drained {
                // Input is left (the round's budget ran out): read on after the writes.
                continue;
            }
            let setup = !self.recv.settings_seen;
            let timeout = if setup || self.recv.mid_block() {
                Some(self.settings.header_timeout)
            } else if idle {
                Some(self.settings.idle_timeout)
            } else {
                None
            };
            // A drain waiting for its PING's answer wakes for its final GOAWAY at the latest.
            let drain_wait = self
                .drain_deadline
                .map(|d| d.saturating_duration_since(Instant::now()));
            let timeout = match (timeout, drain_wait) {
                (Some(t), Some(d)) => Some(t.min(d)),
                (t, d) => t.or(d),
            };
            let _ = self.io.set_read_timeout(timeout);
            if self.stackless
                && idle
                && !setup
                && drain_wait.is_none()
                && self.partial.is_empty()
                && !self.recv.mid_block()
            {
                if let Some(wait) = self.io.when_readable() {
                    self.shrink();
                    return wait.resume_with(self);
                }
            }
            let notify = self.shared.owner.clone();
            match self.io.wait_readable_or(&notify) {
                Ok(_) => {}
                // The drain's final GOAWAY is due (checked at the top of the loop).
                Err(e) if is_timeout(&e) && drain_wait.is_some() => {}
                Err(e) if is_timeout(&e) && !streams => {
                    self.timed_out();
                    return Step::done();
                }
                Err(_) => {
                    self.close(End::Gone);
                    return Step::done();
                }
            }
        }
    }

    /// An idle connection gives its buffers back while it waits without a stack (they are
    /// 16 KiB each); they are taken again when input comes ([`Connection::regrow`]).
    fn shrink(&mut self) {
        self.spare = Vec::new();
        let mut st = self.shared.lock();
        st.out = Vec::new();
        st.streams.shrink_to_fit();
        drop(st);
        self.recv.spawns = Vec::new();
        self.partial = Vec::new();
    }

    /// The output buffers again, after [`Connection::shrink`].
    fn regrow(&mut self) {
        if self.spare.is_empty() {
            self.spare = new_out();
        }
        let mut st = self.shared.lock();
        if st.out.is_empty() {
            st.out = new_out();
        }
    }

    /// Reads and handles input until the socket is drained or the round's budget is used.
    fn read(&mut self) -> Result<(), End> {
        if !self.early.is_empty() {
            let early = std::mem::take(&mut self.early);
            self.input(&early)?;
        }
        let mut scratch = SCRATCH
            .with(Cell::take)
            .unwrap_or_else(|| vec![0; SCRATCH_LEN].into_boxed_slice());
        let mut total = 0;
        let result = loop {
            match self.io.try_read(&mut scratch) {
                Ok(0) => break Err(End::Gone),
                Ok(n) => {
                    if let Err(e) = self.input(&scratch[..n]) {
                        break Err(e);
                    }
                    total += n;
                    if total >= READ_BUDGET {
                        self.drained = false;
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    break Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break Err(End::Gone),
            }
        };
        SCRATCH.with(|s| s.set(Some(scratch)));
        result
    }

    /// Handles `bytes` of input: every whole frame in it (after what was left over from
    /// the last read), keeping the rest.
    fn input(&mut self, bytes: &[u8]) -> Result<(), End> {
        if self.partial.is_empty() {
            let used = self.frames(bytes)?;
            self.partial.extend_from_slice(&bytes[used..]);
        } else {
            let mut partial = std::mem::take(&mut self.partial);
            partial.extend_from_slice(bytes);
            let used = self.frames(&partial);
            partial.drain(..*used.as_ref().unwrap_or(&0));
            self.partial = partial;
            used?;
        }
        Ok(())
    }

    /// Handles the whole frames at the start of `buf`; returns the bytes they took.
    fn frames(&mut self, buf: &[u8]) -> Result<usize, End> {
        let mut at = 0;
        if !self.recv.preface_seen {
            let n = buf.len().min(PREFACE.len());
            if buf[..n] != PREFACE[..n] {
                return Err(End::Error(code::PROTOCOL_ERROR));
            }
            if n < PREFACE.len() {
                return Ok(0);
            }
            self.recv.preface_seen = true;
            at = PREFACE.len();
        }
        while buf.len() - at >= HEAD_LEN {
            let head = Head::parse(buf[at..at + HEAD_LEN].try_into().expect("9 bytes"));
            if head.len > MAX_FRAME {
                return Err(End::Error(code::FRAME_SIZE_ERROR));
            }
            let end = at + HEAD_LEN + head.len;
            if end > buf.len() {
                break;
            }
            self.recv
                .frame(&self.shared, head, &buf[at + HEAD_LEN..end])
                .map_err(End::Error)?;
            at = end;
        }
        Ok(at)
    }

    /// Starts a fiber for each stream the last frames opened.
    fn spawn_streams(&mut self) {
        for NewStream { id, head, notify } in self.recv.spawns.drain(..) {
            let io = StreamIo::new(self.shared.clone(), id, notify);
            let (settings, handler, peer) =
                (self.settings.clone(), self.handler.clone(), self.peer);
            let server_name = self.server_name.clone();
            let streamed = self.streamed.clone();
            let mut fiber = fibra::fiber::Builder::new();
            if let Some(w) = self.worker {
                fiber = fiber.worker(w);
            }
            let spawned = fiber.spawn(move || {
                let conn = ConnInfo {
                    peer,
                    server_name,
                    streamed,
                };
                stream::run(*head, io, &settings, &*handler, conn);
            });
            if let Err(e) = spawned {
                // The closure (and its `StreamIo`) is dropped: the stream is reset.
                log::warn!("cannot spawn an HTTP/2 stream fiber: {e}");
            }
        }
    }

    /// Writes what the streams and the frame handling have put out, until nothing is left.
    fn flush(&mut self) -> io::Result<()> {
        loop {
            {
                let mut st = self.shared.lock();
                if st.out.len() <= OUT_SKEW {
                    return Ok(());
                }
                std::mem::swap(&mut st.out, &mut self.spare);
                if st.stalled {
                    st.wake_all();
                }
            }
            let result = self.io.write_all(&self.spare[OUT_SKEW..]);
            if self.spare.capacity() > 1 << 20 {
                self.spare = new_out();
            } else {
                self.spare.truncate(OUT_SKEW);
            }
            if let Err(e) = result {
                log::debug!("HTTP/2 connection with {:?}: {e}", self.peer);
                return Err(e);
            }
        }
    }

    /// Graceful shutdown in two steps (RFC 9113 §6.8, as h2o and the `h2` crate do): a first
    /// GOAWAY naming any stream, with a PING; then, once the client has answered the PING
    /// (so every stream it opened before reading the GOAWAY has arrived and is taken) or
    /// after [`DRAIN_PING_WAIT`], the final GOAWAY with the last stream id. A single GOAWAY
    /// naming the last stream seen refuses the streams the client sent meanwhile: requests
    /// it was free to send, which a client like h2load counts as failed. Returns whether it
    /// wrote a frame.
    fn drain(&mut self) -> bool {
        match self.drain_deadline {
            None => {
                let mut st = self.shared.lock();
                frame::put_goaway(&mut st.out, ANY_STREAM, code::NO_ERROR);
                frame::put_ping(&mut st.out, &DRAIN_PING);
                drop(st);
                self.drain_deadline = Some(Instant::now() + DRAIN_PING_WAIT);
                // Streamed bodies (server-sent events) end their responses.
                self.streamed.set_all();
                true
            }
            Some(due) if self.recv.drain_ping_acked || Instant::now() >= due => {
                self.drain_deadline = None;
                self.go_away();
                true
            }
            Some(_) => false,
        }
    }

    /// The final GOAWAY: streams above the last one taken are refused; those in flight
    /// finish. (Streamed bodies were told at the first GOAWAY, and those registered since
    /// are told as they register.)
    fn go_away(&mut self) {
        let last = self.recv.last_stream;
        frame::put_goaway(&mut self.shared.lock().out, last, code::NO_ERROR);
        self.recv.goaway = Some(last);
    }

    /// A wait ended without input on an idle connection (the idle timeout) or one still
    /// setting up (the header timeout): GOAWAY and the end.
    fn timed_out(&mut self) {
        let code = if self.recv.settings_seen {
            code::NO_ERROR
        } else {
            code::PROTOCOL_ERROR
        };
        self.close(End::Error(code));
    }

    /// Ends the connection: tells the streams, says GOAWAY for an error, closes.
    fn close(&mut self, end: End) {
        self.shared.lock().end();
        self.streamed.set_all();
        if let End::Error(c) = end {
            if c != code::NO_ERROR {
                log::debug!("HTTP/2 connection error {c:#x} with {:?}", self.peer);
            }
            {
                let mut st = self.shared.lock();
                frame::put_goaway(&mut st.out, self.recv.last_stream, c);
            }
            let _ = self.io.set_write_timeout(Some(Duration::from_secs(2)));
            if self.flush().is_ok() {
                let _ = transport::write_last(&mut self.io, &[]);
                linger(&mut self.io);
            }
        } else if self.recv.goaway.is_some() {
            let _ = self.flush();
            let _ = transport::write_last(&mut self.io, &[]);
        }
    }
}

/// After GOAWAY and our end of the stream, reads (and drops) what the client still sends,
/// for a moment, so that closing with unread input does not reset the connection and take
/// the GOAWAY with it.
fn linger<T: Transport>(io: &mut T) {
    let _ = io.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 4096];
    for _ in 0..64 {
        match io.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

impl<T, H, O> Resume for Connection<T, H, O>
where
    T: Transport,
    H: Service + Send + Sync + ?Sized + 'static,
    O: Owner + 'static,
{
    /// The end of an idle connection's stackless wait: input, or the idle timeout.
    fn resume(mut self: Box<Self>, ready: io::Result<()>) -> Step {
        self.regrow();
        match ready {
            Ok(()) => self.run(),
            Err(e) if is_timeout(&e) => {
                self.timed_out();
                Step::done()
            }
            Err(_) => Step::done(),
        }
    }
}
