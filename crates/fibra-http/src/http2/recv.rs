//! What the owner fiber does with each frame the client sends: the connection's and the
//! streams' state machines (RFC 9113 §5.1), flow control on receipt (§6.9), SETTINGS, PING,
//! header blocks across CONTINUATION frames, and the defences against floods (rapid reset,
//! CONTINUATION, oversized header lists).

use bytes::Bytes;

use super::frame::{self, code, kind, setting, Frame, FrameError, Head, MAX_WINDOW};
use super::hpack::Decoder;
use super::request_head::{decode_request_cached, decode_trailers, Decoded, LastHead, LastTarget};
use super::shared::{ConnShared, Shared, Stream};
use super::{MAX_CONCURRENT_STREAMS, STREAM_WINDOW};

/// Client resets of streams we had not answered yet, past which (and past half of the
/// streams opened) the connection is cut off with ENHANCE_YOUR_CALM (CVE-2023-44487).
const EARLY_RESETS: u64 = 100;

/// A new request stream, for the owner to run in a fiber.
pub(super) struct NewStream {
    pub(super) id: u32,
    pub(super) head: Box<http::request::Parts>,
    pub(super) notify: std::sync::Arc<fibra::sync::Notify>,
}

/// A header block being received across HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
    self_dependent: bool,
    bytes: Vec<u8>,
}

/// The payload of the PING a drain sends with its first GOAWAY (see `Connection::drain`).
pub(super) const DRAIN_PING: [u8; 8] = *b"fibra-gd";

/// The connection's receiving state.
pub(super) struct Recv {
    decoder: Decoder,
    /// The connection preface has been read.
    pub(super) preface_seen: bool,
    /// The client's first SETTINGS has been read.
    pub(super) settings_seen: bool,
    /// The highest stream id the client has opened.
    pub(super) last_stream: u32,
    block: Option<Block>,
    /// GOAWAY sent: streams above this id are refused.
    pub(super) goaway: Option<u32>,
    /// The client acknowledged the PING sent with a drain's first GOAWAY
    /// ([`DRAIN_PING`]): it has read that GOAWAY, so every stream it opened before is in.
    pub(super) drain_ping_acked: bool,
    opened: u64,
    early_resets: u64,
    max_list: usize,
    /// The last request's target, for the next one with the same `:path`.
    last_target: LastTarget,
    /// The last request block, for the next one that repeats it.
    last_head: LastHead,
    /// Streams opened by the frames handled since the owner last took them.
    pub(super) spawns: Vec<NewStream>,
}

impl Recv {
    /// The state of a new connection whose header lists may be `max_list` bytes.
    pub(super) fn new(max_list: usize) -> Recv {
        Recv {
            decoder: Decoder::new(),
            preface_seen: false,
            settings_seen: false,
            last_stream: 0,
            block: None,
            goaway: None,
            drain_ping_acked: false,
            opened: 0,
            early_resets: 0,
            max_list,
            last_target: LastTarget::default(),
            last_head: LastHead::default(),
            spawns: Vec::new(),
        }
    }

    /// A header block is still being received (CONTINUATION frames are owed).
    pub(super) fn mid_block(&self) -> bool {
        self.block.is_some()
    }

