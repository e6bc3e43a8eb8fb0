//! Fuzzes `fibra_http::client::ResponseParser`, the client-side response parser, through both
//! of its interfaces.
//!
//! Input: one byte of flags (bit 0: the responses answer `HEAD`; bits 1..: piece size), then
//! the stream of responses. The stream is fed in pieces the way a connection reads it, once
//! with `feed` (the benchmark's counting path) and once with `next_event` (the proxy's path),
//! then end of stream is signalled. Both must give the same responses and the same final
//! outcome; `next_event` must respect its contract (consumed within the input, data ranges
//! non-empty and within the consumed bytes, heads ending in a line end, progress), and a body
//! with a known length must hand out exactly that many bytes.
#![no_main]

use fibra_http::client::{Event, Framing, ParseError, Response, ResponseParser, Step};
use libfuzzer_sys::fuzz_target;

type Outcome = Vec<Result<Response, ParseError>>;

fn with_feed(head_request: bool, input: &[u8], piece: usize) -> Outcome {
    let mut parser = ResponseParser::new(head_request);
    let (mut out, mut start, mut avail) = (Vec::new(), 0, 0);
    while avail < input.len() {
        avail = (avail + piece).min(input.len());
        loop {
            match parser.feed(&input[start..avail]) {
                Ok(Step::Done(n, response)) => {
                    assert!(n <= avail - start);
                    start += n;
                    out.push(Ok(response));
                }
                Ok(Step::NeedMore(n)) => {
                    assert!(n <= avail - start);
                    start += n;
                    break;
                }
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            }
        }
    }
    out.push(parser.eof(avail - start));
    out
}

fn with_events(head_request: bool, input: &[u8], piece: usize) -> Outcome {
    let mut parser = ResponseParser::new(head_request);
    let (mut out, mut start, mut avail) = (Vec::new(), 0, 0);
    // Body bytes still due for a response of known length, and bytes seen.
    let mut due: Option<u64> = None;
    while avail < input.len() {
        avail = (avail + piece).min(input.len());
        loop {
            let data = &input[start..avail];
            let parsed = match parser.next_event(data) {
                Ok(parsed) => parsed,
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            };
            assert!(parsed.consumed <= data.len(), "consumed past the input");
            let progress = parsed.consumed > 0 || matches!(parsed.event, Event::Done(_));
            match parsed.event {
                Event::NeedMore => {
                    start += parsed.consumed;
                    break;
                }
                Event::Interim { status } => {
                    assert!((100..200).contains(&status) && status != 101);
                    assert!(data[..parsed.consumed].ends_with(b"\n"));
                }
                Event::Head { framing, .. } => {
                    assert!(data[..parsed.consumed].ends_with(b"\n"));
                    due = match framing {
                        Framing::Length(n) => Some(n),
                        _ => None,
                    };
                }
                Event::Data(range) => {
                    assert!(!range.is_empty(), "empty data event");
                    assert!(range.end <= parsed.consumed, "data outside consumed bytes");
                    if let Some(due) = &mut due {
                        *due = due.checked_sub(range.len() as u64).expect("body too long");
                    }
                }
                Event::Done(response) => {
                    assert!(due.is_none_or(|d| d == 0), "body too short");
                    due = None;
                    out.push(Ok(response));
                }
                _ => unreachable!("unknown event"),
            }
            assert!(progress, "no progress");
            start += parsed.consumed;
        }
    }
    out.push(parser.eof(avail - start));
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, stream)) = input.split_first() else {
        return;
    };
    let head_request = flags & 1 == 1;
    let piece = usize::from(flags >> 1) + 1;
    let fed = with_feed(head_request, stream, piece);
    assert_eq!(fed, with_feed(head_request, stream, stream.len().max(1)));
    assert_eq!(fed, with_events(head_request, stream, piece));
});
