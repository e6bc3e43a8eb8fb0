//! A stream fiber's side of its stream: sending the response's frames into the
//! connection's output within the flow-control windows, and reading the request body, each
//! waiting (up to a timeout) on the stream's own [`Notify`] when it must.

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fibra::sync::Notify;
use http::HeaderMap;

use super::frame::{self, code};
use super::shared::{ended_error, reset_error, ConnShared, Shared, Stream, OUT_LIMIT};

/// One stream, as its fiber sees it. Dropping it finishes the stream: what the response
/// left open is reset, and the owner fiber is told.
pub(super) struct StreamIo {
    conn: Arc<ConnShared>,
    id: u32,
    notify: Arc<Notify>,
}

impl StreamIo {
    /// The fiber's handle on stream `id`, whose state is `notify`'s.
    pub(super) fn new(conn: Arc<ConnShared>, id: u32, notify: Arc<Notify>) -> StreamIo {
        StreamIo { conn, id, notify }
    }

    /// The stream id.
    pub(super) fn id(&self) -> u32 {
        self.id
    }

    /// Runs `f` on the locked state and this stream; the owner fiber is woken afterwards
    /// if `f` wrote frames.
    fn with<R>(&self, f: impl FnOnce(&mut Shared, u32) -> io::Result<R>) -> io::Result<R> {
        let mut st = self.conn.lock();
        if st.ended {
            return Err(ended_error());
        }
        if !st.streams.contains_key(&self.id) {
            return Err(reset_error());
        }
        let before = st.out.len();
        let r = f(&mut st, self.id);
        let woke = st.out.len() != before && st.wake_owner();
        drop(st);
        self.conn.wake_owner(woke);
        r
    }

