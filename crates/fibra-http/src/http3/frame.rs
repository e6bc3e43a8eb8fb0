//! HTTP/3 frames (RFC 9114 §7) as the server reads and writes them: the frame head (a type
//! and a length, both variable-length integers) parsed from however many bytes have arrived,
//! the checks that need no connection state (types HTTP/3 reserves, which frames a client
//! may send on which stream, lengths), the payload of the frames that carry one ID, and the
//! writers that append frames to the connection's output.
//!
//! Unlike HTTP/2's, a frame has no flags, no stream ID and no padding, and its length has
//! no protocol limit: the reader gives each frame type a limit of its own ([`FrameHead`]).
//! SETTINGS payloads are `settings`'s.

use super::error::H3Error;
use super::varint;

/// Frame types (RFC 9114 §7.2).
pub(crate) mod kind {
    /// DATA: request or response content.
    pub(crate) const DATA: u64 = 0x0;
    /// HEADERS: a QPACK-encoded field section.
    pub(crate) const HEADERS: u64 = 0x1;
    /// CANCEL_PUSH: a push ID whose push is cancelled.
    pub(crate) const CANCEL_PUSH: u64 = 0x3;
    /// SETTINGS: the first frame of each control stream.
    pub(crate) const SETTINGS: u64 = 0x4;
    /// PUSH_PROMISE: a push ID and a promised request's field section.
    pub(crate) const PUSH_PROMISE: u64 = 0x5;
    /// GOAWAY: the last stream (or push) ID the sender will process.
    pub(crate) const GOAWAY: u64 = 0x7;
    /// MAX_PUSH_ID: the largest push ID a client lets the server use.
    pub(crate) const MAX_PUSH_ID: u64 = 0xd;
}

/// HTTP/2's frame types that HTTP/3 has no counterpart for (PRIORITY, PING, WINDOW_UPDATE,
/// CONTINUATION): reserved, and receiving one is H3_FRAME_UNEXPECTED (RFC 9114 §7.2.8,
/// §11.2.1). HTTP/2's RST_STREAM (0x3) and DATA, HEADERS, SETTINGS, PUSH_PROMISE and GOAWAY
/// kept their numbers for other or similar frames.
const HTTP2_ONLY: [u64; 4] = [0x2, 0x6, 0x8, 0x9];

/// The longest payload of a frame that carries one ID (a variable-length integer).
const ID_PAYLOAD_MAX: u64 = varint::MAX_LEN as u64;

/// A frame's type, as far as a server acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// DATA.
    Data,
    /// HEADERS.
    Headers,
    /// CANCEL_PUSH.
    CancelPush,
    /// SETTINGS.
    Settings,
    /// PUSH_PROMISE.
    PushPromise,
    /// GOAWAY.
    GoAway,
    /// MAX_PUSH_ID.
    MaxPushId,
    /// A reserved type (`0x1f * N + 0x21`, grease) or one no extension we support defines:
    /// the payload is skipped, on any stream (RFC 9114 §7.2.8, §9).
    Unknown(u64),
}

impl FrameKind {
    /// The kind of frame type `ty`; HTTP/2-only types are H3_FRAME_UNEXPECTED.
    pub(crate) fn of(ty: u64) -> Result<FrameKind, H3Error> {
        Ok(match ty {
            kind::DATA => FrameKind::Data,
            kind::HEADERS => FrameKind::Headers,
            kind::CANCEL_PUSH => FrameKind::CancelPush,
            kind::SETTINGS => FrameKind::Settings,
            kind::PUSH_PROMISE => FrameKind::PushPromise,
            kind::GOAWAY => FrameKind::GoAway,
            kind::MAX_PUSH_ID => FrameKind::MaxPushId,
            t if HTTP2_ONLY.contains(&t) => return Err(H3Error::FrameUnexpected),
            t => FrameKind::Unknown(t),
        })
    }

    /// The frame type on the wire.
    pub(crate) fn code(self) -> u64 {
        match self {
            FrameKind::Data => kind::DATA,
            FrameKind::Headers => kind::HEADERS,
            FrameKind::CancelPush => kind::CANCEL_PUSH,
            FrameKind::Settings => kind::SETTINGS,
            FrameKind::PushPromise => kind::PUSH_PROMISE,
            FrameKind::GoAway => kind::GOAWAY,
            FrameKind::MaxPushId => kind::MAX_PUSH_ID,
            FrameKind::Unknown(t) => t,
        }
    }

    /// Whether a client may send this frame on `stream` (RFC 9114 §7.2, Table 1): a
    /// server's check that needs no state. Whether SETTINGS is the control stream's first
    /// frame (and only that) is the connection's to check, as are the IDs.
    pub(crate) fn check_from_client(self, stream: Carrier) -> Result<(), H3Error> {
        let allowed = match (self, stream) {
            (FrameKind::Unknown(_), _) => true,
            (FrameKind::Data | FrameKind::Headers, Carrier::Request) => true,
            (
                FrameKind::CancelPush
                | FrameKind::Settings
                | FrameKind::GoAway
                | FrameKind::MaxPushId,
                Carrier::Control,
            ) => true,
            // A client never sends PUSH_PROMISE (§7.2.5), and the rest are not allowed on
            // this stream.
            _ => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(H3Error::FrameUnexpected)
        }
    }
}

