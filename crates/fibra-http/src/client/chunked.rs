//! Incremental decoder for chunked response bodies (RFC 9112 §7.1), lenient where a client
//! may be.
//!
//! The server side (`crate::chunked`) is strict because a request it misreads can smuggle
//! another one past it. A client reading a response has no such risk to guard against and
//! RFC 9112 lets it accept a little more; this decoder does, in these ways and no others:
//!
//! * **Bare LF line endings** (§2.2: "a recipient MAY recognize a single LF as a line
//!   terminator and ignore any preceding CR"): chunk-size lines, the line end after chunk
//!   data, trailer lines and the final empty line may each end in LF or CRLF. A bare CR (one
//!   not followed by LF) is still an error (§2.2 makes it invalid or a space; here it can only
//!   be a framing error).
//! * **Chunk extensions are skipped unread** (§7.1.1: "A recipient MUST ignore unrecognized
//!   chunk extensions", and this decoder recognizes none): after `;` anything but CR and LF
//!   is accepted up to the line end.
//! * **Whitespace after the size** (the `BWS` of §7.1.1's `chunk-ext` grammar, before `;`):
//!   spaces and tabs between the hex digits and `;` or the line end are ignored.
//! * **Leading zeros** in the size are allowed in any number; only a size that does not fit
//!   in 64 bits is rejected.
//! * **Trailer fields are skipped unread** (§7.1.2 lets a recipient discard them unless it
//!   knows them, and §6.5 makes them optional to process): each line is only checked for its
//!   length and line ending, so an obs-fold continuation line (§5.2) passes too.
//!
//! Still rejected: a size line that does not start with a hex digit (no sign, no `0x`, no
//! leading whitespace), other bytes after the digits, chunk data not followed by a line end,
//! and any line longer than [`MAX_LINE`] bytes. The decoder never buffers or copies: it
//! reports the ranges of the caller's input that hold body data.

use std::ops::Range;

use super::ParseError;

/// Longest chunk-size line (digits, whitespace and extensions) or trailer line accepted,
/// line ending excluded.
pub const MAX_LINE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a chunk-size line, or within its hex digits.
    Size,
    /// After the digits: whitespace before `;` or the line end.
    SizeSpace,
    /// In the chunk extensions, skipped up to the line end.
    Ext,
    /// A CR ended the size line; its LF is due.
    SizeLf,
    /// Inside a chunk's data.
    Data,
    /// After a chunk's data: CRLF or LF is due.
    DataEnd,
    /// A CR followed the data; its LF is due.
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer line.
    Trailer,
    /// A CR ended a trailer line; its LF is due.
    TrailerLf,
    /// A CR started the final empty line; its LF is due.
    EndLf,
    /// The body is complete.
    Done,
}

/// One [`ChunkedDecoder::decode`] step: how much input was used and where, inside it, the
/// body data is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Bytes of the input consumed (framing and data).
    pub consumed: usize,
    /// Range of body data inside the input (empty if none); always within `..consumed`.
    pub data: Range<usize>,
}

