//! The client's encoder and decoder streams: what may come (capacity 0, stream
//! cancellations), what may not (everything else), input split at every byte, and the
//! first error kept.

use crate::http3::qpack::primitive::put_int;
use crate::http3::qpack::{DecoderStreamReader, EncoderStreamReader, QpackError};
use crate::http3::varint;

#[test]
fn encoder_stream_capacity_zero_is_fine() {
    let mut r = EncoderStreamReader::new();
    assert_eq!(r.feed(&[]), Ok(()));
    assert_eq!(r.feed(&[0x20]), Ok(()));
    assert_eq!(r.feed(&[0x20; 100]), Ok(()));
}

#[test]
fn encoder_stream_instructions_that_may_not_come() {
    let cases: [(&[u8], QpackError); 8] = [
        // Set Dynamic Table Capacity above 0: in the prefix, and past it.
        (&[0x21], QpackError::CapacityAboveLimit),
        (&[0x3f, 0xe1, 0x1f], QpackError::CapacityAboveLimit),
        // Insert with Name Reference, static and dynamic.
        (&[0xc0, 0x00], QpackError::InsertWithoutTable),
        (&[0x80, 0x00], QpackError::InsertWithoutTable),
        // Insert with Literal Name, plain and Huffman-coded.
        (&[0x41, b'a', 0x00], QpackError::InsertWithoutTable),
        (&[0x61, 0x1f, 0x00], QpackError::InsertWithoutTable),
        // Duplicate.
        (&[0x00], QpackError::DuplicateWithoutTable),
        (&[0x1f, 0x05], QpackError::DuplicateWithoutTable),
    ];
    for (bytes, error) in cases {
        let mut r = EncoderStreamReader::new();
        assert_eq!(r.feed(bytes), Err(error), "{bytes:02x?}");
        // Kept: the stream is not read past it.
        assert_eq!(r.feed(&[0x20]), Err(error));
        assert_eq!(r.feed(&[]), Err(error));
        // After fine instructions too.
        let mut r = EncoderStreamReader::new();
        assert_eq!(r.feed(&[0x20, 0x20]), Ok(()));
        assert_eq!(r.feed(bytes), Err(error), "{bytes:02x?}");
    }
}

#[test]
fn encoder_stream_split_at_every_byte() {
    // Three capacity-0 instructions, then RFC 9204 B.2's capacity of 220.
    let stream = [0x20, 0x20, 0x20, 0x3f, 0xbd, 0x01];
    for cut in 0..=stream.len() {
        let mut r = EncoderStreamReader::new();
        let first = r.feed(&stream[..cut]);
        let second = r.feed(&stream[cut..]);
        if cut > 3 {
            assert_eq!(first, Err(QpackError::CapacityAboveLimit), "cut at {cut}");
        } else {
            assert_eq!(first, Ok(()), "cut at {cut}");
        }
        assert_eq!(second, Err(QpackError::CapacityAboveLimit), "cut at {cut}");
    }
}

/// Stream Cancellations of `ids`, one after another.
fn cancellations(ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &id in ids {
        put_int(&mut out, 0x40, 6, id);
    }
    out
}

/// Stream IDs whose encodings take one to ten bytes.
const IDS: [u64; 9] = [0, 4, 62, 63, 64, 1000, 1 << 32, 1 << 50, varint::MAX];

#[test]
fn decoder_stream_cancellations_split_at_every_byte() {
    let stream = cancellations(&IDS);
    for cut in 0..=stream.len() {
        let mut r = DecoderStreamReader::new();
        let mut got = Vec::new();
        assert_eq!(r.feed(&stream[..cut], |id| got.push(id)), Ok(()));
        assert_eq!(r.feed(&stream[cut..], |id| got.push(id)), Ok(()));
        assert_eq!(got, IDS, "cut at {cut}");
    }
    // A byte at a time.
    let mut r = DecoderStreamReader::new();
    let mut got = Vec::new();
    for b in &stream {
        assert_eq!(r.feed(std::slice::from_ref(b), |id| got.push(id)), Ok(()));
    }
    assert_eq!(got, IDS);
}

#[test]
fn decoder_stream_instructions_that_may_not_come() {
    let cases: [(&[u8], QpackError); 5] = [
        // Section Acknowledgment.
        (&[0x80], QpackError::UnexpectedAcknowledgment),
        (&[0xff, 0x10], QpackError::UnexpectedAcknowledgment),
        // Insert Count Increment, of 0 and of 1.
        (&[0x00], QpackError::UnexpectedIncrement),
        (&[0x01], QpackError::UnexpectedIncrement),
        // A Stream Cancellation whose ID passes 2^62 - 1.
        (
            &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            QpackError::StreamIdOverflow,
        ),
    ];
    for (bytes, error) in cases {
        // After a complete cancellation, and with the cancellation's last byte in the same
        // read, so each error is found at an instruction boundary.
        let mut stream = cancellations(&[1000]);
        stream.extend_from_slice(bytes);
        for cut in 0..=stream.len() {
            let mut r = DecoderStreamReader::new();
            let mut got = Vec::new();
            let first = r.feed(&stream[..cut], |id| got.push(id));
            let second = r.feed(&stream[cut..], |id| got.push(id));
            assert_eq!(first.and(second), Err(error), "{bytes:02x?} cut at {cut}");
            assert_eq!(got, [1000], "{bytes:02x?} cut at {cut}");
            // Kept.
            assert_eq!(
                r.feed(&[0x48], |_| panic!("read past an error")),
                Err(error)
            );
        }
    }
}
