//! A stream's frames as they arrive ([`Incoming`]): on a request stream the HEADERS
//! sections whole and the DATA payloads streamed, on the control stream its frames whole;
//! unknown and reserved frames skipped, and the frames a client may not send on the stream
//! refused (RFC 9114 §7.2).

use std::io;
use std::ops::Range;

use fibra_quic::RecvStream;

use super::frame::{self, Carrier, FrameKind};
use super::stream_type::{self, StreamType};
use super::H3Error;

/// How much is read from the stream at a time, at most.
const READ_SIZE: usize = 16 * 1024;
/// The room of a stream's first read (a request head, usually all there is).
const FIRST_READ: usize = 2 * 1024;
/// Below this much room past what is buffered, the buffer grows before a read.
const MIN_ROOM: usize = 512;

/// The next thing on a request stream.
pub(crate) enum Next {
    /// A HEADERS frame's field section: its place in the stream's buffer, which
    /// [`Incoming::section`] gives until the next call that reads (the section is not copied
    /// out: it is decoded at once, or compared with the connection's last one).
    Headers(Range<usize>),
    /// DATA: its payload's bytes are [`Incoming::read_data`]'s to give.
    Data,
    /// Another frame the stream may carry, whole (a control stream's SETTINGS, GOAWAY,
    /// MAX_PUSH_ID, CANCEL_PUSH; each bounded by [`frame::parse_head`]).
    Frame(FrameKind, Vec<u8>),
    /// The stream has ended (FIN).
    End,
}

/// Why reading a request stream stopped.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The stream or the connection failed (reset, lost, timed out).
    Io(io::Error),
    /// The client broke HTTP/3: a connection error with this code.
    Protocol(H3Error),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail::Io(e)
    }
}

/// A request stream's receiving half with what has been read from it and not yet used.
pub(crate) struct Incoming {
    recv: RecvStream,
    carrier: Carrier,
    /// The bytes read; its spare capacity is room for the next read, which writes only what
    /// arrives (never zeroed: a request's head uses a few lines of the room it is given).
    buf: Vec<u8>,
    /// Where the bytes not yet used start.
    pos: usize,
    /// Payload bytes of the current DATA frame not yet handed out.
    data_left: u64,
    /// The stream's FIN was read.
    fin: bool,
}

impl Incoming {
    /// Reads frames from `recv`, a stream of kind `carrier`.
    pub(crate) fn new(recv: RecvStream, carrier: Carrier) -> Incoming {
        Incoming {
            recv,
            carrier,
            buf: Vec::new(),
            pos: 0,
            data_left: 0,
            fin: false,
        }
    }

    /// The bytes of a HEADERS section [`Incoming::next`] returned as [`Next::Headers`], valid
    /// until the next call that reads.
    pub(crate) fn section(&self, at: Range<usize>) -> &[u8] {
        &self.buf[at]
    }

    /// The receiving half (to stop it).
    pub(crate) fn recv_mut(&mut self) -> &mut RecvStream {
        &mut self.recv
    }

    /// The next frame that matters, skipping the rest of a DATA frame not read and any
    /// unknown or reserved frame. A HEADERS section larger than `max_section` is
    /// `H3_EXCESSIVE_LOAD` (the connection's error: its bytes cannot be skipped safely
    /// before the field section decoder would refuse them anyway).
    pub(crate) fn next(&mut self, max_section: u64) -> Result<Next, Fail> {
        let unread = std::mem::take(&mut self.data_left);
        self.skip(unread)?;
        loop {
            let head = match frame::parse_head(&self.buf[self.pos..], max_section) {
                Ok(Some(head)) => head,
                Ok(None) => {
                    if self.fill()? {
                        continue;
                    }
                    // FIN: between frames it ends the request, inside one it is malformed.
                    return if self.pos == self.buf.len() {
                        Ok(Next::End)
                    } else {
                        Err(Fail::Protocol(H3Error::FrameError))
                    };
                }
                Err(e) => return Err(Fail::Protocol(e)),
            };
            head.kind
                .check_from_client(self.carrier)
                .map_err(Fail::Protocol)?;
            let start = self.pos + head.head_len;
            match head.kind {
                FrameKind::Data => {
                    self.pos = start;
                    self.data_left = head.len;
                    return Ok(Next::Data);
                }
                FrameKind::Unknown(_) => {
                    // Unknown and reserved frames are skipped (§9), however long.
                    self.pos = start;
                    self.skip(head.len)?;
                }
                kind => {
                    // Bounded by `max_section` or by `parse_head`'s own limits. `pos` moves
                    // to the payload first: `fill` may move what is past it to the front.
                    let len = head.len as usize;
                    self.pos = start;
                    while self.buf.len() - self.pos < len {
                        if !self.fill()? {
                            return Err(Fail::Protocol(H3Error::FrameError));
                        }
                    }
                    let payload = self.pos..self.pos + len;
                    self.pos += len;
                    return Ok(match kind {
                        FrameKind::Headers => Next::Headers(payload),
                        kind => Next::Frame(kind, self.buf[payload].to_vec()),
                    });
                }
            }
        }
    }

