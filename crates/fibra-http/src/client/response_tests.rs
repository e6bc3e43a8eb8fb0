//! Unit tests of the response parser: framing kinds, interim responses, input
//! split at every byte boundary, truncation and malformed input, the lenient
//! cases, and the event interface agreeing with the counting one.

use super::*;
use crate::client::MAX_LINE;

/// Feeds `pieces` in order the way a connection does (keeping unconsumed
/// bytes, appending each new read), then signals end of stream. Returns every
/// outcome: completed responses, then the end-of-stream result or the error.
/// Checks that [`drive_events`] gives the same outcomes.
fn drive(head_request: bool, pieces: &[&[u8]]) -> Vec<Result<Response, ParseError>> {
    let out = drive_feed(head_request, pieces);
    let (events, _) = drive_events(head_request, pieces);
    assert_eq!(events, out, "next_event disagrees with feed");
    out
}

/// [`drive`] with [`ResponseParser::feed`].
fn drive_feed(head_request: bool, pieces: &[&[u8]]) -> Vec<Result<Response, ParseError>> {
    let mut parser = ResponseParser::new(head_request);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match parser.feed(&buf) {
                Ok(Step::Done(n, resp)) => {
                    buf.drain(..n);
                    out.push(Ok(resp));
                }
                Ok(Step::NeedMore(n)) => {
                    buf.drain(..n);
                    break;
                }
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            }
        }
    }
    out.push(parser.eof(buf.len()));
    out
}

/// A final response as read with [`ResponseParser::next_event`]: its head bytes, framing,
/// and body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Forwarded {
    interim: Vec<u16>,
    head: Vec<u8>,
    framing: Option<Framing>,
    body: Vec<u8>,
}

/// [`drive`] with [`ResponseParser::next_event`], also returning what a proxy would forward
/// of each response (the last one possibly unfinished). Checks the invariants of the events.
fn drive_events(
    head_request: bool,
    pieces: &[&[u8]],
) -> (Vec<Result<Response, ParseError>>, Vec<Forwarded>) {
    let mut parser = ResponseParser::new(head_request);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let new = || Forwarded {
        interim: Vec::new(),
        head: Vec::new(),
        framing: None,
        body: Vec::new(),
    };
    let mut forwarded = vec![new()];
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            let parsed = match parser.next_event(&buf) {
                Ok(parsed) => parsed,
                Err(e) => {
                    out.push(Err(e));
                    return (out, forwarded);
                }
            };
            assert!(parsed.consumed <= buf.len());
            let current = forwarded.last_mut().unwrap();
            match parsed.event {
                Event::NeedMore => {
                    buf.drain(..parsed.consumed);
                    break;
                }
                Event::Interim { status } => {
                    assert!((100..200).contains(&status));
                    assert!(buf[..parsed.consumed].ends_with(b"\n"));
                    current.interim.push(status);
                }
                Event::Head { framing, .. } => {
                    assert!(buf[..parsed.consumed].ends_with(b"\n"));
                    current.head = buf[..parsed.consumed].to_vec();
                    current.framing = Some(framing);
                }
                Event::Data(range) => {
                    assert!(!range.is_empty() && range.end <= parsed.consumed);
                    current.body.extend_from_slice(&buf[range]);
                }
                Event::Done(response) => {
                    out.push(Ok(response));
                    forwarded.push(new());
                }
            }
            buf.drain(..parsed.consumed);
        }
    }
    out.push(parser.eof(buf.len()));
    (out, forwarded)
}

/// `drive` with the whole input in one piece, with every two-way split and
/// one byte at a time; all must agree. Returns the common outcome.
fn drive_all_splits(head_request: bool, input: &[u8]) -> Vec<Result<Response, ParseError>> {
    let whole = drive(head_request, &[input]);
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(drive(head_request, &[a, b]), whole, "split at byte {cut}");
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(drive(head_request, &bytes), whole, "one byte at a time");
    whole
}

const OK: Response = Response {
    status: 200,
    keep_alive: true,
};
const CLOSE: Response = Response {
    status: 200,
    keep_alive: false,
};

