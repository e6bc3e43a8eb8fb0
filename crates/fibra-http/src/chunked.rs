//! Incremental decoder for `Transfer-Encoding: chunked` (RFC 9112 §7.1), strict.
//!
//! Size lines are `1*HEXDIG [ BWS ";" ext ] CRLF`: no signs, no `0x`, no bare LF, whitespace
//! only before the `;` of an extension (RFC 9112's BWS), at most 16 significant hex digits
//! (leading zeros do not count; a size line is bounded like an extension). Chunk data must be followed by exactly CRLF. Trailer fields are
//! checked (token name, colon, clean value, CRLF) and kept, bounded by the trailer limit, for
//! [`ChunkedDecoder::take_trailers`]. The decoder never buffers data: it points at data bytes
//! inside the caller's buffer.

use std::ops::Range;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::error::ProtocolError;
use crate::parse::is_token;

/// Longest chunk-extension text accepted on one size line.
const MAX_EXT_BYTES: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size,
    /// Whitespace after the size: only a `;` (an extension) may follow.
    SizeBws,
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerName,
    TrailerValue,
    TrailerLf,
    EndLf,
    Done,
}

/// One step of decoding: how much input was used and where, inside it, the data bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Bytes of the input consumed (framing and data).
    pub consumed: usize,
    /// Range of body data inside the input (empty if none); always within `..consumed`.
    pub data: Range<usize>,
}

/// State of one chunked body being decoded.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Bytes left in the current chunk (in `Data`) or the size being parsed (in `Size`).
    size: u64,
    /// Significant digits of the size so far (leading zeros are not).
    digits: u8,
    /// Leading zeros of the size so far (bounded like an extension).
    zeros: u32,
    /// Extension bytes on the current size line (bounded by `MAX_EXT_BYTES`).
    ext_bytes: u32,
    trailer_bytes: usize,
    /// The trailer section's lines as received (without the final empty line); boxed, and
    /// the counters above narrow, so that the decoder is no larger than before it kept them
    /// (it sits inside every connection's state).
    #[allow(clippy::box_collection)] // one word in the connection's state rather than three
    trailer: Option<Box<Vec<u8>>>,
    total: u64,
    max_total: u64,
    max_trailer: usize,
}

impl ChunkedDecoder {
    /// Lowers the most data bytes accepted to `max` (in all; 413 beyond).
    pub(crate) fn limit(&mut self, max: u64) {
        self.max_total = self.max_total.min(max);
    }

    /// A decoder for a body of at most `max_total` data bytes (413 beyond) with a trailer
    /// section of at most `max_trailer` bytes (431 beyond).
    pub fn new(max_total: u64, max_trailer: usize) -> Self {
        ChunkedDecoder {
            state: State::Size,
            size: 0,
            digits: 0,
            zeros: 0,
            ext_bytes: 0,
            trailer_bytes: 0,
            trailer: None,
            total: 0,
            max_total,
            max_trailer,
        }
    }