    /// Reads the type that opens a unidirectional stream (§6.2); `None` if the stream ends
    /// first.
    pub(crate) fn stream_type(&mut self) -> Result<Option<StreamType>, Fail> {
        loop {
            if let Some((ty, n)) = stream_type::parse(&self.buf[self.pos..]) {
                self.pos += n;
                return Ok(Some(ty));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Reads and hands over whatever the stream carries next, unframed (a QPACK
    /// instruction stream); an empty slice at the stream's end.
    pub(crate) fn raw(&mut self) -> Result<&[u8], Fail> {
        if self.pos == self.buf.len() && !self.fill()? {
            return Ok(&[]);
        }
        let start = self.pos;
        self.pos = self.buf.len();
        Ok(&self.buf[start..])
    }

    /// Reads payload bytes of the current DATA frame into `out`; 0 once the frame is used up.
    pub(crate) fn read_data(&mut self, out: &mut [u8]) -> Result<usize, Fail> {
        if self.data_left == 0 || out.is_empty() {
            return Ok(0);
        }
        if self.pos == self.buf.len() && !self.fill()? {
            return Err(Fail::Protocol(H3Error::FrameError));
        }
        let n = (self.buf.len() - self.pos)
            .min(out.len())
            .min(usize::try_from(self.data_left).unwrap_or(usize::MAX));
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        self.data_left -= n as u64;
        Ok(n)
    }

    /// [`Incoming::read_data`] without the copy: drops up to `max` payload bytes of the
    /// current DATA frame (the ones already buffered first, then straight from the stream,
    /// never past the frame's end) and returns how many.
    pub(crate) fn discard_data(&mut self, max: usize) -> Result<usize, Fail> {
        if self.data_left == 0 || max == 0 {
            return Ok(0);
        }
        let limit = usize::try_from(self.data_left)
            .unwrap_or(usize::MAX)
            .min(max);
        let buffered = self.buf.len() - self.pos;
        let n = if buffered > 0 {
            let n = buffered.min(limit);
            self.pos += n;
            n
        } else {
            let n = if self.fin {
                0
            } else {
                self.recv.discard(limit)?
            };
            if n == 0 {
                // The stream ended inside the frame.
                self.fin = true;
                return Err(Fail::Protocol(H3Error::FrameError));
            }
            n
        };
        self.data_left -= n as u64;
        Ok(n)
    }

    /// Consumes `len` bytes of the stream unread (a payload skipped); the stream ending
    /// first is H3_FRAME_ERROR (a frame cut short).
    fn skip(&mut self, mut len: u64) -> Result<(), Fail> {
        while len > 0 {
            if self.pos == self.buf.len() && !self.fill()? {
                return Err(Fail::Protocol(H3Error::FrameError));
            }
            let n = (self.buf.len() - self.pos).min(usize::try_from(len).unwrap_or(usize::MAX));
            self.pos += n;
            len -= n as u64;
        }
        Ok(())
    }

    /// Reads more from the stream; false at its FIN.
    fn fill(&mut self) -> io::Result<bool> {
        if self.fin {
            return Ok(false);
        }
        if self.pos == self.buf.len() {
            self.pos = 0;
            self.buf.clear();
        } else if self.pos > READ_SIZE {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let end = self.buf.len();
        if self.buf.capacity() - end < MIN_ROOM {
            // Grows: from FIRST_READ, doubling, to READ_SIZE of room, so a small request
            // never pays for a large buffer.
            let room = (2 * self.buf.capacity()).clamp(FIRST_READ, READ_SIZE);
            self.buf.reserve(room);
        }
        let room = (self.buf.capacity() - end).min(READ_SIZE);
        let n = self.recv.read_to(&mut self.buf, room)?;
        if n == 0 {
            self.fin = true;
        }
        Ok(n > 0)
    }
}
