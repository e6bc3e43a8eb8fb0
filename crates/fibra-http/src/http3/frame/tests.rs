//! The frame layer: heads parsed from any split of the input, reserved and HTTP/2-only
//! types, the length limits, one-ID payloads, which frames a client may send where, and the
//! writers.
use super::*;

/// A payload limit larger than anything the tests buffer.
const MAX: u64 = 1 << 20;

/// Reads every complete frame from `buf` (consuming them), as a connection's reader would:
/// a head, then the whole payload.
fn take_frames(buf: &mut Vec<u8>, out: &mut Vec<(FrameKind, Vec<u8>)>) -> Result<(), H3Error> {
    while let Some(head) = parse_head(buf, MAX)? {
        let end = head.head_len + head.len as usize;
        if buf.len() < end {
            break;
        }
        out.push((head.kind, buf[head.head_len..end].to_vec()));
        buf.drain(..end);
    }
    Ok(())
}

/// A stream of frames of every kind, reserved ones among them, with lengths that take one,
/// two and four bytes.
fn sample() -> (Vec<u8>, Vec<(FrameKind, Vec<u8>)>) {
    let frames = vec![
        (FrameKind::Settings, vec![0x06, 0x44, 0x00]),
        (FrameKind::Unknown(0x21), b"grease".to_vec()),
        (FrameKind::Headers, vec![0, 0, 0xd1]),
        (FrameKind::Data, vec![b'x'; 100]),
        (FrameKind::Unknown(varint::reserved(1_000_000)), vec![]),
        (FrameKind::Data, vec![b'y'; 17_000]),
        (FrameKind::GoAway, vec![0x04]),
        (FrameKind::MaxPushId, vec![0x80, 0, 0, 0x07]),
        (FrameKind::CancelPush, vec![0x00]),
        (FrameKind::Unknown(0x54), vec![1, 2, 3]),
        (FrameKind::Data, vec![]),
    ];
    let mut wire = Vec::new();
    for (kind, payload) in &frames {
        put_frame(&mut wire, kind.code(), payload);
    }
    (wire, frames)
}

#[test]
fn frames_split_at_every_byte_come_out_whole() {
    let (wire, want) = sample();
    // One split point anywhere (every byte of the heads and around them), then the rest.
    for cut in 0..=wire.len() {
        let mut buf = Vec::new();
        let mut got = Vec::new();
        buf.extend_from_slice(&wire[..cut]);
        take_frames(&mut buf, &mut got).unwrap();
        buf.extend_from_slice(&wire[cut..]);
        take_frames(&mut buf, &mut got).unwrap();
        assert!(buf.is_empty(), "cut at {cut}");
        assert_eq!(got, want, "cut at {cut}");
    }
}

#[test]
fn frames_fed_one_byte_at_a_time() {
    let (wire, want) = sample();
    let mut buf = Vec::new();
    let mut got = Vec::new();
    for &b in &wire {
        buf.push(b);
        take_frames(&mut buf, &mut got).unwrap();
    }
    assert_eq!(got, want);
}

#[test]
fn every_prefix_of_a_head_needs_more() {
    let mut head = Vec::new();
    put_head(&mut head, varint::reserved(1 << 50), varint::MAX);
    assert_eq!(head.len(), 16);
    for cut in 0..head.len() {
        assert_eq!(parse_head(&head[..cut], MAX), Ok(None), "cut at {cut}");
    }
    assert_eq!(
        parse_head(&head, MAX),
        Ok(Some(FrameHead {
            kind: FrameKind::Unknown(varint::reserved(1 << 50)),
            len: varint::MAX,
            head_len: 16,
        }))
    );
}

#[test]
fn reserved_and_unknown_types_are_skipped() {
    for ty in [
        0x21,
        0x40,
        0x5f,
        varint::reserved(12345),
        0x0a,
        0x0e,
        0x10,
        0x1234,
    ] {
        assert!(matches!(FrameKind::of(ty), Ok(FrameKind::Unknown(t)) if t == ty));
        // Allowed on every stream: the reader skips them.
        assert_eq!(
            FrameKind::Unknown(ty).check_from_client(Carrier::Control),
            Ok(())
        );
        assert_eq!(
            FrameKind::Unknown(ty).check_from_client(Carrier::Request),
            Ok(())
        );
    }
    let mut buf = Vec::new();
    put_frame(&mut buf, 0x21, b"padding");
    put_frame(&mut buf, kind::HEADERS, b"\0\0");
    let mut got = Vec::new();
    take_frames(&mut buf, &mut got).unwrap();
    let kept: Vec<_> = got
        .into_iter()
        .filter(|(k, _)| !matches!(k, FrameKind::Unknown(_)))
        .collect();
    assert_eq!(kept, vec![(FrameKind::Headers, b"\0\0".to_vec())]);
}

