//! The client's QPACK encoder and decoder streams (RFC 9204 §4.2), read only to hold the
//! client to the capacity of 0 we allow: with no dynamic table there is nothing to apply,
//! only instructions that must not come. Both readers take the bytes as they arrive, split
//! anywhere, and keep the first error (the connection closes with it).
//!
//! Encoder stream (§4.3), by first bits: `001` Set Dynamic Table Capacity, `1` Insert with
//! Name Reference, `01` Insert with Literal Name, `000` Duplicate. Only a capacity of 0
//! may come, and its encoding is one byte, `0x20` (a 5-bit prefix of 0; a larger prefix is
//! already a larger capacity), so every other byte is the error its bits name.
//!
//! Decoder stream (§4.4): `1` Section Acknowledgment, `01` Stream Cancellation, `00` Insert
//! Count Increment. We never send a section that needs acknowledging nor insert anything,
//! so only Stream Cancellation may come; its stream ID (a 6-bit prefix integer) may span
//! several bytes and reads.

use super::primitive::Continuation;
use super::QpackError;

/// Checks the client's encoder stream (after its stream type).
#[derive(Debug, Default)]
pub(crate) struct EncoderStreamReader {
    /// The first error, kept: the stream is not read past it.
    failed: Option<QpackError>,
}

impl EncoderStreamReader {
    /// A reader at the start of the stream's instructions.
    pub(crate) fn new() -> EncoderStreamReader {
        EncoderStreamReader::default()
    }

    /// Reads the next bytes of the stream. Every error is a connection error
    /// QPACK_ENCODER_STREAM_ERROR; once one is returned, every later call returns it again.
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<(), QpackError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        for &b in input {
            let error = match b {
                // Set Dynamic Table Capacity = 0.
                0x20 => continue,
                // 1: with name reference; 01: with literal name.
                _ if b & 0xc0 != 0 => QpackError::InsertWithoutTable,
                _ if b & 0x20 != 0 => QpackError::CapacityAboveLimit,
                _ => QpackError::DuplicateWithoutTable,
            };
            self.failed = Some(error);
            return Err(error);
        }
        Ok(())
    }
}

/// Checks the client's decoder stream (after its stream type).
#[derive(Debug, Default)]
pub(crate) struct DecoderStreamReader {
    /// The rest of a Stream Cancellation's stream ID, when the last byte read was inside
    /// one.
    cancelling: Option<Continuation>,
    /// The first error, kept: the stream is not read past it.
    failed: Option<QpackError>,
}

impl DecoderStreamReader {
    /// A reader at the start of the stream's instructions.
    pub(crate) fn new() -> DecoderStreamReader {
        DecoderStreamReader::default()
    }

    /// Reads the next bytes of the stream, calling `cancelled` with the stream ID of each
    /// complete Stream Cancellation (with no dynamic table our encoder has nothing to
    /// release; a caller may log it). Every error is a connection error
    /// QPACK_DECODER_STREAM_ERROR; once one is returned, every later call returns it again.
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        mut cancelled: impl FnMut(u64),
    ) -> Result<(), QpackError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let result = self.read(input, &mut cancelled);
        if let Err(e) = result {
            self.failed = Some(e);
        }
        result
    }

    fn read(&mut self, input: &[u8], cancelled: &mut impl FnMut(u64)) -> Result<(), QpackError> {
        for &b in input {
            if let Some(rest) = &mut self.cancelling {
                let id = rest.push(b).map_err(|_| QpackError::StreamIdOverflow)?;
                if let Some(id) = id {
                    self.cancelling = None;
                    cancelled(id);
                }
            } else if b & 0x80 != 0 {
                return Err(QpackError::UnexpectedAcknowledgment);
            } else if b & 0x40 != 0 {
                // Stream Cancellation: a 6-bit prefix, continued when all ones.
                let prefix = b & 0x3f;
                if prefix < 0x3f {
                    cancelled(u64::from(prefix));
                } else {
                    self.cancelling = Some(Continuation::new(prefix));
                }
            } else {
                return Err(QpackError::UnexpectedIncrement);
            }
        }
        Ok(())
    }
}
