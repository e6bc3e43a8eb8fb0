//! The frame layer's checks and writers.
use super::*;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> (Head, Vec<u8>) {
    let mut out = Vec::new();
    put_head(&mut out, payload.len(), kind, flags, stream);
    let head = Head::parse(out[..HEAD_LEN].try_into().unwrap());
    (head, payload.to_vec())
}

fn check(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Result<Frame<'static>, FrameError> {
    let (head, payload) = frame(kind, flags, stream, payload);
    let payload: &'static [u8] = Box::leak(payload.into_boxed_slice());
    parse(head, payload)
}

#[test]
fn head_round_trips_and_clears_the_reserved_bit() {
    let mut out = Vec::new();
    put_head(&mut out, 0x12_3456, kind::HEADERS, 0x25, 0x8000_0007);
    let head = Head::parse(out[..9].try_into().unwrap());
    assert_eq!(
        head,
        Head {
            len: 0x12_3456,
            kind: kind::HEADERS,
            flags: 0x25,
            stream: 7
        }
    );
}

#[test]
fn data_padding_is_removed_and_counted() {
    let f = check(
        kind::DATA,
        flag::PADDED | flag::END_STREAM,
        1,
        &[2, b'h', b'i', 0, 0],
    );
    assert_eq!(
        f,
        Ok(Frame::Data {
            stream: 1,
            data: b"hi",
            flow_len: 5,
            end_stream: true
        })
    );
    // Padding as long as the payload.
    let bad = check(kind::DATA, flag::PADDED, 1, &[4, 0, 0, 0]);
    assert_eq!(bad, Err(FrameError::Connection(code::PROTOCOL_ERROR)));
    assert_eq!(
        check(kind::DATA, 0, 0, b"x"),
        Err(FrameError::Connection(code::PROTOCOL_ERROR))
    );
}

#[test]
fn headers_priority_and_padding() {
    let payload = [1, 0, 0, 0, 3, 16, b'a', b'b', 0];
    let f = check(kind::HEADERS, flag::PADDED | flag::PRIORITY, 5, &payload);
    assert_eq!(
        f,
        Ok(Frame::Headers {
            stream: 5,
            block: b"ab",
            end_stream: false,
            end_headers: false,
            priority: Some(Priority { depends_on: 3 }),
        })
    );
}

#[test]
fn fixed_lengths_are_checked() {
    use FrameError::{Connection, Stream};
    assert_eq!(
        check(kind::PRIORITY, 0, 1, &[0; 4]),
        Err(Stream(1, code::FRAME_SIZE_ERROR))
    );
    assert_eq!(
        check(kind::RST_STREAM, 0, 1, &[0; 3]),
        Err(Connection(code::FRAME_SIZE_ERROR))
    );
    assert_eq!(
        check(kind::PING, 0, 0, &[0; 7]),
        Err(Connection(code::FRAME_SIZE_ERROR))
    );
    assert_eq!(
        check(kind::PING, 0, 1, &[0; 8]),
        Err(Connection(code::PROTOCOL_ERROR))
    );
    assert_eq!(
        check(kind::WINDOW_UPDATE, 0, 1, &[0; 4]),
        Err(Stream(1, code::PROTOCOL_ERROR))
    );
    assert_eq!(
        check(kind::WINDOW_UPDATE, 0, 0, &[0; 4]),
        Err(Connection(code::PROTOCOL_ERROR))
    );
    assert_eq!(
        check(kind::SETTINGS, flag::ACK, 0, &[0; 6]),
        Err(Connection(code::FRAME_SIZE_ERROR))
    );
    assert_eq!(
        check(kind::SETTINGS, 0, 0, &[0; 5]),
        Err(Connection(code::FRAME_SIZE_ERROR))
    );
}

#[test]
fn setting_values_are_checked() {
    use FrameError::Connection;
    let one = |id: u16, v: u32| {
        let mut p = id.to_be_bytes().to_vec();
        p.extend_from_slice(&v.to_be_bytes());
        check(kind::SETTINGS, 0, 0, &p)
    };
    assert_eq!(
        one(setting::ENABLE_PUSH, 2),
        Err(Connection(code::PROTOCOL_ERROR))
    );
    assert_eq!(
        one(setting::INITIAL_WINDOW_SIZE, 1 << 31),
        Err(Connection(code::FLOW_CONTROL_ERROR))
    );
    assert_eq!(
        one(setting::MAX_FRAME_SIZE, 16_383),
        Err(Connection(code::PROTOCOL_ERROR))
    );
    assert_eq!(
        one(setting::MAX_FRAME_SIZE, 1 << 24),
        Err(Connection(code::PROTOCOL_ERROR))
    );
    assert!(one(0xff, 7).is_ok(), "unknown settings pass");
}

#[test]
fn long_header_blocks_are_split_into_continuations() {
    let mut out = Vec::new();
    put_headers(&mut out, 3, true, 16_384, |o| o.extend(vec![7u8; 40_000]));
    let mut at = 0;
    let mut kinds = Vec::new();
    let mut total = 0;
    while at < out.len() {
        let head = Head::parse(out[at..at + 9].try_into().unwrap());
        kinds.push((head.kind, head.flags));
        total += head.len;
        at += 9 + head.len;
    }
    assert_eq!(at, out.len());
    assert_eq!(total, 40_000);
    assert_eq!(
        kinds,
        vec![
            (kind::HEADERS, flag::END_STREAM),
            (kind::CONTINUATION, 0),
            (kind::CONTINUATION, flag::END_HEADERS)
        ]
    );
    let mut one = Vec::new();
    put_headers(&mut one, 3, false, 16_384, |o| o.extend_from_slice(b"abc"));
    assert_eq!(one, [0, 0, 3, 1, 4, 0, 0, 0, 3, b'a', b'b', b'c']);
}
