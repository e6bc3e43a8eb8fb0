//! HTTP/2 frames (RFC 9113 §4, §6) as the server reads and writes them: the 9-byte frame
//! head, each frame type's payload checked against the rules that do not need the
//! connection's state (lengths, stream 0 or not, padding, setting values), and the writers
//! that put frames into the connection's output buffer.

/// The length of a frame head.
pub(crate) const HEAD_LEN: usize = 9;

/// The largest frame payload this side accepts (`SETTINGS_MAX_FRAME_SIZE`, not raised from
/// the default).
pub(crate) const MAX_FRAME: usize = 16_384;

/// Frame types (RFC 9113 §6).
pub(crate) mod kind {
    pub(crate) const DATA: u8 = 0x0;
    pub(crate) const HEADERS: u8 = 0x1;
    pub(crate) const PRIORITY: u8 = 0x2;
    pub(crate) const RST_STREAM: u8 = 0x3;
    pub(crate) const SETTINGS: u8 = 0x4;
    pub(crate) const PUSH_PROMISE: u8 = 0x5;
    pub(crate) const PING: u8 = 0x6;
    pub(crate) const GOAWAY: u8 = 0x7;
    pub(crate) const WINDOW_UPDATE: u8 = 0x8;
    pub(crate) const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub(crate) mod flag {
    pub(crate) const END_STREAM: u8 = 0x1;
    pub(crate) const ACK: u8 = 0x1;
    pub(crate) const END_HEADERS: u8 = 0x4;
    pub(crate) const PADDED: u8 = 0x8;
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// Error codes (RFC 9113 §7).
pub(crate) mod code {
    pub(crate) const NO_ERROR: u32 = 0x0;
    pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
    pub(crate) const INTERNAL_ERROR: u32 = 0x2;
    pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub(crate) const STREAM_CLOSED: u32 = 0x5;
    pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
    pub(crate) const REFUSED_STREAM: u32 = 0x7;
    pub(crate) const CANCEL: u32 = 0x8;
    pub(crate) const COMPRESSION_ERROR: u32 = 0x9;
    pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// Setting identifiers (RFC 9113 §6.5.2).
pub(crate) mod setting {
    pub(crate) const ENABLE_PUSH: u16 = 0x2;
    pub(crate) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub(crate) const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub(crate) const MAX_FRAME_SIZE: u16 = 0x5;
    pub(crate) const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// The largest flow-control window (2^31 - 1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;

/// A frame head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The payload's length.
    pub(crate) len: usize,
    /// The frame type.
    pub(crate) kind: u8,
    /// The flags.
    pub(crate) flags: u8,
    /// The stream id (the reserved bit cleared).
    pub(crate) stream: u32,
}

impl Head {
    /// Reads a head from its 9 bytes.
    pub(crate) fn parse(b: &[u8; HEAD_LEN]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// What is wrong with a frame: a connection error (GOAWAY) or an error of one stream
/// (RST_STREAM), with its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// The connection ends with GOAWAY and this code.
    Connection(u32),
    /// The stream is reset with this code; the connection goes on.
    Stream(u32, u32),
}

/// A stream dependency (HEADERS with PRIORITY, or PRIORITY): read only to refuse a stream
/// that depends on itself (RFC 9113 §5.3.1); priorities are otherwise ignored, as RFC 9113
/// allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Priority {
    /// The stream depended on.
    pub(crate) depends_on: u32,
}

/// A checked frame, borrowing its payload.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// DATA: `data` without padding; `flow_len` is what it costs in flow control (the whole
    /// payload, padding included).
    Data {
        stream: u32,
        data: &'a [u8],
        flow_len: usize,
        end_stream: bool,
    },
    /// HEADERS: the header block fragment, without padding and priority.
    Headers {
        stream: u32,
        block: &'a [u8],
        end_stream: bool,
        end_headers: bool,
        priority: Option<Priority>,
    },
    /// PRIORITY.
    Priority { stream: u32, priority: Priority },
    /// RST_STREAM.
    RstStream { stream: u32, code: u32 },
    /// SETTINGS: its (identifier, value) pairs, values already checked.
    Settings { ack: bool, payload: &'a [u8] },
    /// PUSH_PROMISE, which a client must not send.
    PushPromise,
    /// PING.
    Ping { ack: bool, data: [u8; 8] },
    /// GOAWAY.
    GoAway { last_stream: u32, code: u32 },
    /// WINDOW_UPDATE (increment not 0).
    WindowUpdate { stream: u32, increment: u32 },
    /// CONTINUATION.
    Continuation {
        stream: u32,
        block: &'a [u8],
        end_headers: bool,
    },
    /// A frame of a type this side does not know: ignored (RFC 9113 §4.1, §5.5).
    Unknown,
}

/// Checks a frame whose head is `head` and whose whole payload is `payload`
/// (`payload.len() == head.len`, at most [`MAX_FRAME`]).
pub(crate) fn parse(head: Head, payload: &[u8]) -> Result<Frame<'_>, FrameError> {
    use FrameError::{Connection, Stream};
    let stream = head.stream;
    fn needs_stream(stream: u32, f: Frame<'_>) -> Result<Frame<'_>, FrameError> {
        if stream == 0 {
            Err(FrameError::Connection(code::PROTOCOL_ERROR))
        } else {
            Ok(f)
        }
    }
    let no_stream = || {
        if stream != 0 {
            Err(Connection(code::PROTOCOL_ERROR))
        } else {
            Ok(())
        }
    };
    match head.kind {
        kind::DATA => {
            let data = unpad(head.flags, payload)?;
            needs_stream(
                stream,
                Frame::Data {
                    stream,
                    data,
                    flow_len: payload.len(),
                    end_stream: head.flags & flag::END_STREAM != 0,
                },
            )
        }
        kind::HEADERS => {
            if stream == 0 {
                return Err(Connection(code::PROTOCOL_ERROR));
            }
            let mut block = unpad(head.flags, payload)?;
            let mut priority = None;
            if head.flags & flag::PRIORITY != 0 {
                if block.len() < 5 {
                    return Err(Connection(code::FRAME_SIZE_ERROR));
                }
                priority = Some(dependency(&block[..4]));
                block = &block[5..];
            }
            Ok(Frame::Headers {
                stream,
                block,
                end_stream: head.flags & flag::END_STREAM != 0,
                end_headers: head.flags & flag::END_HEADERS != 0,
                priority,
            })
        }
        kind::PRIORITY => {
            if stream == 0 {
                return Err(Connection(code::PROTOCOL_ERROR));
            }
            if payload.len() != 5 {
                return Err(Stream(stream, code::FRAME_SIZE_ERROR));
            }
            Ok(Frame::Priority {
                stream,
                priority: dependency(&payload[..4]),
            })
        }
        kind::RST_STREAM => {
            if stream == 0 {
                return Err(Connection(code::PROTOCOL_ERROR));
            }
            if payload.len() != 4 {
                return Err(Connection(code::FRAME_SIZE_ERROR));
            }
            Ok(Frame::RstStream {
                stream,
                code: be32(payload),
            })
        }
        kind::SETTINGS => {
            no_stream()?;
            let ack = head.flags & flag::ACK != 0;
            if ack && !payload.is_empty() || !payload.len().is_multiple_of(6) {
                return Err(Connection(code::FRAME_SIZE_ERROR));
            }
            for (id, value) in settings(payload) {
                check_setting(id, value)?;
            }
            Ok(Frame::Settings { ack, payload })
        }
        kind::PUSH_PROMISE => Ok(Frame::PushPromise),
        kind::PING => {
            no_stream()?;
            let data: [u8; 8] = payload
                .try_into()
                .map_err(|_| Connection(code::FRAME_SIZE_ERROR))?;
            Ok(Frame::Ping {
                ack: head.flags & flag::ACK != 0,
                data,
            })
        }
        kind::GOAWAY => {
            no_stream()?;
            if payload.len() < 8 {
                return Err(Connection(code::FRAME_SIZE_ERROR));
            }
            Ok(Frame::GoAway {
                last_stream: be32(payload) & 0x7fff_ffff,
                code: be32(&payload[4..]),
            })
        }
        kind::WINDOW_UPDATE => {
            if payload.len() != 4 {
                return Err(Connection(code::FRAME_SIZE_ERROR));
            }
            let increment = be32(payload) & 0x7fff_ffff;
            if increment == 0 {
                return Err(if stream == 0 {
                    Connection(code::PROTOCOL_ERROR)
                } else {
                    Stream(stream, code::PROTOCOL_ERROR)
                });
            }
            Ok(Frame::WindowUpdate { stream, increment })
        }
        kind::CONTINUATION => needs_stream(
            stream,
            Frame::Continuation {
                stream,
                block: payload,
                end_headers: head.flags & flag::END_HEADERS != 0,
            },
        ),
        _ => Ok(Frame::Unknown),
    }
}

/// The payload without its padding (when PADDED is set).
fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], FrameError> {
    if flags & flag::PADDED == 0 {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(FrameError::Connection(code::FRAME_SIZE_ERROR));
    };
    let pad = usize::from(pad);
    if pad >= payload.len() {
        return Err(FrameError::Connection(code::PROTOCOL_ERROR));
    }
    Ok(&rest[..rest.len() - pad])
}

fn dependency(b: &[u8]) -> Priority {
    Priority {
        depends_on: be32(b) & 0x7fff_ffff,
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The (identifier, value) pairs of a SETTINGS payload (a multiple of 6 bytes).
pub(crate) fn settings(payload: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    payload
        .chunks_exact(6)
        .map(|s| (u16::from_be_bytes([s[0], s[1]]), be32(&s[2..])))
}

/// A setting's value checked against its range (RFC 9113 §6.5.2); unknown ones pass.
fn check_setting(id: u16, value: u32) -> Result<(), FrameError> {
    use FrameError::Connection;
    match id {
        setting::ENABLE_PUSH if value > 1 => Err(Connection(code::PROTOCOL_ERROR)),
        setting::INITIAL_WINDOW_SIZE if i64::from(value) > MAX_WINDOW => {
            Err(Connection(code::FLOW_CONTROL_ERROR))
        }
        setting::MAX_FRAME_SIZE if !(16_384..=16_777_215).contains(&value) => {
            Err(Connection(code::PROTOCOL_ERROR))
        }
        _ => Ok(()),
    }
}

/// Appends a frame head.
pub(crate) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len < 1 << 24);
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]);
}

