//! SETTINGS payloads: round trips, the bytes a server sends, and every rejection.
use super::*;

/// The payload of pairs, each a varint identifier and value.
fn payload(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(id, value) in pairs {
        varint::put(&mut out, id);
        varint::put(&mut out, value);
    }
    out
}

/// The payload of a whole SETTINGS frame written by `put_settings`.
fn written(settings: &Settings, grease: Option<(u64, u64)>) -> Vec<u8> {
    let mut out = Vec::new();
    put_settings(&mut out, settings, grease);
    let head = frame::parse_head(&out, 1 << 16).unwrap().unwrap();
    assert_eq!(head.kind, frame::FrameKind::Settings);
    assert_eq!(out.len(), head.head_len + head.len as usize);
    out[head.head_len..].to_vec()
}

#[test]
fn empty_payload_is_every_default() {
    let s = Settings::parse(&[]).unwrap();
    assert_eq!(s, Settings::default());
    assert_eq!(s.max_field_section_size, None);
    assert_eq!(written(&s, None), b"");
}

#[test]
fn settings_round_trip() {
    let all = Settings {
        qpack_max_table_capacity: 4096,
        max_field_section_size: Some(65_536),
        qpack_blocked_streams: 100,
        enable_connect_protocol: true,
        h3_datagram: true,
    };
    for s in [
        all,
        Settings::default(),
        Settings {
            max_field_section_size: Some(0),
            ..Settings::default()
        },
        Settings {
            h3_datagram: true,
            ..Settings::default()
        },
    ] {
        assert_eq!(Settings::parse(&written(&s, None)), Ok(s));
        let grease = Some((varint::reserved(9), 0x1234));
        assert_eq!(Settings::parse(&written(&s, grease)), Ok(s));
    }
}

#[test]
fn a_servers_settings_bytes() {
    // QPACK's capacity and blocked streams stay at their default, 0: not sent.
    let s = Settings {
        max_field_section_size: Some(16_384),
        enable_connect_protocol: true,
        ..Settings::default()
    };
    let mut out = Vec::new();
    put_settings(&mut out, &s, Some((0x21, 0)));
    assert_eq!(
        out,
        [0x04, 0x09, 0x06, 0x80, 0x00, 0x40, 0x00, 0x08, 0x01, 0x21, 0x00]
    );
}

#[test]
fn unknown_and_reserved_identifiers_are_ignored() {
    let p = payload(&[
        (0x00, 5),
        (0x09, 1),
        (varint::reserved(0), 77),
        (varint::reserved(1 << 40), varint::MAX),
        (id::MAX_FIELD_SECTION_SIZE, 100),
        (0x3fff_ffff_ffff_fffe, 1),
    ]);
    let s = Settings::parse(&p).unwrap();
    assert_eq!(
        s,
        Settings {
            max_field_section_size: Some(100),
            ..Settings::default()
        }
    );
}

#[test]
fn http2_settings_are_errors() {
    for id in 0x2..=0x5 {
        let p = payload(&[(id::MAX_FIELD_SECTION_SIZE, 1), (id, 0)]);
        assert_eq!(Settings::parse(&p), Err(H3Error::SettingsError), "{id}");
    }
}

#[test]
fn duplicates_are_errors() {
    for id in [
        id::QPACK_MAX_TABLE_CAPACITY,
        id::MAX_FIELD_SECTION_SIZE,
        id::QPACK_BLOCKED_STREAMS,
        id::ENABLE_CONNECT_PROTOCOL,
        id::H3_DATAGRAM,
        0x21,
        0x1234,
    ] {
        let p = payload(&[(id, 0), (0x40, 0), (id, 0)]);
        assert_eq!(Settings::parse(&p), Err(H3Error::SettingsError), "{id}");
    }
}

#[test]
fn boolean_settings_are_0_or_1() {
    for id in [id::ENABLE_CONNECT_PROTOCOL, id::H3_DATAGRAM] {
        assert!(Settings::parse(&payload(&[(id, 1)])).is_ok());
        assert_eq!(
            Settings::parse(&payload(&[(id, 2)])),
            Err(H3Error::SettingsError)
        );
    }
}

#[test]
fn a_payload_cut_inside_a_pair_is_a_frame_error() {
    let p = payload(&[(id::MAX_FIELD_SECTION_SIZE, 16_384), (0x21, 0x3fff)]);
    // Every cut that is not between pairs: inside an identifier, between an identifier and
    // its value, inside a value.
    let pair_ends = [5, p.len()];
    for cut in 1..p.len() {
        let got = Settings::parse(&p[..cut]);
        if pair_ends.contains(&cut) {
            assert!(got.is_ok(), "cut at {cut}");
        } else {
            assert_eq!(got, Err(H3Error::FrameError), "cut at {cut}");
        }
    }
}
