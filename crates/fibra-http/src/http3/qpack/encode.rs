//! The field section encoder: stateless, never touching the peer's dynamic table. Every
//! section starts with the prefix 0, 0 (Required Insert Count 0, Base 0); a field is an
//! indexed static reference when the table has it exactly, a literal with a static name
//! reference when it has the name, else a literal with a literal name.
//!
//! Strings are sent as they are unless the encoder was made [`Encoder::with_huffman`]: as
//! HPACK's encoder reasons, a response head is small next to its body and the copy is
//! cheaper than the coding; the Huffman form (taken only where it is shorter) is for a
//! caller that counts bytes, such as a request encoder on a slow uplink.

use http::HeaderName;

use super::primitive::{put_int, put_string};
use super::table::{self, STATIC};
use super::Pseudo;

/// Encodes field sections (stateless; `Copy`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Encoder {
    /// Huffman-code strings where that is shorter.
    huffman: bool,
}

impl Encoder {
    /// An encoder that sends strings as they are.
    pub(crate) const fn new() -> Encoder {
        Encoder { huffman: false }
    }

    /// An encoder that Huffman-codes each string whose coding is shorter than it.
    pub(crate) const fn with_huffman() -> Encoder {
        Encoder { huffman: true }
    }

    /// Appends the section prefix (§4.5.1): Required Insert Count 0, Delta Base 0.
    pub(crate) fn prefix(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[0x00, 0x00]);
    }

    /// Appends `:status`: the static entry for the 14 codes the table has (103, 200, 304,
    /// 404, 503, 100, 204, 206, 302, 400, 403, 421, 425, 500), else a literal naming
    /// entry 24 (`:status: 103`, the first).
    pub(crate) fn status(&self, out: &mut Vec<u8>, status: u16) {
        if let Some(index) = table::status_index(status) {
            put_indexed(out, index);
            return;
        }
        let digits = crate::digits::itoa_buf(u64::from(status));
        self.put_name_ref(out, 24, digits.as_slice(), false);
    }

    /// Appends a pseudo-header field of a request (`:method`, `:scheme`, `:authority`,
    /// `:path`, `:protocol`) or `:status` given as text.
    ///
    /// # Panics
    /// For [`Pseudo::Unknown`], which names no field.
    pub(crate) fn pseudo(&self, out: &mut Vec<u8>, name: Pseudo, value: &[u8]) {
        let text = name.as_str().expect("a pseudo-header field with a name");
        self.line(out, text, value, false);
    }

    /// Appends a field. `sensitive` sets the N bit of a literal (§4.5.4, §7.1.3): an
    /// intermediary must send the field on as a literal too, never through its dynamic
    /// table (as HPACK's never-indexed literal; `HeaderValue::is_sensitive` is the caller's
    /// usual source). A value the static table has exactly is indexed either way: the
    /// table is public.
    pub(crate) fn field(
        &self,
        out: &mut Vec<u8>,
        name: &HeaderName,
        value: &[u8],
        sensitive: bool,
    ) {
        self.line(out, name.as_str(), value, sensitive);
    }

    /// One field line, its name a lower-case field name or a pseudo-header's.
    fn line(&self, out: &mut Vec<u8>, name: &str, value: &[u8], sensitive: bool) {
        let Some(indices) = table::name_indices(name) else {
            // Literal with literal name (§4.5.6): 001N, the name a 4-bit prefix string.
            let n = if sensitive { 0x10 } else { 0x00 };
            put_string(out, 0x20 | n, 4, name.as_bytes(), self.huffman);
            put_string(out, 0x00, 8, value, self.huffman);
            return;
        };
        match indices
            .iter()
            .find(|&&i| STATIC[usize::from(i)].value.as_bytes() == value)
        {
            Some(&index) => put_indexed(out, index),
            None => self.put_name_ref(out, indices[0], value, sensitive),
        }
    }

    /// A literal with a static name reference (§4.5.4): 01NT with T = 1, a 4-bit index.
    fn put_name_ref(&self, out: &mut Vec<u8>, index: u8, value: &[u8], sensitive: bool) {
        let n = if sensitive { 0x20 } else { 0x00 };
        put_int(out, 0x50 | n, 4, u64::from(index));
        put_string(out, 0x00, 8, value, self.huffman);
    }
}

/// An indexed static field line (§4.5.2): 1T with T = 1, a 6-bit index.
fn put_indexed(out: &mut Vec<u8>, index: u8) {
    put_int(out, 0xc0, 6, u64::from(index));
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;

    fn encoded(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    #[test]
    fn status_bytes() {
        let e = Encoder::new();
        // Indexed 25 and 71 (two bytes: the 6-bit prefix holds up to 62), literals
        // naming entry 24.
        assert_eq!(encoded(|o| e.status(o, 200)), [0xd9]);
        assert_eq!(encoded(|o| e.status(o, 500)), [0xff, 0x08]);
        assert_eq!(encoded(|o| e.status(o, 201)), b"\x5f\x09\x03201");
        // Three digits Huffman-code into two bytes (the name reference takes two).
        let h = Encoder::with_huffman();
        assert_eq!(encoded(|o| h.status(o, 201)).len(), 5);
    }

    #[test]
    fn field_bytes() {
        let e = Encoder::new();
        // `content-type: text/plain` is entry 53; `text/xml` names entry 44.
        assert_eq!(
            encoded(|o| e.field(o, &header::CONTENT_TYPE, b"text/plain", false)),
            [0xf5]
        );
        assert_eq!(
            encoded(|o| e.field(o, &header::CONTENT_TYPE, b"text/xml", false)),
            b"\x5f\x1d\x08text/xml"
        );
        // The N bit for a sensitive literal; an exact match is indexed regardless.
        assert_eq!(
            encoded(|o| e.field(o, &header::AUTHORIZATION, b"Basic x", true)),
            b"\x7f\x45\x07Basic x"
        );
        assert_eq!(encoded(|o| e.field(o, &header::COOKIE, b"", true)), [0xc5]);
        // A literal name, with and without N.
        let name = HeaderName::from_static("x-a");
        assert_eq!(encoded(|o| e.field(o, &name, b"1", false)), b"\x23x-a\x011");
        assert_eq!(encoded(|o| e.field(o, &name, b"1", true)), b"\x33x-a\x011");
        // Request pseudo-headers.
        assert_eq!(encoded(|o| e.pseudo(o, Pseudo::Method, b"GET")), [0xd1]);
        assert_eq!(encoded(|o| e.pseudo(o, Pseudo::Path, b"/")), [0xc1]);
        assert_eq!(
            encoded(|o| e.pseudo(o, Pseudo::Path, b"/index.html")),
            b"\x51\x0b/index.html"
        );
    }
}