#[test]
fn http2_only_types_are_unexpected() {
    for ty in [0x2, 0x6, 0x8, 0x9] {
        assert_eq!(FrameKind::of(ty), Err(H3Error::FrameUnexpected));
        // Known as soon as the type is, before the length.
        assert_eq!(parse_head(&[ty as u8], MAX), Err(H3Error::FrameUnexpected));
        // Also in a longer encoding of the type.
        assert_eq!(
            parse_head(&[0x40, ty as u8, 0x00], MAX),
            Err(H3Error::FrameUnexpected)
        );
    }
}

#[test]
fn buffered_frames_over_the_limit_are_excessive_load() {
    for ty in [kind::HEADERS, kind::PUSH_PROMISE, kind::SETTINGS] {
        let mut head = Vec::new();
        put_head(&mut head, ty, 1000);
        assert!(parse_head(&head, 1000).unwrap().is_some());
        assert_eq!(parse_head(&head, 999), Err(H3Error::ExcessiveLoad));
    }
    // DATA and unknown frames are streamed or skipped: no limit.
    for ty in [kind::DATA, 0x21, 0x1234] {
        let mut head = Vec::new();
        put_head(&mut head, ty, varint::MAX);
        assert_eq!(parse_head(&head, 0).unwrap().unwrap().len, varint::MAX);
    }
}

#[test]
fn one_id_frames_have_one_varint_of_payload() {
    for ty in [kind::CANCEL_PUSH, kind::GOAWAY, kind::MAX_PUSH_ID] {
        for len in [1, 2, 4, 8] {
            let mut head = Vec::new();
            put_head(&mut head, ty, len);
            assert!(parse_head(&head, 0).unwrap().is_some(), "{ty} {len}");
        }
        for len in [0, 9, 1 << 20] {
            let mut head = Vec::new();
            put_head(&mut head, ty, len);
            assert_eq!(
                parse_head(&head, MAX),
                Err(H3Error::FrameError),
                "{ty} {len}"
            );
        }
    }
    assert_eq!(parse_id(&[0x25]), Ok(37));
    assert_eq!(parse_id(&[0x40, 0x25]), Ok(37));
    assert_eq!(parse_id(&[0xff; 8]), Ok(varint::MAX));
    // Bytes after the ID, an ID cut short, nothing.
    assert_eq!(parse_id(&[0x25, 0x00]), Err(H3Error::FrameError));
    assert_eq!(parse_id(&[0x80, 0x00, 0x00]), Err(H3Error::FrameError));
    assert_eq!(parse_id(&[]), Err(H3Error::FrameError));
}

#[test]
fn which_frames_a_client_may_send_where() {
    use FrameKind::*;
    let control = [CancelPush, Settings, GoAway, MaxPushId];
    let request = [Data, Headers];
    for kind in [
        Data,
        Headers,
        CancelPush,
        Settings,
        PushPromise,
        GoAway,
        MaxPushId,
    ] {
        let on_control = kind.check_from_client(Carrier::Control);
        let on_request = kind.check_from_client(Carrier::Request);
        let want = |ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(H3Error::FrameUnexpected)
            }
        };
        assert_eq!(on_control, want(control.contains(&kind)), "{kind:?}");
        assert_eq!(on_request, want(request.contains(&kind)), "{kind:?}");
    }
}

#[test]
fn kinds_and_codes_agree() {
    for ty in [0x0, 0x1, 0x3, 0x4, 0x5, 0x7, 0xd, 0x21, 0xff] {
        assert_eq!(FrameKind::of(ty).unwrap().code(), ty);
    }
}

#[test]
fn headers_frames_have_the_shortest_length() {
    for len in [0, 1, 63, 64, 100, 16_383, 16_384, 70_000] {
        let mut out = vec![0xaa];
        put_headers(&mut out, |o| o.extend(std::iter::repeat_n(0x5a, len)));
        assert_eq!(out[0], 0xaa);
        let head = parse_head(&out[1..], MAX).unwrap().unwrap();
        assert_eq!(head.kind, FrameKind::Headers);
        assert_eq!(head.len, len as u64);
        assert_eq!(head.head_len, 1 + varint::len(len as u64), "{len}");
        assert_eq!(out.len(), 1 + head.head_len + len);
        assert!(out[1 + head.head_len..].iter().all(|&b| b == 0x5a));
    }
}

#[test]
fn writer_bytes() {
    let mut out = Vec::new();
    put_goaway(&mut out, 0);
    put_goaway(&mut out, 400);
    put_id_frame(&mut out, kind::MAX_PUSH_ID, 7);
    put_data_head(&mut out, 5);
    out.extend_from_slice(b"hello");
    assert_eq!(
        out,
        [
            &[0x07, 0x01, 0x00][..],
            &[0x07, 0x02, 0x41, 0x90],
            &[0x0d, 0x01, 0x07],
            &[0x00, 0x05],
            b"hello",
        ]
        .concat()
    );
}