#[test]
fn content_length_keep_alive() {
    let out = drive_all_splits(false, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(out, vec![Ok(OK), Err(ParseError::Closed)]);
}

#[test]
fn pipelined_responses_in_one_read() {
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    let four = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
    let mut input = one.repeat(3);
    input.extend_from_slice(four);
    let out = drive_all_splits(false, &input);
    let nf = Response {
        status: 404,
        keep_alive: true,
    };
    assert_eq!(
        out,
        vec![Ok(OK), Ok(OK), Ok(OK), Ok(nf), Err(ParseError::Closed)]
    );
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n\
        5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n\
        HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    let out = drive_all_splits(false, input);
    assert_eq!(out, vec![Ok(OK), Ok(OK), Err(ParseError::Closed)]);
}

#[test]
fn chunked_overrides_content_length() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n\
        3\r\nabc\r\n0\r\n\r\n";
    assert_eq!(
        drive_all_splits(false, input),
        vec![Ok(OK), Err(ParseError::Closed)]
    );
}

#[test]
fn interim_responses_are_skipped() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
        HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
    let created = Response {
        status: 201,
        keep_alive: true,
    };
    assert_eq!(
        drive_all_splits(false, input),
        vec![Ok(created), Err(ParseError::Closed)]
    );
    // Closing after the interim response but before the final one is truncation.
    let out = drive(false, &[b"HTTP/1.1 100 Continue\r\n\r\n"]);
    assert_eq!(out, vec![Err(ParseError::Truncated)]);
}

#[test]
fn bodiless_responses() {
    // HEAD: the Content-Length describes the GET body, which is not sent.
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n";
    assert_eq!(
        drive_all_splits(true, head),
        vec![Ok(OK), Ok(OK), Err(ParseError::Closed)]
    );
    let input =
        b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n";
    let out = drive_all_splits(false, input);
    let (s204, s304) = (
        Response {
            status: 204,
            keep_alive: true,
        },
        Response {
            status: 304,
            keep_alive: true,
        },
    );
    assert_eq!(out, vec![Ok(s204), Ok(s304), Err(ParseError::Closed)]);
}

#[test]
fn body_until_close() {
    let input = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nall of this is body";
    assert_eq!(drive_all_splits(false, input), vec![Ok(CLOSE)]);
    // A transfer coding other than chunked last also reads until close.
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzzz";
    assert_eq!(drive_all_splits(false, input), vec![Ok(CLOSE)]);
}

#[test]
fn connection_persistence() {
    let input = b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(drive(false, &[input])[0], Ok(CLOSE));
    let input = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(drive(false, &[input])[0], Ok(CLOSE));
    let input = b"HTTP/1.0 200 OK\r\nConnection: foo, keep-alive\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(drive(false, &[input])[0], Ok(OK));
    let input = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
    assert_eq!(
        drive(false, &[input])[0],
        Ok(Response {
            status: 101,
            keep_alive: false
        })
    );
}

#[test]
fn truncated_responses_never_succeed() {
    let full: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let chunked: &[u8] =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    for input in [full, chunked] {
        for cut in 1..input.len() {
            let out = drive(false, &[&input[..cut]]);
            assert_eq!(out, vec![Err(ParseError::Truncated)], "cut at {cut}");
        }
    }
}

#[test]
fn malformed_responses() {
    let cases: &[&[u8]] = &[
        b"HTTP/1.1 2OO OK\r\n\r\n",
        b"HTTP/2 200 OK\r\n\r\n",
        b"GARBAGE\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer: x\r\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\rabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\rX",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2,\r\n\r\nab",
    ];
    for input in cases {
        let out = drive(false, &[input]);
        let text = String::from_utf8_lossy(input);
        assert!(
            matches!(out.last(), Some(Err(ParseError::Malformed(_)))),
            "{text:?}: {out:?}"
        );
        assert!(out.iter().all(|r| r.is_err()), "{text:?}: {out:?}");
    }
}