/// Appends a SETTINGS frame with `values`.
pub(crate) fn put_settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    put_head(out, values.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, value) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a SETTINGS acknowledgement.
pub(crate) fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends a PING (not an acknowledgement) carrying `data`.
pub(crate) fn put_ping(out: &mut Vec<u8>, data: &[u8; 8]) {
    put_head(out, 8, kind::PING, 0, 0);
    out.extend_from_slice(data);
}

/// Appends a PING acknowledgement of `data`.
pub(crate) fn put_ping_ack(out: &mut Vec<u8>, data: &[u8; 8]) {
    put_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(data);
}

/// Appends a GOAWAY.
pub(crate) fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a RST_STREAM.
pub(crate) fn put_rst(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a WINDOW_UPDATE.
pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends a header block as HEADERS (with `end_stream`), followed by CONTINUATION frames
/// when it is longer than `max_frame`. `encode` writes the block at the end of the buffer
/// it is given; the frame head is written in front of it afterwards, so the common block
/// (one frame) is encoded in place without a copy.
pub(crate) fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    end_stream: bool,
    max_frame: usize,
    encode: impl FnOnce(&mut Vec<u8>),
) {
    let at = out.len();
    out.extend_from_slice(&[0; HEAD_LEN]);
    encode(out);
    let len = out.len() - at - HEAD_LEN;
    let end = if end_stream { flag::END_STREAM } else { 0 };
    if len <= max_frame {
        let mut head = Vec::with_capacity(HEAD_LEN);
        put_head(
            &mut head,
            len,
            kind::HEADERS,
            end | flag::END_HEADERS,
            stream,
        );
        out[at..at + HEAD_LEN].copy_from_slice(&head);
        return;
    }
    // Rare: split into HEADERS and CONTINUATION frames.
    let block = out.split_off(at + HEAD_LEN);
    out.truncate(at);
    let mut pieces = block.chunks(max_frame).peekable();
    let mut first = true;
    while let Some(piece) = pieces.next() {
        let last = pieces.peek().is_none();
        let end_headers = if last { flag::END_HEADERS } else { 0 };
        if first {
            put_head(out, piece.len(), kind::HEADERS, end | end_headers, stream);
            first = false;
        } else {
            put_head(out, piece.len(), kind::CONTINUATION, end_headers, stream);
        }
        out.extend_from_slice(piece);
    }
}

/// Appends a DATA frame head for `len` bytes of payload, which the caller appends next.
pub(crate) fn put_data_head(out: &mut Vec<u8>, stream: u32, len: usize, end_stream: bool) {
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    put_head(out, len, kind::DATA, flags, stream);
}

#[cfg(test)]
mod tests;