    /// Handles one frame; `Err` is a connection error's code.
    pub(super) fn frame(
        &mut self,
        conn: &ConnShared,
        head: Head,
        payload: &[u8],
    ) -> Result<(), u32> {
        if !self.settings_seen
            && (head.kind != kind::SETTINGS || head.flags & frame::flag::ACK != 0)
        {
            // RFC 9113 §3.4: the preface's SETTINGS comes first.
            return Err(code::PROTOCOL_ERROR);
        }
        if let Some(b) = &self.block {
            if head.kind != kind::CONTINUATION || head.stream != b.stream {
                return Err(code::PROTOCOL_ERROR);
            }
        }
        let frame = match frame::parse(head, payload) {
            Ok(f) => f,
            Err(FrameError::Connection(c)) => return Err(c),
            Err(FrameError::Stream(id, c)) => {
                if id > self.last_stream && head.kind != kind::PRIORITY {
                    return Err(code::PROTOCOL_ERROR);
                }
                let mut st = conn.lock();
                st.reset(id, c);
                return Ok(());
            }
        };
        match frame {
            Frame::Data {
                stream,
                data,
                flow_len,
                end_stream,
            } => self.data(conn, stream, data, flow_len, end_stream),
            Frame::Headers {
                stream,
                block,
                end_stream,
                end_headers,
                priority,
            } => {
                let self_dependent = priority.is_some_and(|p| p.depends_on == stream);
                if end_headers {
                    // The whole block in one frame (nearly every request): decoded where
                    // it lies.
                    return self.headers(conn, stream, block, end_stream, self_dependent);
                }
                self.block = Some(Block {
                    stream,
                    end_stream,
                    self_dependent,
                    bytes: block.to_vec(),
                });
                Ok(())
            }
            Frame::Continuation {
                block, end_headers, ..
            } => {
                let Some(b) = &mut self.block else {
                    return Err(code::PROTOCOL_ERROR);
                };
                b.bytes.extend_from_slice(block);
                // A block far past the header list limit (CVE-2024-27316).
                if b.bytes.len() > self.max_list.max(16 * 1024) * 2 {
                    return Err(code::ENHANCE_YOUR_CALM);
                }
                if end_headers {
                    let b = self.block.take().expect("checked above");
                    self.headers(conn, b.stream, &b.bytes, b.end_stream, b.self_dependent)
                } else {
                    Ok(())
                }
            }
            Frame::Priority { stream, priority } => {
                if priority.depends_on == stream {
                    conn.lock().reset(stream, code::PROTOCOL_ERROR);
                }
                Ok(())
            }
            Frame::RstStream { stream, .. } => self.rst(conn, stream),
            Frame::Settings { ack, payload } => {
                if !ack {
                    self.settings(conn, payload)?;
                }
                Ok(())
            }
            Frame::PushPromise => Err(code::PROTOCOL_ERROR),
            Frame::Ping { ack, data } => {
                if !ack {
                    frame::put_ping_ack(&mut conn.lock().out, &data);
                } else if data == DRAIN_PING {
                    self.drain_ping_acked = true;
                }
                Ok(())
            }
            // The client will open no more streams; the ones open finish, and the client
            // closes when it is done (it may still PING, say).
            Frame::GoAway { .. } => Ok(()),
            Frame::WindowUpdate { stream, increment } => {
                self.window_update(conn, stream, i64::from(increment))
            }
            Frame::Unknown => Ok(()),
        }
    }

