//! An idle HTTP/2 connection (no stream open) holds no stack, like an idle HTTP/1.1 one:
//! the process's memory mappings (`/proc/self/maps`; a fiber stack is a mapping and its
//! guard page) hardly grow with many of them. (Alone in its binary: other tests' fibers
//! would map stacks while this one counts.)

mod h2_util;
mod util;

use std::io::Write;

use fibra_http::{Response, Settings};
use h2_util::*;

const IDLE: usize = 200;

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

#[test]
fn idle_http2_connections_hold_no_stack() {
    let srv = util::start(Settings::default(), |_req| Response::new("hi".into()));
    // Warm up: the worker's own stacks and pools.
    let mut warm = raw_connect(srv.addr, &[]);
    warm.write_all(&get(1, "/")).unwrap();
    read_until(&mut warm, |f| f.ty == DATA && f.flags & END_STREAM != 0).unwrap();

    let before = mappings();
    let conns: Vec<_> = (0..IDLE)
        .map(|_| {
            let mut s = raw_connect(srv.addr, &[]);
            s.write_all(&get(1, "/")).unwrap();
            let data = read_until(&mut s, |f| f.ty == DATA && f.flags & END_STREAM != 0)
                .expect("a response");
            assert_eq!(data.payload, b"hi");
            s
        })
        .collect();
    let growth = mappings().saturating_sub(before);
    eprintln!("{IDLE} idle HTTP/2 connections: {growth} new mappings");
    assert!(
        growth < IDLE / 10,
        "idle HTTP/2 connections mapped {growth} regions"
    );
    drop(conns);
}
