//! HTTP/3's error codes (RFC 9114 §8.1) and QPACK's (RFC 9204 §6): what a connection is
//! closed with (CONNECTION_CLOSE) or a stream reset with (RESET_STREAM, STOP_SENDING).

use std::fmt;

/// An HTTP/3 or QPACK error code. Which ones end the connection and which only a stream is
/// the caller's choice, following the section of RFC 9114 or 9204 that names the error; the
/// codecs here return the code the RFC gives for what they found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum H3Error {
    /// H3_NO_ERROR: the connection or stream closes with nothing to signal.
    NoError,
    /// H3_GENERAL_PROTOCOL_ERROR: a violation no more specific code covers.
    GeneralProtocolError,
    /// H3_INTERNAL_ERROR: an error in this HTTP stack.
    InternalError,
    /// H3_STREAM_CREATION_ERROR: the peer created a stream we do not accept (a second
    /// control or QPACK stream, a push stream from a client).
    StreamCreationError,
    /// H3_CLOSED_CRITICAL_STREAM: a control or QPACK stream was closed or reset.
    ClosedCriticalStream,
    /// H3_FRAME_UNEXPECTED: a frame not allowed in this state or on this stream, or of a
    /// type HTTP/2 had and HTTP/3 reserves.
    FrameUnexpected,
    /// H3_FRAME_ERROR: a frame whose layout or size is wrong (a payload longer or shorter
    /// than its fields).
    FrameError,
    /// H3_EXCESSIVE_LOAD: the peer is causing excessive load (a frame larger than we buffer).
    ExcessiveLoad,
    /// H3_ID_ERROR: a stream or push ID used incorrectly.
    IdError,
    /// H3_SETTINGS_ERROR: an error in a SETTINGS payload.
    SettingsError,
    /// H3_MISSING_SETTINGS: the control stream did not start with SETTINGS.
    MissingSettings,
    /// H3_REQUEST_REJECTED: a request refused before any application processing.
    RequestRejected,
    /// H3_REQUEST_CANCELLED: a request or its response cancelled.
    RequestCancelled,
    /// H3_REQUEST_INCOMPLETE: a request stream ended without a complete request.
    RequestIncomplete,
    /// H3_MESSAGE_ERROR: a malformed HTTP message.
    MessageError,
    /// H3_CONNECT_ERROR: a CONNECT tunnel's TCP connection was reset or closed abnormally.
    ConnectError,
    /// H3_VERSION_FALLBACK: the request cannot be served over HTTP/3; retry over HTTP/1.1.
    VersionFallback,
    /// QPACK_DECOMPRESSION_FAILED: an encoded field section could not be decoded.
    QpackDecompressionFailed,
    /// QPACK_ENCODER_STREAM_ERROR: an instruction on the peer's encoder stream could not
    /// be processed.
    QpackEncoderStreamError,
    /// QPACK_DECODER_STREAM_ERROR: an instruction on the peer's decoder stream could not
    /// be processed.
    QpackDecoderStreamError,
}

/// Every code, in the order of their values (tests, and a receiver mapping codes back).
pub(crate) const ALL: [H3Error; 20] = [
    H3Error::NoError,
    H3Error::GeneralProtocolError,
    H3Error::InternalError,
    H3Error::StreamCreationError,
    H3Error::ClosedCriticalStream,
    H3Error::FrameUnexpected,
    H3Error::FrameError,
    H3Error::ExcessiveLoad,
    H3Error::IdError,
    H3Error::SettingsError,
    H3Error::MissingSettings,
    H3Error::RequestRejected,
    H3Error::RequestCancelled,
    H3Error::RequestIncomplete,
    H3Error::MessageError,
    H3Error::ConnectError,
    H3Error::VersionFallback,
    H3Error::QpackDecompressionFailed,
    H3Error::QpackEncoderStreamError,
    H3Error::QpackDecoderStreamError,
];