    fn data(
        &mut self,
        conn: &ConnShared,
        id: u32,
        data: &[u8],
        flow_len: usize,
        end_stream: bool,
    ) -> Result<(), u32> {
        let mut guard = conn.lock();
        let st = &mut *guard;
        let flow = flow_len as i64;
        if flow > st.recv_window {
            return Err(code::FLOW_CONTROL_ERROR);
        }
        st.recv_window -= flow;
        let Some(s) = st.streams.get_mut(&id) else {
            if id > self.last_stream {
                // Idle.
                return Err(code::PROTOCOL_ERROR);
            }
            st.conn_consumed(flow_len as u32);
            if !st.was_reset(id) {
                st.reset(id, code::STREAM_CLOSED);
            }
            return Ok(());
        };
        if s.recv_closed {
            st.conn_consumed(flow_len as u32);
            st.reset(id, code::STREAM_CLOSED);
            return Ok(());
        }
        if flow > s.recv_window {
            st.conn_consumed(flow_len as u32);
            st.reset(id, code::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        s.recv_window -= flow;
        s.received += data.len() as u64;
        let over = s
            .content_length
            .is_some_and(|n| s.received > n || end_stream && s.received != n);
        if over {
            // RFC 9113 §8.1.1: DATA that does not add up to `content-length`.
            st.conn_consumed(flow_len as u32);
            st.reset(id, code::PROTOCOL_ERROR);
            return Ok(());
        }
        if !data.is_empty() {
            s.body.push_back(Bytes::copy_from_slice(data));
        }
        s.recv_closed = end_stream;
        s.wake();
        // Padding is given back at once.
        let padding = (flow_len - data.len()) as u32;
        if padding > 0 {
            st.consumed(id, padding);
        }
        Ok(())
    }

    /// A complete header block: a new request, or a stream's trailers.
    fn headers(
        &mut self,
        conn: &ConnShared,
        id: u32,
        block: &[u8],
        end_stream: bool,
        self_dependent: bool,
    ) -> Result<(), u32> {
        let mut guard = conn.lock();
        let st = &mut *guard;
        // `Some(recv_closed)` for a stream still in the table.
        let known = st.streams.get(&id).map(|s| s.recv_closed);
        if known.is_some() || id <= self.last_stream {
            // Trailers, or frames on a stream that has ended: decoded all the same, to keep
            // the HPACK state in step.
            let trailers = decode_trailers(&mut self.decoder, block, self.max_list)
                .map_err(|_| code::COMPRESSION_ERROR)?;
            match known {
                None if st.was_reset(id) => {}
                None => return Err(code::STREAM_CLOSED),
                Some(true) => st.reset(id, code::STREAM_CLOSED),
                Some(false) => match trailers {
                    // Trailers end the stream (RFC 9113 §8.1).
                    Some(t) if end_stream && !self_dependent => {
                        let s = st.streams.get_mut(&id).expect("in the table");
                        if s.content_length.is_some_and(|n| n != s.received) {
                            st.reset(id, code::PROTOCOL_ERROR);
                            return Ok(());
                        }
                        s.trailers = Some(t);
                        s.recv_closed = true;
                        s.wake();
                    }
                    _ => st.reset(id, code::PROTOCOL_ERROR),
                },
            }
            return Ok(());
        }
        if id.is_multiple_of(2) {
            return Err(code::PROTOCOL_ERROR);
        }
        self.last_stream = id;
        let decoded = decode_request_cached(
            &mut self.decoder,
            block,
            self.max_list,
            &mut self.last_target,
            &mut self.last_head,
        )
        .map_err(|_| code::COMPRESSION_ERROR)?;
        if self_dependent {
            st.reset(id, code::PROTOCOL_ERROR);
            return Ok(());
        }
        if self.goaway.is_some() || st.streams.len() >= MAX_CONCURRENT_STREAMS as usize {
            st.reset(id, code::REFUSED_STREAM);
            return Ok(());
        }
        match decoded {
            Decoded::Malformed => st.reset(id, code::PROTOCOL_ERROR),
            Decoded::TooLarge => too_large(st, id, end_stream),
            Decoded::Request(head, content_length) => {
                if end_stream && content_length.is_some_and(|n| n != 0) {
                    st.reset(id, code::PROTOCOL_ERROR);
                    return Ok(());
                }
                let stream = Stream::new(
                    st.initial_window,
                    i64::from(STREAM_WINDOW),
                    end_stream,
                    content_length,
                );
                let notify = stream.notify.clone();
                st.streams.insert(id, stream);
                st.fibers += 1;
                self.opened += 1;
                self.spawns.push(NewStream { id, head, notify });
            }
        }
        Ok(())
    }

    fn rst(&mut self, conn: &ConnShared, id: u32) -> Result<(), u32> {
        if id > self.last_stream {
            return Err(code::PROTOCOL_ERROR);
        }
        let mut guard = conn.lock();
        let st = &mut *guard;
        if st.forget(id).is_some_and(|s| !s.sent_end) {
            self.early_resets += 1;
        }
        if self.early_resets > EARLY_RESETS && self.early_resets * 2 > self.opened {
            return Err(code::ENHANCE_YOUR_CALM);
        }
        Ok(())
    }

    fn settings(&mut self, conn: &ConnShared, payload: &[u8]) -> Result<(), u32> {
        let mut guard = conn.lock();
        let st = &mut *guard;
        for (id, value) in frame::settings(payload) {
            match id {
                setting::INITIAL_WINDOW_SIZE => {
                    let delta = i64::from(value) - st.initial_window;
                    st.initial_window = i64::from(value);
                    for s in st.streams.values_mut() {
                        s.send_window += delta;
                        if s.send_window > MAX_WINDOW {
                            return Err(code::FLOW_CONTROL_ERROR);
                        }
                    }
                    if delta > 0 {
                        st.wake_all();
                    }
                }
                setting::MAX_FRAME_SIZE => st.max_frame = value as usize,
                _ => {}
            }
        }
        frame::put_settings_ack(&mut st.out);
        self.settings_seen = true;
        Ok(())
    }

    fn window_update(&mut self, conn: &ConnShared, id: u32, increment: i64) -> Result<(), u32> {
        let mut guard = conn.lock();
        let st = &mut *guard;
        if id == 0 {
            st.send_window += increment;
            if st.send_window > MAX_WINDOW {
                return Err(code::FLOW_CONTROL_ERROR);
            }
            if st.stalled {
                st.wake_all();
            }
            return Ok(());
        }
        match st.streams.get_mut(&id) {
            Some(s) => {
                s.send_window += increment;
                if s.send_window > MAX_WINDOW {
                    st.reset(id, code::FLOW_CONTROL_ERROR);
                } else {
                    s.wake();
                }
                Ok(())
            }
            None if id > self.last_stream => Err(code::PROTOCOL_ERROR),
            None => Ok(()),
        }
    }
}

/// Answers a request whose header list is over the limit with `431` (and, if its body is
/// still coming, refuses the rest).
fn too_large(st: &mut Shared, id: u32, end_stream: bool) {
    let max_frame = st.max_frame;
    frame::put_headers(&mut st.out, id, true, max_frame, |out| {
        super::hpack::encode_status(out, 431);
    });
    if !end_stream {
        frame::put_rst(&mut st.out, id, code::NO_ERROR);
        st.remember_reset(id);
    }
}
