//! Fuzzes fibra's HPACK decoder (`fibra_http::fuzz_hpack::decode_blocks`, the entry point the
//! `fuzzing` feature exposes: the codec is internal to `http2`).
//!
//! Input: header blocks, each a length byte and that many bytes (255: the rest of the input),
//! decoded in sequence on one decoder as the blocks of one connection. Checks besides "no
//! panic, hang or leak": after every block the dynamic table's size is the sum of its
//! entries' (each name length + value length + 32) and within both the size the peer set
//! and the 4096 bytes we allow; a block that fails leaves the decoder failing (the next
//! block then starts a new one); the fields of a block that decodes, where their names are
//! valid, come back unchanged through our encoder and a fresh decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fibra_http::fuzz_hpack::decode_blocks(data);
});