    /// True once the last chunk and the trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The trailer fields received after the last chunk, once the body is done (`None`
    /// if there were none, or on a second call).
    pub fn take_trailers(&mut self) -> Option<HeaderMap> {
        if !self.is_done() {
            return None;
        }
        let text = self.trailer.take()?;
        let mut map = HeaderMap::new();
        // Each line was checked as `token ":" value CRLF` while it was decoded.
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let value = line[colon + 1..].trim_ascii();
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(&line[..colon]),
                HeaderValue::from_bytes(value),
            ) {
                map.append(name, value);
            }
        }
        Some(map)
    }

    /// Data bytes decoded so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Decodes from `src`, returning at the first run of data (at most `max_data` bytes), at
    /// the end of the body, or when `src` is used up.
    pub fn decode(&mut self, src: &[u8], max_data: usize) -> Result<Decoded, ProtocolError> {
        let bad = ProtocolError::bad;
        let mut i = 0;
        while i < src.len() {
            let b = src[i];
            match self.state {
                State::Data => {
                    let n = (self.size.min(max_data as u64) as usize).min(src.len() - i);
                    self.size -= n as u64;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    return Ok(Decoded {
                        consumed: i + n,
                        data: i..i + n,
                    });
                }
                State::Done => break,
                State::Size => match hex(b) {
                    Some(0) if self.digits == 0 => {
                        self.zeros += 1;
                        if self.zeros > MAX_EXT_BYTES {
                            return Err(bad("chunk size too long"));
                        }
                    }
                    Some(d) => {
                        if self.digits == 16 {
                            return Err(bad("chunk size too long"));
                        }
                        self.digits += 1;
                        self.size = self.size << 4 | u64::from(d);
                    }
                    None if self.digits == 0 && self.zeros == 0 => {
                        return Err(bad("invalid chunk size"))
                    }
                    None if b == b';' => {
                        self.ext_bytes = 0;
                        self.state = State::Ext;
                    }
                    None if b == b' ' || b == b'\t' => {
                        self.ext_bytes = 1;
                        self.state = State::SizeBws;
                    }
                    None if b == b'\r' => self.state = State::SizeLf,
                    None => return Err(bad("invalid chunk size")),
                },
                State::SizeBws => {
                    self.ext_bytes += 1;
                    if self.ext_bytes > MAX_EXT_BYTES {
                        return Err(bad("chunk extension too long"));
                    }
                    match b {
                        b' ' | b'\t' => {}
                        b';' => {
                            self.ext_bytes = 0;
                            self.state = State::Ext;
                        }
                        _ => return Err(bad("invalid chunk size")),
                    }
                }
                State::Ext => {
                    self.ext_bytes += 1;
                    if self.ext_bytes > MAX_EXT_BYTES {
                        return Err(bad("chunk extension too long"));
                    }
                    match b {
                        b'\r' => self.state = State::SizeLf,
                        b'\t' | 0x20..=0x7e | 0x80..=0xff => {}
                        _ => return Err(bad("invalid chunk extension")),
                    }
                }
                State::SizeLf => {
                    if b != b'\n' {
                        return Err(bad("bare CR in chunk size line"));
                    }
                    let size = std::mem::take(&mut self.size);
                    self.digits = 0;
                    self.zeros = 0;
                    if size == 0 {
                        self.state = State::TrailerStart;
                    } else {
                        self.total = self.total.saturating_add(size);
                        if self.total > self.max_total {
                            return Err(ProtocolError::new(
                                StatusCode::PAYLOAD_TOO_LARGE,
                                "body too large",
                            ));
                        }
                        self.size = size;
                        self.state = State::Data;
                    }
                }
                State::DataCr => {
                    if b != b'\r' {
                        return Err(bad("chunk data not followed by CRLF"));
                    }
                    self.state = State::DataLf;
                }
                State::DataLf => {
                    if b != b'\n' {
                        return Err(bad("chunk data not followed by CRLF"));
                    }
                    self.state = State::Size;
                }
                State::TrailerStart
                | State::TrailerName
                | State::TrailerValue
                | State::TrailerLf => {
                    self.trailer_bytes += 1;
                    if self.trailer_bytes > self.max_trailer {
                        return Err(ProtocolError::new(
                            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                            "trailer section too large",
                        ));
                    }
                    self.state = match (self.state, b) {
                        (State::TrailerStart, b'\r') => State::EndLf,
                        (State::TrailerStart | State::TrailerName, b) if is_token(b) => {
                            State::TrailerName
                        }
                        (State::TrailerName, b':') => State::TrailerValue,
                        (State::TrailerValue, b'\r') => State::TrailerLf,
                        (State::TrailerValue, b'\t' | 0x20..=0x7e | 0x80..=0xff) => {
                            State::TrailerValue
                        }
                        (State::TrailerLf, b'\n') => State::TrailerStart,
                        _ => return Err(bad("invalid trailer field")),
                    };
                    if self.state != State::EndLf {
                        self.trailer.get_or_insert_with(Box::default).push(b);
                    }
                }
                State::EndLf => {
                    if b != b'\n' {
                        return Err(bad("invalid end of chunked body"));
                    }
                    self.state = State::Done;
                    return Ok(Decoded {
                        consumed: i + 1,
                        data: 0..0,
                    });
                }
            }
            i += 1;
        }
        Ok(Decoded {
            consumed: i,
            data: 0..0,
        })
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes; returns the body or the error status.
    fn decode_all(input: &[u8], step: usize) -> Result<(Vec<u8>, usize), u16> {
        let mut d = ChunkedDecoder::new(1 << 20, 1024);
        let mut out = Vec::new();
        let mut pos = 0;
        let mut avail = 0;
        while !d.is_done() {
            if pos == avail {
                if avail == input.len() {
                    return Err(0); // incomplete
                }
                avail = (avail + step).min(input.len());
            }
            let r = d
                .decode(&input[pos..avail], 3)
                .map_err(|e| e.status().as_u16())?;
            out.extend_from_slice(&input[pos..avail][r.data]);
            pos += r.consumed;
        }
        Ok((out, pos))
    }

    #[test]
    fn decodes_in_any_split() {
        let input = b"5\r\nhello\r\n1;a=b\r\n \r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        for step in 1..input.len() {
            let (body, used) = decode_all(input, step).unwrap();
            assert_eq!(body, b"hello 0123456789");
            assert_eq!(used, input.len() - 4);
        }
    }

    #[test]
    fn rejects_bad_framing() {
        let table: &[(&[u8], u16)] = &[
            (b"+5\r\nhello\r\n0\r\n\r\n", 400),
            (b"-5\r\nhello\r\n0\r\n\r\n", 400),
            (b" 5\r\nhello\r\n0\r\n\r\n", 400),
            (b"5 \r\nhello\r\n0\r\n\r\n", 400),
            (b"0x5\r\nhello\r\n0\r\n\r\n", 400),
            (b"g\r\n", 400),
            (b"\r\n", 400),
            (b"5\nhello\r\n0\r\n\r\n", 400),
            (b"5\r\nhelloXX0\r\n\r\n", 400),
            (b"5\r\nhello\n0\r\n\r\n", 400),
            (b"11111111111111111\r\nx\r\n0\r\n\r\n", 400),
            (b"5 x\r\nhello\r\n0\r\n\r\n", 400),
            (b"1;a\x00\r\nx\r\n0\r\n\r\n", 400),
            (b"0\r\nbad trailer\r\n\r\n", 400),
            (b"0\r\n\r\r", 400),
            (b"ffffffff\r\n", 413),
        ];
        for (input, want) in table {
            assert_eq!(
                decode_all(input, 64).map(|_| ()),
                Err(*want),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        // 16 digits is the maximum and is accepted syntactically
        assert!(decode_all(b"0000000000000001\r\nx\r\n0\r\n\r\n", 64).is_ok());
        // Leading zeros do not count towards the 16 digits.
        let (body, _) = decode_all(
            b"000000000000000000001\r\nx\r\n00000000000000000\r\n\r\n",
            64,
        )
        .expect("leading zeros");
        assert_eq!(body, b"x");
        // Whitespace before an extension's `;` (BWS) is accepted.
        let (body, _) = decode_all(b"1 \t;a=b\r\nx\r\n0 ;z\r\n\r\n", 64).expect("BWS");
        assert_eq!(body, b"x");
    }

    #[test]
    fn keeping_trailers_does_not_grow_the_decoder() {
        assert!(std::mem::size_of::<ChunkedDecoder>() <= 64);
    }

    #[test]
    fn keeps_trailers() {
        let mut d = ChunkedDecoder::new(100, 1024);
        let input = b"1\r\nx\r\n0\r\nX-Sum: 1 2 \r\nx-sum:3\r\nEtag:\t\"e\"\r\n\r\n";
        for b in input.chunks(1) {
            d.decode(b, 100).unwrap();
        }
        assert!(d.is_done());
        let t = d.take_trailers().expect("trailers");
        let sums: Vec<_> = t.get_all("x-sum").iter().collect();
        assert_eq!(sums, ["1 2", "3"]);
        assert_eq!(t["etag"], "\"e\"");
        assert!(d.take_trailers().is_none(), "taken once");
        let mut plain = ChunkedDecoder::new(100, 1024);
        plain.decode(b"0\r\n\r\n", 100).unwrap();
        assert!(plain.is_done() && plain.take_trailers().is_none());
    }

    #[test]
    fn limits_trailers() {
        let mut d = ChunkedDecoder::new(100, 8);
        assert_eq!(
            d.decode(b"0\r\nX-Long: 123456\r\n\r\n", 100)
                .unwrap_err()
                .status()
                .as_u16(),
            431
        );
    }
}
