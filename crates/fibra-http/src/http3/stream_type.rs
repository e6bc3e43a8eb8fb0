//! Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2): the variable-length integer
//! that opens every unidirectional stream and says what the rest of it is.

use super::error::H3Error;
use super::varint;

/// Stream type codes.
pub(crate) mod code {
    /// The control stream: HTTP/3 frames, SETTINGS first (RFC 9114 §6.2.1).
    pub(crate) const CONTROL: u64 = 0x00;
    /// A push stream: a push ID, then a pushed response's frames (RFC 9114 §6.2.2).
    pub(crate) const PUSH: u64 = 0x01;
    /// QPACK's encoder stream: encoder instructions (RFC 9204 §4.2).
    pub(crate) const QPACK_ENCODER: u64 = 0x02;
    /// QPACK's decoder stream: decoder instructions (RFC 9204 §4.2).
    pub(crate) const QPACK_DECODER: u64 = 0x03;
}

/// What a unidirectional stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamType {
    /// The peer's control stream.
    Control,
    /// A push stream (only a server may open one).
    Push,
    /// The peer's QPACK encoder stream.
    QpackEncoder,
    /// The peer's QPACK decoder stream.
    QpackDecoder,
    /// A reserved type (`0x1f * N + 0x21`, grease) or one no extension we support defines:
    /// the receiver reads and discards the stream, or stops it with
    /// H3_STREAM_CREATION_ERROR, and never treats it as a connection error (§6.2).
    Unknown(u64),
}

impl StreamType {
    /// The type of code `code`.
    pub(crate) fn of(code: u64) -> StreamType {
        match code {
            code::CONTROL => StreamType::Control,
            code::PUSH => StreamType::Push,
            code::QPACK_ENCODER => StreamType::QpackEncoder,
            code::QPACK_DECODER => StreamType::QpackDecoder,
            c => StreamType::Unknown(c),
        }
    }

    /// The code on the wire.
    pub(crate) fn code(self) -> u64 {
        match self {
            StreamType::Control => code::CONTROL,
            StreamType::Push => code::PUSH,
            StreamType::QpackEncoder => code::QPACK_ENCODER,
            StreamType::QpackDecoder => code::QPACK_DECODER,
            StreamType::Unknown(c) => c,
        }
    }

    /// A server's check of a stream a client opened: a push stream is
    /// H3_STREAM_CREATION_ERROR (§6.2.2). A second control, encoder or decoder stream is
    /// too, but that needs the connection's state.
    pub(crate) fn check_from_client(self) -> Result<(), H3Error> {
        match self {
            StreamType::Push => Err(H3Error::StreamCreationError),
            _ => Ok(()),
        }
    }
}

/// Reads the stream type at the start of a unidirectional stream: the type and the bytes it
/// took, or `None` until the whole integer has arrived.
pub(crate) fn parse(buf: &[u8]) -> Option<(StreamType, usize)> {
    varint::decode(buf).map(|(c, n)| (StreamType::of(c), n))
}

/// Appends the stream type that opens a unidirectional stream of ours.
pub(crate) fn put(out: &mut Vec<u8>, ty: StreamType) {
    varint::put(out, ty.code());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_round_trip() {
        for ty in [
            StreamType::Control,
            StreamType::Push,
            StreamType::QpackEncoder,
            StreamType::QpackDecoder,
            StreamType::Unknown(varint::reserved(3)),
            StreamType::Unknown(0x54),
        ] {
            let mut out = Vec::new();
            put(&mut out, ty);
            assert_eq!(parse(&out), Some((ty, out.len())));
            // Split anywhere, the type waits for the rest.
            for cut in 0..out.len() {
                assert_eq!(parse(&out[..cut]), None);
            }
        }
        assert_eq!(parse(&[0x02, 0xff]), Some((StreamType::QpackEncoder, 1)));
        // A two-byte encoding of 0 is still the control stream.
        assert_eq!(parse(&[0x40, 0x00]), Some((StreamType::Control, 2)));
    }

    #[test]
    fn a_client_push_stream_is_refused() {
        assert_eq!(
            StreamType::Push.check_from_client(),
            Err(H3Error::StreamCreationError)
        );
        for ty in [
            StreamType::Control,
            StreamType::QpackEncoder,
            StreamType::QpackDecoder,
            StreamType::Unknown(0x21),
        ] {
            assert_eq!(ty.check_from_client(), Ok(()));
        }
    }
}