/// State of one chunked response body being decoded.
///
/// ```
/// use fibra_http::client::ChunkedDecoder;
///
/// let input = b"5\r\nhello\n6;ext\r\n world\r\n0\r\n\r\nrest";
/// let (mut decoder, mut body, mut at) = (ChunkedDecoder::new(), Vec::new(), 0);
/// while !decoder.is_done() {
///     let step = decoder.decode(&input[at..]).unwrap();
///     body.extend_from_slice(&input[at..][step.data]);
///     at += step.consumed;
/// }
/// assert_eq!(body, b"hello world");
/// assert_eq!(&input[at..], b"rest");
/// ```
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// The size being parsed (in `Size`) or the data bytes left of the chunk (in `Data`).
    size: u64,
    /// Bytes of the current size or trailer line so far.
    line: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body.
    pub const fn new() -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size,
            size: 0,
            line: 0,
        }
    }

    /// True once the last chunk and the trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from `src`, returning at the first run of body data, at the end of the body,
    /// or when `src` is used up. Without an error, some input is consumed unless `src` is
    /// empty or the body is already complete; bytes after the end of the body are left alone.
    /// After an error the stream cannot be trusted any more.
    pub fn decode(&mut self, src: &[u8]) -> Result<Decoded, ParseError> {
        const BAD_SIZE: ParseError = ParseError::Malformed("invalid chunk size");
        let mut i = 0;
        while i < src.len() {
            let b = src[i];
            match self.state {
                State::Data => {
                    let n = self.size.min((src.len() - i) as u64) as usize;
                    self.size -= n as u64;
                    if self.size == 0 {
                        self.state = State::DataEnd;
                    }
                    return Ok(Decoded {
                        consumed: i + n,
                        data: i..i + n,
                    });
                }
                State::Done => break,
                State::Size => match hex(b) {
                    Some(d) => {
                        if self.size >> 60 != 0 {
                            return Err(ParseError::Malformed("chunk size too large"));
                        }
                        self.size = self.size << 4 | u64::from(d);
                        self.grow_line()?;
                    }
                    None if self.line == 0 => return Err(BAD_SIZE),
                    None => self.after_size(b)?,
                },
                State::SizeSpace => self.after_size(b)?,
                State::Ext => match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => self.end_size_line(),
                    _ => self.grow_line()?,
                },
                State::SizeLf => {
                    if b != b'\n' {
                        return Err(ParseError::Malformed("bare CR in chunk size line"));
                    }
                    self.end_size_line();
                }
                State::DataEnd => match b {
                    b'\r' => self.state = State::DataLf,
                    b'\n' => self.state = State::Size,
                    _ => return Err(ParseError::Malformed("chunk data not followed by CRLF")),
                },
                State::DataLf => {
                    if b != b'\n' {
                        return Err(ParseError::Malformed("chunk data not followed by CRLF"));
                    }
                    self.state = State::Size;
                }
                State::TrailerStart => match b {
                    b'\r' => self.state = State::EndLf,
                    b'\n' => return Ok(self.finish(i)),
                    _ => {
                        self.line = 0;
                        self.state = State::Trailer;
                        self.grow_line()?;
                    }
                },
                State::Trailer => match b {
                    b'\r' => self.state = State::TrailerLf,
                    b'\n' => self.state = State::TrailerStart,
                    _ => self.grow_line()?,
                },
                State::TrailerLf => {
                    if b != b'\n' {
                        return Err(ParseError::Malformed("bare CR in trailer line"));
                    }
                    self.state = State::TrailerStart;
                }
                State::EndLf => {
                    if b != b'\n' {
                        return Err(ParseError::Malformed("invalid end of chunked body"));
                    }
                    return Ok(self.finish(i));
                }
            }
            i += 1;
        }
        Ok(Decoded {
            consumed: i,
            data: 0..0,
        })
    }

    /// Byte `b` after at least one size digit: whitespace, `;` or the line end.
    fn after_size(&mut self, b: u8) -> Result<(), ParseError> {
        match b {
            b' ' | b'\t' => self.state = State::SizeSpace,
            b';' => self.state = State::Ext,
            b'\r' => {
                self.state = State::SizeLf;
                return Ok(());
            }
            b'\n' => {
                self.end_size_line();
                return Ok(());
            }
            _ => return Err(ParseError::Malformed("invalid chunk size")),
        }
        self.grow_line()
    }

    /// Counts one more byte of the current line, failing past [`MAX_LINE`].
    fn grow_line(&mut self) -> Result<(), ParseError> {
        self.line += 1;
        if self.line > MAX_LINE {
            return Err(ParseError::Malformed("chunk size or trailer line too long"));
        }
        Ok(())
    }

    /// The size line ended: data follows, or the trailer section for the last chunk.
    fn end_size_line(&mut self) {
        self.line = 0;
        self.state = if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data
        };
    }

    /// The final line end is at `i`.
    fn finish(&mut self, i: usize) -> Decoded {
        self.state = State::Done;
        Decoded {
            consumed: i + 1,
            data: 0..0,
        }
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

    /// Decodes `input` fed in pieces of `step` bytes: the body and the bytes used, or the
    /// error (`None` if the input ends first). Checks the data ranges on the way.
    fn decode_all(input: &[u8], step: usize) -> Option<Result<(Vec<u8>, usize), ParseError>> {
        let mut d = ChunkedDecoder::new();
        let (mut out, mut pos, mut avail) = (Vec::new(), 0, 0);
        while !d.is_done() {
            if pos == avail {
                if avail == input.len() {
                    return None;
                }
                avail = (avail + step).min(input.len());
            }
            let r = match d.decode(&input[pos..avail]) {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            assert!(r.data.end <= r.consumed && r.consumed <= avail - pos);
            assert!(r.consumed > 0, "no progress");
            out.extend_from_slice(&input[pos..avail][r.data]);
            pos += r.consumed;
        }
        assert_eq!(d.decode(b"more").unwrap().consumed, 0, "used past the end");
        Some(Ok((out, pos)))
    }

    #[test]
    fn decodes_strict_and_lenient_framing_in_any_split() {
        let input = b"5\r\nhello\r\n1;a=b\n \nA \t\r\n0123456789\n00\r\nX-T: 1\n \tfold\r\n\nNEXT";
        for step in 1..input.len() {
            let (body, used) = decode_all(input, step).unwrap().unwrap();
            assert_eq!(body, b"hello 0123456789");
            assert_eq!(used, input.len() - 4);
        }
    }

    #[test]
    fn data_ranges_point_into_the_input() {
        let mut d = ChunkedDecoder::new();
        let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let r = d.decode(input).unwrap();
        assert_eq!((r.consumed, r.data.clone()), (6, 3..6));
        let r = d.decode(&input[6..]).unwrap();
        assert_eq!((r.consumed, r.data.clone()), (7, 5..7));
        assert_eq!(&input[6..][r.data], b"de");
        let r = d.decode(&input[13..]).unwrap();
        assert_eq!((r.consumed, r.data, d.is_done()), (7, 0..0, true));
        // A chunk split across reads is handed out piece by piece.
        let mut d = ChunkedDecoder::new();
        assert_eq!(d.decode(b"a\r\n0123").unwrap().data, 3..7);
        assert_eq!(d.decode(b"456789\r\n").unwrap().data, 0..6);
    }

    #[test]
    fn rejects_bad_framing() {
        for input in [
            &b"+5\r\nhello\r\n0\r\n\r\n"[..],
            b"-5\r\nhello\r\n0\r\n\r\n",
            b" 5\r\nhello\r\n0\r\n\r\n",
            b"0x5\r\nhello\r\n0\r\n\r\n",
            b"5 x\r\nhello\r\n0\r\n\r\n",
            b"g\r\n",
            b"\r\n",
            b"\n",
            b"5\rhello\r\n0\r\n\r\n",
            b"5\r\nhelloXX0\r\n\r\n",
            b"5\r\nhello\r0\r\n\r\n",
            b"10000000000000000\r\n",
            b"0\r\nX: 1\rY\r\n\r\n",
            b"0\r\n\rX",
        ] {
            assert!(
                matches!(decode_all(input, 64), Some(Err(ParseError::Malformed(_)))),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        // The largest size that fits is accepted syntactically.
        assert_eq!(decode_all(b"ffffffffffffffff\r\nab", 64), None);
    }

    #[test]
    fn limits_lines() {
        let mut ext = b"1;".to_vec();
        ext.resize(MAX_LINE, b'x');
        ext.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
        assert!(decode_all(&ext, 100).unwrap().is_ok());
        let mut ext = b"1;".to_vec();
        ext.resize(MAX_LINE + 1, b'x');
        assert!(decode_all(&ext, 100).unwrap().is_err());
        let mut trailer = b"0\r\n".to_vec();
        trailer.resize(3 + MAX_LINE + 1, b'x');
        assert!(decode_all(&trailer, 100).unwrap().is_err());
        let mut trailer = b"0\r\n".to_vec();
        trailer.resize(3 + MAX_LINE, b'x');
        trailer.extend_from_slice(b"\r\n\r\n");
        assert!(decode_all(&trailer, 100).unwrap().is_ok());
    }
}