#[test]
fn limits() {
    let mut huge = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    huge.resize(MAX_HEAD + 10, b'a');
    assert_eq!(drive(false, &[&huge]), vec![Err(ParseError::HeadTooLarge)]);
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..=MAX_HEADERS {
        many.extend_from_slice(format!("H{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(
        drive(false, &[&many]),
        vec![Err(ParseError::Malformed("too many headers"))]
    );
    let mut long_ext = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;".to_vec();
    long_ext.resize(long_ext.len() + MAX_LINE + 10, b'x');
    assert!(matches!(
        drive(false, &[&long_ext])[0],
        Err(ParseError::Malformed(_))
    ));
}

#[test]
fn large_body_needs_no_buffer() {
    let mut parser = ResponseParser::new(false);
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
    assert_eq!(parser.feed(head), Ok(Step::NeedMore(head.len())));
    let block = [b'x'; 4096];
    let mut left = 1_000_000usize;
    while left > block.len() {
        assert_eq!(parser.feed(&block), Ok(Step::NeedMore(block.len())));
        left -= block.len();
    }
    assert_eq!(parser.feed(&block), Ok(Step::Done(left, OK)));
}

#[test]
fn repeated_heads_reuse_the_parse_and_differences_are_seen() {
    let a: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    let b: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n01234567890123456789";
    let c: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi";
    let input = [a, a, b, a, c].concat();
    let out = drive_all_splits(false, &input);
    assert_eq!(
        out,
        vec![
            Ok(OK),
            Ok(OK),
            Ok(OK),
            Ok(OK),
            Ok(CLOSE),
            Err(ParseError::Closed)
        ]
    );
    // A cached head is never applied to a different response of the same prefix.
    let mut parser = ResponseParser::new(false);
    assert_eq!(parser.feed(a), Ok(Step::Done(a.len(), OK)));
    assert_eq!(parser.feed(b), Ok(Step::Done(b.len(), OK)));
    assert_eq!(parser.feed(a), Ok(Step::Done(a.len(), OK)));
    assert_eq!(parser.feed(c), Ok(Step::Done(c.len(), CLOSE)));
}

#[test]
fn head_bytes_are_counted() {
    let interim: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
    let head: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
    let input = [interim, head, b"hi", head, b"hi"].concat();
    let mut parser = ResponseParser::new(false);
    let mut at = 0;
    for _ in 0..2 {
        match parser.feed(&input[at..]) {
            Ok(Step::Done(n, _)) => at += n,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(at, input.len());
    let expected = interim.len() + 2 * head.len();
    assert_eq!(parser.take_head_bytes(), expected as u64);
    assert_eq!(parser.take_head_bytes(), 0);
}

#[test]
fn lenient_heads() {
    // Bare LF line endings (RFC 9112 §2.2), several spaces in the status line (§4),
    // whitespace before a colon (§5.1), obs-fold (§5.2), identical Content-Length values
    // (RFC 9110 §8.6).
    let cases: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nhi",
        b"HTTP/1.1  200  OK\r\nContent-Length: 2\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length:\r\n 2\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,\r\n\tchunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
    ];
    for input in cases {
        let out = drive_all_splits(false, input);
        assert_eq!(
            out,
            vec![Ok(OK), Err(ParseError::Closed)],
            "{}",
            String::from_utf8_lossy(input)
        );
        let (_, forwarded) = drive_events(false, &[input]);
        assert_eq!(forwarded[0].body, b"hi");
    }
    // Folded Connection: close is still seen.
    let input = b"HTTP/1.1 200 OK\r\nConnection: x,\r\n close\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(drive(false, &[input])[0], Ok(CLOSE));
}

#[test]
fn lenient_chunked_framing() {
    // Bare LF everywhere (§2.2), whitespace after the size and chunk extensions of any
    // content (§7.1.1), leading zeros, trailer lines of any content including obs-fold
    // (§7.1.2).
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5\nhello\n\
        000000000000000000006 \t; ext=\"a b\" ; x\r\n world\r\n\
        1 \r\n!\n\
        0;last\n\
        X-Trailer: 1\n\
         continued\r\n\
        Odd trailer without colon\n\
        \n\
        HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let out = drive_all_splits(false, input);
    assert_eq!(out, vec![Ok(OK), Ok(OK), Err(ParseError::Closed)]);
    let (_, forwarded) = drive_events(false, &[input]);
    assert_eq!(forwarded[0].body, b"hello world!");
    assert_eq!(forwarded[0].framing, Some(Framing::Chunked));
    assert_eq!(forwarded[1].body, b"");
}

#[test]
fn events_hand_out_heads_and_body_ranges() {
    let interim: &[u8] = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n";
    let head: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let chunks: &[u8] = b"3;x\r\nabc\r\n4\r\ndefg\r\n0\r\nT: 1\r\n\r\n";
    let fixed: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!";
    let close: &[u8] = b"HTTP/1.0 200 OK\r\n\r\nuntil the end";
    let input = [interim, head, chunks, fixed, close].concat();
    let expected = vec![
        Forwarded {
            interim: vec![103],
            head: head.to_vec(),
            framing: Some(Framing::Chunked),
            body: b"abcdefg".to_vec(),
        },
        Forwarded {
            interim: vec![],
            head: fixed[..fixed.len() - 5].to_vec(),
            framing: Some(Framing::Length(5)),
            body: b"nope!".to_vec(),
        },
        Forwarded {
            interim: vec![],
            head: close[..close.len() - 13].to_vec(),
            framing: Some(Framing::UntilClose),
            body: b"until the end".to_vec(),
        },
        // eof() ended the last response; nothing started after it.
        Forwarded {
            interim: vec![],
            head: vec![],
            framing: None,
            body: vec![],
        },
    ];
    let nf = Response {
        status: 404,
        keep_alive: true,
    };
    for pieces in [
        vec![&input[..]],
        input.chunks(1).collect(),
        input.chunks(7).collect(),
    ] {
        let (out, mut forwarded) = drive_events(false, &pieces);
        assert_eq!(out, vec![Ok(OK), Ok(nf), Ok(CLOSE)]);
        // eof() completes the until-close body without a Done event.
        forwarded.push(Forwarded {
            interim: vec![],
            head: vec![],
            framing: None,
            body: vec![],
        });
        assert_eq!(forwarded, expected);
    }
    // Data ranges point into the input: a whole chunk is handed out without copying.
    let mut parser = ResponseParser::new(false);
    let at = head.len();
    let both = [head, chunks].concat();
    let first = parser.next_event(&both).unwrap();
    assert_eq!(first.consumed, at);
    let data = parser.next_event(&both[at..]).unwrap();
    assert_eq!(data.event, Event::Data(5..8));
    assert_eq!(&both[at..][5..8], b"abc");
    assert_eq!(data.consumed, 8);
    // A bodiless response ends without consuming anything more.
    let mut parser = ResponseParser::new(true);
    let h: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
    let parsed = parser.next_event(h).unwrap();
    assert_eq!(parsed.consumed, h.len());
    assert_eq!(
        parsed.event,
        Event::Head {
            response: OK,
            framing: Framing::Length(0)
        }
    );
    assert_eq!(
        parser.next_event(b"").unwrap(),
        Parsed {
            consumed: 0,
            event: Event::Done(OK)
        }
    );
}

#[test]
fn head_request_can_change_between_responses() {
    let a: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
    let mut parser = ResponseParser::new(false);
    assert_eq!(
        parser.feed(&[a, b"hi"].concat()),
        Ok(Step::Done(a.len() + 2, OK))
    );
    // The same head answering HEAD: no body, although the head is cached.
    parser.set_head_request(true);
    assert_eq!(parser.feed(a), Ok(Step::Done(a.len(), OK)));
    assert_eq!(parser.feed(a), Ok(Step::Done(a.len(), OK)));
    parser.set_head_request(false);
    assert_eq!(parser.feed(a), Ok(Step::NeedMore(a.len())));
    assert_eq!(parser.feed(b"hi"), Ok(Step::Done(2, OK)));
}

#[test]
fn skipped_body_bytes_complete_the_response() {
    let mut parser = ResponseParser::new(false);
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    assert_eq!(parser.body_due(), 0, "no head yet");
    assert_eq!(parser.feed(head).unwrap(), Step::NeedMore(head.len()));
    assert_eq!(parser.body_due(), 7);
    parser.skip_body(4);
    assert_eq!(parser.body_due(), 3);
    assert_eq!(parser.feed(b"").unwrap(), Step::NeedMore(0));
    parser.skip_body(3);
    match parser.feed(b"").unwrap() {
        Step::Done(0, response) => assert_eq!(response.status, 200),
        other => panic!("{other:?}"),
    }
    // The next response parses as usual after the skipped one.
    let next = b"HTTP/1.1 204 No Content\r\n\r\n";
    match parser.feed(next).unwrap() {
        Step::Done(n, response) => assert_eq!((n, response.status), (next.len(), 204)),
        other => panic!("{other:?}"),
    }
    // Chunked bodies have no known length: nothing to skip.
    let mut parser = ResponseParser::new(false);
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe";
    parser.feed(chunked).unwrap();
    assert_eq!(parser.body_due(), 0);
}
