//! Fuzzes `fibra_http::parse::parse_head`, the request-head parser and framing validator.
//!
//! The first input byte picks the settings (default or tiny limits); the rest is the wire.
//! Beyond "no panic", it checks properties the connection loop relies on:
//! - a complete head's length is within the input and within `max_head_bytes`;
//! - the result does not depend on the bytes after the head (pipelined data);
//! - no prefix of a valid head is rejected other than for a size limit (a request arriving
//!   in pieces is never refused where the whole would have been accepted);
//! - every rejection carries one of the statuses the server documents;
//! - the framing respects the limits (`Content-Length` ≤ `max_body_bytes`).
#![no_main]

use fibra_http::parse::{parse_head, BodyKind};
use fibra_http::Settings;
use libfuzzer_sys::fuzz_target;

fn settings(pick: u8) -> Settings {
    if pick & 1 == 0 {
        Settings::default()
    } else {
        Settings {
            max_head_bytes: 256,
            max_target_bytes: 64,
            max_headers: 8,
            max_body_bytes: 1000,
            ..Settings::default()
        }
    }
}

const STATUSES: &[u16] = &[400, 408, 413, 414, 431, 501, 505];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, wire)) = data.split_first() else {
        return;
    };
    let s = settings(pick);
    match parse_head(wire, &s) {
        Ok(Some((head, n))) => {
            assert!(n <= wire.len() && n <= s.max_head_bytes, "length {n}");
            assert!(head.headers.len() <= s.max_headers);
            if let BodyKind::Length(len) = head.body {
                assert!(len > 0 && len <= s.max_body_bytes, "length {len}");
            }
            // The same head alone parses to the same thing.
            let (again, n2) = parse_head(&wire[..n], &s)
                .expect("head alone still valid")
                .expect("head alone still complete");
            assert_eq!(n, n2);
            assert_eq!(head.method, again.method);
            assert_eq!(head.uri, again.uri);
            assert_eq!(head.body, again.body);
            assert_eq!(head.keep_alive, again.keep_alive);
            // Prefixes are incomplete, or rejected only for size.
            for k in [0, 1, n / 2, n.saturating_sub(2), n - 1] {
                if k >= n {
                    continue;
                }
                match parse_head(&wire[..k], &s) {
                    Ok(None) => {}
                    Ok(Some(_)) => panic!("prefix of {k} bytes complete, whole is {n}"),
                    Err(e) => assert!(
                        matches!(e.status().as_u16(), 414 | 431),
                        "prefix of {k} bytes rejected with {e}, whole head is valid"
                    ),
                }
            }
        }
        Ok(None) => assert!(wire.len() < s.max_head_bytes),
        Err(e) => {
            assert!(STATUSES.contains(&e.status().as_u16()), "status {e}");
            assert!(e.closes_connection());
        }
    }
});
