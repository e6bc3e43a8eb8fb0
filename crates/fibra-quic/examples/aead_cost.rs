//! What one AES-GCM seal costs, by payload size: a QUIC packet's (1,400 bytes) against a TLS
//! record's (16,384), with the AEAD and header protection rustls uses (aws-lc-rs).
//!
//! ```text
//! cargo run --release -p fibra-quic --example aead_cost          # pin it: taskset -c 0 ...
//! ```
//!
//! A sender seals each packet on its own (its nonce is its packet number, its header the
//! associated data), so whatever a seal costs besides its bytes is paid per 1,400 bytes by
//! HTTP/3 and per 16,384 by HTTP/2 over TLS. Prints, for AES-128-GCM and AES-256-GCM, the
//! best of 7 timed loops in ns per call and GB/s, the per-call cost beyond the 16 KiB rate
//! at 1,400 bytes, and the cost of one header-protection mask.

use aws_lc_rs::aead::quic::{HeaderProtectionKey, AES_128};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
use std::hint::black_box;
use std::time::Instant;

/// Calls of each timed loop.
const CALLS: usize = 200_000;
/// A QUIC packet's payload under a 1,452-byte datagram, and a full TLS record.
const SIZES: [usize; 2] = [1_400, 16_384];

/// Best of 7 loops of `CALLS` calls of `f`, in ns per call, after a warm-up.
fn time(mut f: impl FnMut(u64)) -> f64 {
    for i in 0..CALLS / 10 {
        f(i as u64);
    }
    (0..7)
        .map(|_| {
            let t = Instant::now();
            for i in 0..CALLS {
                f(i as u64);
            }
            t.elapsed().as_nanos() as f64 / CALLS as f64
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let aad = [0x40u8; 20];
    for (name, alg, key_len) in [
        ("AES-128-GCM", &AES_128_GCM, 16),
        ("AES-256-GCM", &AES_256_GCM, 32),
    ] {
        let key = LessSafeKey::new(UnboundKey::new(alg, &vec![1u8; key_len]).unwrap());
        let mut per_call = Vec::new();
        for len in SIZES {
            let mut buf = vec![7u8; len];
            let ns = time(|i| {
                let mut nonce = [0u8; 12];
                nonce[4..].copy_from_slice(&i.to_be_bytes());
                let tag = key
                    .seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::from(&aad),
                        &mut buf,
                    )
                    .unwrap();
                let _ = black_box(tag);
            });
            println!(
                "{name} {len:>6} bytes: {ns:8.1} ns per seal, {:5.2} GB/s",
                len as f64 / ns
            );
            per_call.push(ns);
        }
        let bulk = per_call[1] / SIZES[1] as f64 * SIZES[0] as f64;
        println!(
            "{name}: at {} bytes, {:.1} ns per seal beyond the {}-byte rate",
            SIZES[0],
            per_call[0] - bulk,
            SIZES[1]
        );
    }
    let hp = HeaderProtectionKey::new(&AES_128, &[1u8; 16]).unwrap();
    let sample = [3u8; 16];
    let ns = time(|_| {
        let _ = black_box(hp.new_mask(&sample).unwrap());
    });
    println!("header protection (AES-128): {ns:.1} ns per mask");
}
