//! Fuzzes fibra's QPACK field-section decoder and QPACK stream readers
//! (`fibra_http::fuzz_qpack::decode_sections`, the entry point the `fuzzing` feature exposes:
//! the codec is internal to `http3`).
//!
//! Input: a size-limit byte, then field sections, each a length byte and that many bytes
//! (255: the rest of the input), decoded in sequence on one decoder as the sections of one
//! connection. Checks besides "no panic, hang or leak": a section that decodes is within the
//! limit and its fields come back unchanged through our encoder (plain and Huffman-coded)
//! and a fresh decoder; an error leaves the decoder usable (it keeps no table); the
//! encoder- and decoder-stream readers give the same outcome for each section's bytes fed
//! whole or split in two.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fibra_http::fuzz_qpack::decode_sections(data);
});
