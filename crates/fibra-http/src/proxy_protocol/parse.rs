//! Parsing a PROXY header, v1 or v2, from the first bytes of a connection ([`parse_header`]).

use std::io;
use std::net::SocketAddr;

use ppp::{v1, v2, HeaderResult};

/// The longest header accepted: a v2 header whose 16-byte preamble announces more (addresses
/// and TLVs) closes the connection. A v1 header is at most 107 bytes; HAProxy's v2 headers,
/// TLVs included (ALPN, SNI, unique ID, TLS details), stay well under this.
pub const MAX_HEADER_BYTES: usize = 4096;

/// The v2 signature's length plus version, family and the 2-byte length.
const V2_PREAMBLE: usize = 16;

/// How a v1 header starts.
const V1_SIGNATURE: &[u8] = b"PROXY ";

/// The longest v1 header, CRLF included (the specification's figure).
const V1_MAX_BYTES: usize = 107;

/// A parsed PROXY header: its length and the addresses it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The header's length in bytes (what follows is the client's stream).
    pub len: usize,
    /// The client's address; `None` for `LOCAL`, `UNKNOWN`, unspecified or Unix addresses
    /// (the connection's own peer address stands).
    pub source: Option<SocketAddr>,
    /// The address the client connected to (on the balancer), when `source` is known.
    pub destination: Option<SocketAddr>,
}

/// Parses a PROXY header (v1 or v2) at the start of `input`: `Ok(None)` while it is
/// incomplete, an `InvalidData` error naming the problem when it cannot become valid.
pub fn parse_header(input: &[u8]) -> io::Result<Option<Header>> {
    let invalid =
        |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("PROXY protocol: {why}"));
    let wrong_signature = || invalid("no PROXY header (wrong signature)".into());
    // Where the header ends is decided here, from the signature and the v1 line end or the
    // v2 length; `ppp` parses only a whole header, and anything it finds incomplete then is
    // invalid. (Its own notion of "incomplete" is not monotonic in the input: a prefix cut
    // inside a field, or a line with fields missing, could be refused or waited on where
    // more bytes give the other answer; found by the fuzz target.)
    let end = if input.first() == Some(&b'\r') {
        let signature = v2::PROTOCOL_PREFIX;
        let n = input.len().min(signature.len());
        if input[..n] != signature[..n] {
            return Err(wrong_signature());
        }
        if input.len() < V2_PREAMBLE {
            return Ok(None);
        }
        let total = V2_PREAMBLE + usize::from(u16::from_be_bytes([input[14], input[15]]));
        if total > MAX_HEADER_BYTES {
            return Err(invalid(format!(
                "a v2 header of {total} bytes, more than the {MAX_HEADER_BYTES} accepted"
            )));
        }
        if input.len() < total {
            return Ok(None);
        }
        total
    } else {
        let n = input.len().min(V1_SIGNATURE.len());
        if input[..n] != V1_SIGNATURE[..n] {
            return Err(wrong_signature());
        }
        let cr = memchr::memchr(b'\r', input);
        let line = &input[..cr.unwrap_or(input.len())];
        if !line.is_ascii() {
            return Err(invalid("bad v1 header: not ASCII".into()));
        }
        match cr {
            Some(cr) if cr + 2 > V1_MAX_BYTES => {
                return Err(invalid("bad v1 header: longer than 107 bytes".into()))
            }
            Some(cr) if input.len() < cr + 2 => return Ok(None),
            Some(cr) if input[cr + 1] != b'\n' => {
                return Err(invalid("bad v1 header: CR without LF".into()))
            }
            Some(cr) => cr + 2,
            None if input.len() >= V1_MAX_BYTES => {
                return Err(invalid("bad v1 header: no CRLF in 107 bytes".into()))
            }
            None => return Ok(None),
        }
    };
    let header = &input[..end];
    let parsed: HeaderResult<'_> = if header[0] == b'\r' {
        v2::Header::try_from(header).into()
    } else {
        v1::Header::try_from(header).into()
    };
    let addrs = match parsed {
        HeaderResult::V1(Ok(h)) => match h.addresses {
            v1::Addresses::Tcp4(a) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            v1::Addresses::Tcp6(a) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            v1::Addresses::Unknown => None,
        },
        HeaderResult::V2(Ok(h)) => match (h.command, h.addresses) {
            (v2::Command::Local, _) => None,
            (_, v2::Addresses::IPv4(a)) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            (_, v2::Addresses::IPv6(a)) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            (_, v2::Addresses::Unspecified | v2::Addresses::Unix(_)) => None,
        },
        HeaderResult::V1(Err(e)) => return Err(invalid(format!("bad v1 header: {e}"))),
        HeaderResult::V2(Err(e)) => return Err(invalid(format!("bad v2 header: {e}"))),
    };
    Ok(Some(Header {
        len: end,
        source: addrs.map(|a| a.0),
        destination: addrs.map(|a| a.1),
    }))
}
