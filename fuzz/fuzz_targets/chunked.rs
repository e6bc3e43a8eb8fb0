//! Fuzzes `fibra_http::chunked::ChunkedDecoder` against a small reference decoder.
//!
//! Input: two bytes choosing the feeding pattern (piece size and `max_data`), then the body.
//! The incremental decoder, fed in pieces, must agree with a whole-buffer reference written
//! straight from RFC 9112 §7.1 (as strict as fibra: hex sizes of 1..=16 significant digits after
//! at most 4096 leading zeros, whitespace only before an extension's `;`, extensions of
//! visible bytes, CRLF everywhere, token-named trailer fields): same data, same end position,
//! same accept/reject, and the same trailer fields (names lowercased, values trimmed, in any
//! order). Limits are set high enough that they never trigger here (the unit tests
//! cover 413/431), except the 16-digit size rule which both sides share.
#![no_main]

use fibra_http::chunked::ChunkedDecoder;
use libfuzzer_sys::fuzz_target;

/// Outcome of decoding: the body and the bytes used, `Err(())` for a rejection, or `None`
/// when the input ended before the body did.
type Outcome = Option<Result<(Vec<u8>, usize), ()>>;

/// Trailer fields as (lowercased name, value without surrounding whitespace), sorted.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

const MAX_TOTAL: u64 = u64::MAX;
const MAX_TRAILER: usize = 1 << 20;