/// A stream that carries frames from a client to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// The client's control stream (unidirectional, type 0x00).
    Control,
    /// A request stream (client-initiated, bidirectional).
    Request,
}

/// A frame head: what the payload is, how long it is, and how many bytes the head took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHead {
    /// The frame's kind.
    pub(crate) kind: FrameKind,
    /// The payload's length. For DATA and unknown types it can be anything up to 2^62 - 1
    /// (the payload is streamed or skipped, never buffered whole); for the other types it
    /// is within the limit [`parse_head`] checked.
    pub(crate) len: u64,
    /// The bytes of the type and the length (2 to 16).
    pub(crate) head_len: usize,
}

/// Parses the frame head at the start of `buf`: `Ok(None)` until `buf` holds all of it.
///
/// `max_buffered` bounds the payload of the frames a reader keeps whole before acting on
/// them (HEADERS, PUSH_PROMISE, SETTINGS): a longer one is H3_EXCESSIVE_LOAD, as the RFC
/// sets no limit a peer could have broken (§10.5: an endpoint may treat excessive load as a
/// connection error). A frame that carries one ID (CANCEL_PUSH, GOAWAY, MAX_PUSH_ID) and
/// whose length cannot be one variable-length integer's (0, or over 8) is malformed:
/// H3_FRAME_ERROR (§7.1). DATA and unknown frames have no limit here. A type HTTP/2 had and
/// HTTP/3 reserves is H3_FRAME_UNEXPECTED as soon as the type is complete.
pub(crate) fn parse_head(buf: &[u8], max_buffered: u64) -> Result<Option<FrameHead>, H3Error> {
    let Some((ty, ty_len)) = varint::decode(buf) else {
        return Ok(None);
    };
    let kind = FrameKind::of(ty)?;
    let Some((len, len_len)) = varint::decode(&buf[ty_len..]) else {
        return Ok(None);
    };
    match kind {
        FrameKind::Data | FrameKind::Unknown(_) => {}
        FrameKind::CancelPush | FrameKind::GoAway | FrameKind::MaxPushId => {
            if len == 0 || len > ID_PAYLOAD_MAX {
                return Err(H3Error::FrameError);
            }
        }
        FrameKind::Headers | FrameKind::PushPromise | FrameKind::Settings => {
            if len > max_buffered {
                return Err(H3Error::ExcessiveLoad);
            }
        }
    }
    Ok(Some(FrameHead {
        kind,
        len,
        head_len: ty_len + len_len,
    }))
}

/// The ID a CANCEL_PUSH, GOAWAY or MAX_PUSH_ID payload carries: exactly one
/// variable-length integer, or H3_FRAME_ERROR (§7.1: a payload shorter or longer than its
/// fields).
pub(crate) fn parse_id(payload: &[u8]) -> Result<u64, H3Error> {
    match varint::decode(payload) {
        Some((id, n)) if n == payload.len() => Ok(id),
        _ => Err(H3Error::FrameError),
    }
}

/// Appends a frame head: the type and the payload's length.
pub(crate) fn put_head(out: &mut Vec<u8>, kind: u64, len: u64) {
    varint::put(out, kind);
    varint::put(out, len);
}

/// Appends a whole frame.
pub(crate) fn put_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    put_head(out, kind, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Appends a DATA frame head for `len` bytes of payload, which the caller appends next.
pub(crate) fn put_data_head(out: &mut Vec<u8>, len: u64) {
    put_head(out, kind::DATA, len);
}

/// Appends a frame of `kind` that carries one ID (CANCEL_PUSH, GOAWAY, MAX_PUSH_ID).
pub(crate) fn put_id_frame(out: &mut Vec<u8>, kind: u64, id: u64) {
    put_head(out, kind, varint::len(id) as u64);
    varint::put(out, id);
}

/// Appends a GOAWAY carrying `id`: from a server, the first client-initiated bidirectional
/// stream ID it will not process (§5.2).
pub(crate) fn put_goaway(out: &mut Vec<u8>, id: u64) {
    put_id_frame(out, kind::GOAWAY, id);
}

/// Appends a HEADERS frame whose field section `encode` writes at the end of the buffer it
/// is given. The section is encoded in place: two bytes are kept for its length, the
/// common size (64 to 16383 bytes); a shorter or longer section moves by a byte or two
/// once its length is known, so the length is always in its shortest form.
pub(crate) fn put_headers(out: &mut Vec<u8>, encode: impl FnOnce(&mut Vec<u8>)) {
    varint::put(out, kind::HEADERS);
    let slot = out.len();
    out.extend_from_slice(&[0, 0]);
    encode(out);
    let len = (out.len() - slot - 2) as u64;
    match varint::len(len) {
        2 => varint::put_in(&mut out[slot..slot + 2], len),
        1 => {
            // The section moves back a byte in place: a short response's head is the
            // common case, and `splice` (as below) cost the HTTP/3 hello ~110 more
            // instructions per response.
            out[slot] = len as u8;
            out.copy_within(slot + 2.., slot + 1);
            out.truncate(out.len() - 1);
        }
        n => {
            let mut head = [0u8; varint::MAX_LEN];
            varint::put_in(&mut head[..n], len);
            out.splice(slot..slot + 2, head[..n].iter().copied());
        }
    }
}

#[cfg(test)]
mod tests;
