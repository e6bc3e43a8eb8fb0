//! Fuzzes the PROXY protocol: `fibra_http::proxy_protocol::parse_header`, and the
//! `ProxyProtocol` transport over an in-memory stream handing out the input in pieces.
//!
//! Input layout: `[read_size, wire...]`, `read_size` the bytes handed out per read (0 counts
//! as 1).
//!
//! Checks besides "no panic, hang or leak":
//! - a complete header's length is within the input and within `MAX_HEADER_BYTES`, and the
//!   header alone parses to the same result (the bytes after it do not matter);
//! - no prefix of a valid header is rejected (a header arriving in pieces is never refused
//!   where the whole would have been accepted);
//! - through the transport, read in pieces: a valid header yields exactly the bytes after it
//!   and its source address as the peer; an invalid one yields an `InvalidData` error and no
//!   bytes.
#![no_main]

use std::io;
use std::net::SocketAddr;

use fibra_http::proxy_protocol::{parse_header, ProxyProtocol, MAX_HEADER_BYTES};
use fibra_http::Transport;
use libfuzzer_sys::fuzz_target;

#[path = "common/mock.rs"]
mod mock;
use mock::Mock;

fuzz_target!(|data: &[u8]| {
    let Some((&piece, wire)) = data.split_first() else {
        return;
    };
    let parsed = parse_header(wire);
    match &parsed {
        Ok(Some(h)) => {
            assert!(
                h.len <= wire.len() && h.len <= MAX_HEADER_BYTES,
                "length {}",
                h.len
            );
            let alone = parse_header(&wire[..h.len]).expect("header alone valid");
            assert_eq!(alone.as_ref(), Some(h));
            for k in [0, 1, h.len / 2, h.len.saturating_sub(1)] {
                if k < h.len {
                    let p = parse_header(&wire[..k]);
                    assert!(matches!(p, Ok(None)), "prefix of {k} bytes: {p:?}");
                }
            }
        }
        Ok(None) => assert!(wire.len() < MAX_HEADER_BYTES),
        Err(e) => assert_eq!(e.kind(), io::ErrorKind::InvalidData),
    }

    let mut pp = ProxyProtocol::new(
        Mock::new(wire, usize::from(piece)).peer(SocketAddr::from(([127, 0, 0, 1], 1))),
    );
    let mut out = Vec::new();
    let mut buf = [0u8; 100];
    let result = loop {
        match pp.try_read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => break Err(e),
        }
    };
    match parsed {
        Ok(Some(h)) => {
            result.expect("valid header read through");
            assert_eq!(out, &wire[h.len..]);
            let peer = h.source.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 1)));
            assert_eq!(pp.peer_addr(), Some(peer));
        }
        Ok(None) => assert!(out.is_empty() && result.is_ok()),
        Err(_) => {
            let e = result.expect_err("invalid header refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(out.is_empty());
        }
    }
});