    /// Sends a header block (a response head, a `100 Continue`, trailers) written by
    /// `encode`, ending the stream if `end_stream`.
    pub(super) fn send_headers(
        &self,
        end_stream: bool,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> io::Result<()> {
        self.with(|st, id| {
            frame::put_headers(&mut st.out, id, end_stream, st.max_frame, encode);
            if end_stream {
                end_sent(st, id);
            }
            Ok(())
        })
    }

    /// Sends `data` as DATA frames as the windows allow, the last one ending the stream if
    /// `end_stream`; waits at most `timeout` each time they are closed.
    pub(super) fn send_data(
        &self,
        data: &[u8],
        end_stream: bool,
        timeout: Duration,
    ) -> io::Result<()> {
        let mut rest = data;
        self.send(data.len() as u64, end_stream, timeout, |out, n| {
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            Ok(n)
        })
    }

    /// Sends `len` bytes of `file` from `offset` as DATA frames, read straight into the
    /// connection's output; adds the bytes sent to `sent` as it goes.
    pub(super) fn send_file(
        &self,
        file: &File,
        offset: u64,
        len: u64,
        end_stream: bool,
        timeout: Duration,
        sent: &mut u64,
    ) -> io::Result<()> {
        let mut at = offset;
        let r = self.send(len, end_stream, timeout, |out, n| {
            let got = crate::response::append_file(out, file, at, n)?;
            if got == 0 {
                // The file shrank below the length in the head: end the stream with an
                // error rather than send fewer bytes than promised.
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shorter than its Content-Length",
                ));
            }
            at += got as u64;
            Ok(got)
        });
        *sent += at - offset;
        r
    }

    /// The sending loop: `fill` appends up to `n` payload bytes to the output and says how
    /// many (fewer only for a file read short).
    fn send(
        &self,
        len: u64,
        end_stream: bool,
        timeout: Duration,
        mut fill: impl FnMut(&mut Vec<u8>, usize) -> io::Result<usize>,
    ) -> io::Result<()> {
        let mut left = len;
        let mut deadline = None;
        loop {
            let done = self.with(|st, id| {
                let Shared {
                    out,
                    streams,
                    send_window,
                    max_frame,
                    stalled,
                    ..
                } = st;
                let s: &mut Stream = streams.get_mut(&id).expect("checked by with");
                if left == 0 {
                    if end_stream {
                        frame::put_data_head(out, id, 0, true);
                        s.sent_end = true;
                    }
                    return Ok(true);
                }
                loop {
                    let room = OUT_LIMIT.saturating_sub(out.len()) as i64;
                    let can = s.send_window.min(*send_window).min(room);
                    if can <= 0 {
                        s.waiting = true;
                        if s.send_window > 0 {
                            *stalled = true;
                        }
                        return Ok(false);
                    }
                    let want = (left.min(can as u64) as usize).min(*max_frame);
                    let head_at = out.len();
                    frame::put_data_head(out, id, want, false);
                    let got = match fill(out, want) {
                        Ok(got) => got,
                        Err(e) => {
                            out.truncate(head_at);
                            return Err(e);
                        }
                    };
                    left -= got as u64;
                    let last = end_stream && left == 0;
                    patch_data_head(&mut out[head_at..], got, last);
                    s.send_window -= got as i64;
                    *send_window -= got as i64;
                    if left == 0 {
                        s.sent_end |= last;
                        return Ok(true);
                    }
                }
            })?;
            if done {
                return Ok(());
            }
            let deadline = *deadline.get_or_insert_with(|| Instant::now() + timeout);
            self.wait_until(deadline)?;
        }
    }

    /// Waits for the stream's next wake-up, up to `deadline`.
    fn wait_until(&self, deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !self.notify.wait_timeout(left) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "HTTP/2 stream timed out",
            ));
        }
        Ok(())
    }

    /// Resets the stream with `code` (RST_STREAM), unless it is already gone.
    pub(super) fn reset(&self, code: u32) {
        let _ = self.with(|st, id| {
            st.reset(id, code);
            Ok(())
        });
    }

    /// The next piece of the request body (its window given back), waiting at most
    /// `timeout` for it; `None` once the body has ended.
    pub(super) fn read_data(&self, timeout: Duration) -> io::Result<Option<Bytes>> {
        let mut deadline = None;
        loop {
            let got = self.with(|st, id| {
                let s = st.streams.get_mut(&id).expect("checked by with");
                if let Some(data) = s.body.pop_front() {
                    st.consumed(id, data.len() as u32);
                    return Ok(Some(Some(data)));
                }
                if s.recv_closed {
                    return Ok(Some(None));
                }
                s.waiting = true;
                Ok(None)
            })?;
            if let Some(got) = got {
                return Ok(got);
            }
            let deadline = *deadline.get_or_insert_with(|| Instant::now() + timeout);
            self.wait_until(deadline)?;
        }
    }

    /// Whether the request's body has ended and been read (or never was): the client
    /// ended its side and no DATA waits.
    pub(super) fn recv_ended(&self) -> bool {
        let st = self.conn.lock();
        st.streams
            .get(&self.id)
            .is_none_or(|s| s.recv_closed && s.body.is_empty())
    }

    /// The request's trailer fields, once its body has ended.
    pub(super) fn take_trailers(&self) -> Option<HeaderMap> {
        let mut st = self.conn.lock();
        st.streams.get_mut(&self.id)?.trailers.take()
    }
}

/// Notes that our side of stream `id` has ended.
fn end_sent(st: &mut Shared, id: u32) {
    if let Some(s) = st.streams.get_mut(&id) {
        s.sent_end = true;
    }
}

/// Sets a DATA head's length and END_STREAM flag, `head` being its 9 bytes.
fn patch_data_head(head: &mut [u8], len: usize, end_stream: bool) {
    let l = (len as u32).to_be_bytes();
    head[..3].copy_from_slice(&l[1..]);
    head[4] = if end_stream {
        frame::flag::END_STREAM
    } else {
        0
    };
}

impl Drop for StreamIo {
    /// The stream's fiber has ended (also by unwinding): a response it left unfinished is
    /// reset (INTERNAL_ERROR), a request body still coming is refused (NO_ERROR, RFC 9113
    /// §8.1), and the owner fiber learns it may be idle.
    fn drop(&mut self) {
        let mut st = self.conn.lock();
        st.fibers -= 1;
        if let Some(s) = st.streams.get(&self.id) {
            if !s.sent_end {
                st.reset(self.id, code::INTERNAL_ERROR);
            } else if !s.recv_closed {
                st.reset(self.id, code::NO_ERROR);
            } else {
                st.streams.remove(&self.id);
            }
        }
        let woke = st.wake_owner();
        drop(st);
        self.conn.wake_owner(woke);
    }
}