fn incremental(input: &[u8], piece: usize, max_data: usize, trailers: &mut Fields) -> Outcome {
    let mut d = ChunkedDecoder::new(MAX_TOTAL, MAX_TRAILER);
    let mut out = Vec::new();
    let (mut pos, mut avail) = (0, 0);
    // Each step either consumes bytes, returns data, or makes more input available.
    for _ in 0..(input.len() * 4 + 16) {
        if d.is_done() {
            for (name, value) in d.take_trailers().iter().flatten() {
                trailers.push((name.as_str().as_bytes().to_vec(), value.as_bytes().to_vec()));
            }
            trailers.sort();
            return Some(Ok((out, pos)));
        }
        if pos == avail {
            if avail == input.len() {
                return None;
            }
            avail = (avail + piece).min(input.len());
        }
        let r = match d.decode(&input[pos..avail], max_data) {
            Ok(r) => r,
            Err(_) => return Some(Err(())),
        };
        assert!(r.consumed <= avail - pos, "consumed past the input");
        assert!(r.data.end <= r.consumed, "data outside consumed bytes");
        assert!(r.data.len() <= max_data, "more data than asked for");
        assert!(
            r.consumed > 0 || d.is_done(),
            "no progress on {} available bytes",
            avail - pos
        );
        out.extend_from_slice(&input[pos..avail][r.data]);
        pos += r.consumed;
    }
    panic!("decoder made no progress");
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn visible(b: u8) -> bool {
    b == b'\t' || (0x20..=0x7e).contains(&b) || b >= 0x80
}

/// Expects CRLF at `i`: `Ok` with the index past it, or the outcome to return (more input
/// needed, or an error).
fn crlf(input: &[u8], i: usize) -> Result<usize, Outcome> {
    match (input.get(i), input.get(i + 1)) {
        (Some(b'\r'), Some(b'\n')) => Ok(i + 2),
        (None, _) | (Some(b'\r'), None) => Err(None),
        _ => Err(Some(Err(()))),
    }
}

/// Whole-buffer reference decoder.
fn reference(input: &[u8], trailers: &mut Fields) -> Outcome {
    let mut body = Vec::new();
    let mut i = 0;
    let at = |i: usize| input.get(i).copied();
    loop {
        // chunk-size
        let start = i;
        let mut size: u64 = 0;
        // Leading zeros (at most 4096) do not count towards the 16 significant digits.
        while at(i) == Some(b'0') {
            if i - start == 4096 {
                return Some(Err(()));
            }
            i += 1;
        }
        let significant = i;
        while let Some(b) = at(i).filter(u8::is_ascii_hexdigit) {
            if i - significant == 16 {
                return Some(Err(()));
            }
            size = size << 4 | u64::from((b as char).to_digit(16).unwrap());
            i += 1;
        }
        if i == input.len() {
            return None;
        }
        if i == start {
            return Some(Err(()));
        }
        // [ BWS ";" ext ] CRLF: whitespace only before a `;` (counted like the extension)
        if matches!(at(i), Some(b' ' | b'\t')) {
            let mut k = 0;
            while matches!(at(i), Some(b' ' | b'\t')) {
                k += 1;
                if k > 4096 {
                    return Some(Err(()));
                }
                i += 1;
            }
            match at(i) {
                None => return None,
                Some(b';') => {}
                Some(_) => return Some(Err(())),
            }
        }
        if at(i) == Some(b';') {
            i += 1;
            // fibra counts the extension's bytes and its CR: at most 4096
            let mut k = 0;
            while let Some(b) = at(i) {
                k += 1;
                if k > 4096 {
                    return Some(Err(()));
                }
                if b == b'\r' {
                    break;
                }
                if !visible(b) {
                    return Some(Err(()));
                }
                i += 1;
            }
        }
        i = match crlf(input, i) {
            Ok(next) => next,
            Err(outcome) => return outcome,
        };
        if size == 0 {
            break;
        }
        let end = i.checked_add(size as usize)?;
        if end > input.len() {
            return None;
        }
        body.extend_from_slice(&input[i..end]);
        i = end;
        i = match crlf(input, i) {
            Ok(next) => next,
            Err(outcome) => return outcome,
        };
    }
    // trailer-section CRLF
    loop {
        match (at(i), at(i + 1)) {
            (Some(b'\r'), Some(b'\n')) => {
                trailers.sort();
                return Some(Ok((body, i + 2)));
            }
            (Some(b'\r'), None) | (None, _) => return None,
            (Some(b'\r'), Some(_)) => return Some(Err(())),
            _ => {}
        }
        let name_start = i;
        while at(i).is_some_and(is_token) {
            i += 1;
        }
        let name = input[name_start..i].to_ascii_lowercase();
        match at(i) {
            None => return None,
            Some(b':') if i > name_start => i += 1,
            Some(_) => return Some(Err(())),
        }
        let value_start = i;
        while let Some(b) = at(i) {
            if b == b'\r' {
                break;
            }
            if !visible(b) {
                return Some(Err(()));
            }
            i += 1;
        }
        let value = &input[value_start..i];
        let value = value
            .iter()
            .position(|&b| b != b' ' && b != b'\t')
            .map_or(&[][..], |from| {
                let to = value
                    .iter()
                    .rposition(|&b| b != b' ' && b != b'\t')
                    .unwrap();
                &value[from..=to]
            });
        trailers.push((name, value.to_vec()));
        i = match crlf(input, i) {
            Ok(next) => next,
            Err(outcome) => return outcome,
        };
    }
}

fuzz_target!(|data: &[u8]| {
    let [p, m, input @ ..] = data else { return };
    let piece = usize::from(*p % 64) + 1;
    let max_data = usize::from(*m) + 1;
    let (mut want_fields, mut whole_fields, mut piece_fields) = (vec![], vec![], vec![]);
    let want = reference(input, &mut want_fields);
    let whole = incremental(input, input.len().max(1), usize::MAX, &mut whole_fields);
    let pieces = incremental(input, piece, max_data, &mut piece_fields);
    assert_eq!(whole, pieces, "split {piece}/{max_data} changes the result");
    assert_eq!(want, whole, "differs from the reference decoder");
    if let Some(Ok(_)) = want {
        assert_eq!(whole_fields, piece_fields, "split changes the trailers");
        assert_eq!(
            want_fields, whole_fields,
            "trailers differ from the reference"
        );
    }
});