impl H3Error {
    /// The code on the wire.
    pub(crate) fn code(self) -> u64 {
        match self {
            H3Error::NoError => 0x100,
            H3Error::GeneralProtocolError => 0x101,
            H3Error::InternalError => 0x102,
            H3Error::StreamCreationError => 0x103,
            H3Error::ClosedCriticalStream => 0x104,
            H3Error::FrameUnexpected => 0x105,
            H3Error::FrameError => 0x106,
            H3Error::ExcessiveLoad => 0x107,
            H3Error::IdError => 0x108,
            H3Error::SettingsError => 0x109,
            H3Error::MissingSettings => 0x10a,
            H3Error::RequestRejected => 0x10b,
            H3Error::RequestCancelled => 0x10c,
            H3Error::RequestIncomplete => 0x10d,
            H3Error::MessageError => 0x10e,
            H3Error::ConnectError => 0x10f,
            H3Error::VersionFallback => 0x110,
            H3Error::QpackDecompressionFailed => 0x200,
            H3Error::QpackEncoderStreamError => 0x201,
            H3Error::QpackDecoderStreamError => 0x202,
        }
    }

    /// The code's name as the RFCs write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            H3Error::NoError => "H3_NO_ERROR",
            H3Error::GeneralProtocolError => "H3_GENERAL_PROTOCOL_ERROR",
            H3Error::InternalError => "H3_INTERNAL_ERROR",
            H3Error::StreamCreationError => "H3_STREAM_CREATION_ERROR",
            H3Error::ClosedCriticalStream => "H3_CLOSED_CRITICAL_STREAM",
            H3Error::FrameUnexpected => "H3_FRAME_UNEXPECTED",
            H3Error::FrameError => "H3_FRAME_ERROR",
            H3Error::ExcessiveLoad => "H3_EXCESSIVE_LOAD",
            H3Error::IdError => "H3_ID_ERROR",
            H3Error::SettingsError => "H3_SETTINGS_ERROR",
            H3Error::MissingSettings => "H3_MISSING_SETTINGS",
            H3Error::RequestRejected => "H3_REQUEST_REJECTED",
            H3Error::RequestCancelled => "H3_REQUEST_CANCELLED",
            H3Error::RequestIncomplete => "H3_REQUEST_INCOMPLETE",
            H3Error::MessageError => "H3_MESSAGE_ERROR",
            H3Error::ConnectError => "H3_CONNECT_ERROR",
            H3Error::VersionFallback => "H3_VERSION_FALLBACK",
            H3Error::QpackDecompressionFailed => "QPACK_DECOMPRESSION_FAILED",
            H3Error::QpackEncoderStreamError => "QPACK_ENCODER_STREAM_ERROR",
            H3Error::QpackDecoderStreamError => "QPACK_DECODER_STREAM_ERROR",
        }
    }

    /// The error a received code stands for. An unknown code (a reserved one included)
    /// is `None`, which RFC 9114 §8 says to treat as H3_NO_ERROR.
    pub(crate) fn from_code(code: u64) -> Option<H3Error> {
        ALL.into_iter().find(|e| e.code() == code)
    }
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#x})", self.name(), self.code())
    }
}

impl std::error::Error for H3Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_rfc9114_and_rfc9204() {
        // RFC 9114 §8.1: 0x100 to 0x110 in order; RFC 9204 §6: 0x200 to 0x202.
        let want: Vec<u64> = (0x100..=0x110).chain(0x200..=0x202).collect();
        let got: Vec<u64> = ALL.iter().map(|e| e.code()).collect();
        assert_eq!(got, want);
        assert_eq!(H3Error::ExcessiveLoad.code(), 0x107);
        assert_eq!(H3Error::QpackDecoderStreamError.code(), 0x202);
        assert_eq!(
            H3Error::FrameUnexpected.to_string(),
            "H3_FRAME_UNEXPECTED (0x105)"
        );
    }

    #[test]
    fn codes_map_back() {
        for e in ALL {
            assert_eq!(H3Error::from_code(e.code()), Some(e));
        }
        assert_eq!(H3Error::from_code(0x21), None);
        assert_eq!(H3Error::from_code(0x111), None);
    }
}
