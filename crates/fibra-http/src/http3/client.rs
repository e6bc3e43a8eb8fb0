//! HTTP/3's client side, as far as a load generator or a test needs it
//! ([`Http3Client`]): the client's control stream with its SETTINGS, requests whose HEADERS
//! frame is encoded once ([`EncodedRequest`]) and sent on a new stream each time, and the
//! response read back ([`ResponseStream`]): its status and fields, then its body.
//!
//! Like the server it advertises no dynamic table, so the server's responses must use only
//! the static table and literals, which is what [`crate::serve_http3_connection`] sends.
//! Server push is never enabled (no MAX_PUSH_ID is sent). A fiber of the client's reads the
//! server's unidirectional streams: its control stream for GOAWAY (after which
//! [`Http3Client::send`] refuses new requests, as RFC 9114 §5.2 asks: open a new connection),
//! the rest (QPACK streams a server may open) to be discarded.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fibra_quic::{Connection, RecvStream, SendStream};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};

use super::conn::spawn_on;
use super::frame::{self, Carrier, FrameKind};
use super::incoming::{Fail, Incoming, Next};
use super::qpack::{Decoder, Encoder, Name, Pseudo, Value};
use super::settings::{put_settings, Settings as H3Settings};
use super::stream_type::{self, StreamType};
use super::H3Error;

/// The largest response field section read (the client's SETTINGS_MAX_FIELD_SECTION_SIZE).
const MAX_RESPONSE_SECTION: u64 = 64 * 1024;

/// No GOAWAY yet (stream ids are below 2⁶²).
const NO_GOAWAY: u64 = u64::MAX;

/// One HTTP/3 connection's client side. Dropping it closes the connection (H3_NO_ERROR).
pub struct Http3Client {
    conn: Connection,
    /// The id in the server's GOAWAY ([`NO_GOAWAY`] before one).
    goaway: Arc<AtomicU64>,
    /// The client's control stream: open as long as the connection (closing it is an error
    /// for the server, §6.2.1).
    _control: SendStream,
}

impl std::fmt::Debug for Http3Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http3Client")
            .field("conn", &self.conn)
            .finish()
    }
}

impl Http3Client {
    /// Starts HTTP/3 on `conn` (a QUIC connection made with ALPN `h3`): opens the control
    /// stream with the client's SETTINGS, and spawns a fiber on this worker that reads the
    /// server's unidirectional streams.
    pub fn new(conn: Connection) -> io::Result<Http3Client> {
        let mut control = conn.open_uni()?;
        let mut opening = Vec::with_capacity(16);
        stream_type::put(&mut opening, StreamType::Control);
        let ours = H3Settings {
            max_field_section_size: Some(MAX_RESPONSE_SECTION),
            ..H3Settings::default()
        };
        put_settings(&mut opening, &ours, None);
        control.write_all(&opening)?;
        let (read, goaway) = (conn.clone(), Arc::new(AtomicU64::new(NO_GOAWAY)));
        let told = goaway.clone();
        spawn_on(fibra::current_worker(), move || {
            read_unidirectional(&read, &told)
        });
        Ok(Http3Client {
            conn,
            goaway,
            _control: control,
        })
    }

    /// The stream id in the server's GOAWAY, once one came: requests on streams from it on
    /// were not processed (the server refuses them with H3_REQUEST_REJECTED) and may be sent
    /// again on a new connection.
    pub fn goaway(&self) -> Option<u64> {
        Some(self.goaway.load(Ordering::Acquire)).filter(|&id| id != NO_GOAWAY)
    }

    /// Whether a request that failed with `e` before any of its response arrived (`id`:
    /// its stream, `None` if [`send`] refused it) was not processed by the server, and may be
    /// sent again on a new connection (RFC 9114 §4.1.1, §5.2):
    /// - refused with H3_REQUEST_REJECTED, or on a stream at or past the server's GOAWAY;
    /// - refused by [`send`] after a GOAWAY, or failed in it on a connection closed as
    ///   below;
    /// - cut by the server closing the connection gracefully (H3_NO_ERROR): a server closes
    ///   so after answering the requests it took (fibra's waits until the client has
    ///   acknowledged their answers), so one with no answer was not taken. Its RESET_STREAM
    ///   and GOAWAY may come in the packet that carries the close, which ends the streams
    ///   before they are read.
    ///
    /// [`send`]: Http3Client::send
    pub fn unprocessed(&self, id: Option<u64>, e: &io::Error) -> bool {
        let code = fibra_quic::Error::of(e).and_then(fibra_quic::Error::code);
        let closed_gracefully = matches!(
            fibra_quic::Error::of(e),
            Some(fibra_quic::Error::ConnectionLost { .. })
        ) && code == Some(H3Error::NoError.code());
        let goaway = self.goaway();
        closed_gracefully
            || match id {
                None => goaway.is_some() && e.kind() == io::ErrorKind::ConnectionAborted,
                Some(id) => {
                    code == Some(H3Error::RequestRejected.code()) || goaway.is_some_and(|g| id >= g)
                }
            }
    }

    /// The QUIC connection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Sends `request` on a new stream, with `body` as one DATA frame when it is not empty,
    /// and ends the stream. Parks while the server allows no more streams (its stream limit).
    /// After the server's GOAWAY it sends nothing and fails with `ConnectionAborted`.
    pub fn send(&self, request: &EncodedRequest, body: &[u8]) -> io::Result<ResponseStream> {
        if let Some(id) = self.goaway() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!("the server sent GOAWAY ({id}): requests go on a new connection"),
            ));
        }
        let (mut send, recv) = self.conn.open_bi()?;
        if body.is_empty() {
            send.write_all(&request.frame)?;
        } else {
            let mut out = Vec::with_capacity(request.frame.len() + 16 + body.len());
            out.extend_from_slice(&request.frame);
            frame::put_data_head(&mut out, body.len() as u64);
            out.extend_from_slice(body);
            send.write_all(&out)?;
        }
        send.finish()?;
        Ok(ResponseStream {
            incoming: Incoming::new(recv, Carrier::Request),
            decoder: Decoder::new(MAX_RESPONSE_SECTION),
            in_body: false,
            _send: send,
        })
    }
}

impl Drop for Http3Client {
    fn drop(&mut self) {
        // Also ends the fiber reading the server's streams, which holds a clone.
        self.conn.close(H3Error::NoError.code(), b"");
    }
}

/// Reads each unidirectional stream the server opens until the connection closes: its
/// control stream's GOAWAY is noted in `goaway`, everything else discarded.
fn read_unidirectional(conn: &Connection, goaway: &Arc<AtomicU64>) {
    while let Ok(recv) = conn.accept_uni() {
        let goaway = goaway.clone();
        spawn_on(fibra::current_worker(), move || {
            let mut incoming = Incoming::new(recv, Carrier::Control);
            if let Ok(Some(StreamType::Control)) = incoming.stream_type() {
                while let Ok(next) = incoming.next(MAX_RESPONSE_SECTION) {
                    match next {
                        Next::Frame(FrameKind::GoAway, payload) => {
                            if let Some((id, _)) = super::varint::decode(&payload) {
                                // Later GOAWAYs may only lower the id (§5.2).
                                goaway.fetch_min(id, Ordering::AcqRel);
                            }
                        }
                        Next::End => break,
                        _ => {}
                    }
                }
                return;
            }
            let mut sink = [0u8; 1024];
            while let Ok(n) = incoming.recv_mut().read(&mut sink) {
                if n == 0 {
                    break;
                }
            }
        });
    }
}

/// A request's HEADERS frame, encoded once (static-table references and literals, no
/// Huffman coding) to be sent any number of times.
#[derive(Debug, Clone)]
pub struct EncodedRequest {
    frame: Vec<u8>,
}

impl EncodedRequest {
    /// Encodes `method` on `uri` (absolute, `https`: its authority and path become the
    /// pseudo-header fields) with `headers`. Connection-specific fields (RFC 9114 §4.2) are
    /// refused, as is a URI without an authority.
    pub fn new(method: &Method, uri: &Uri, headers: &HeaderMap) -> io::Result<EncodedRequest> {
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let authority = uri
            .authority()
            .ok_or_else(|| invalid(format!("{uri}: no authority")))?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        for (name, value) in headers {
            if crate::request_fields::is_connection_specific(name, value.as_bytes()) {
                return Err(invalid(format!("{name}: a connection-specific field")));
            }
        }
        let encoder = Encoder::new();
        let mut frame = Vec::with_capacity(64);
        frame::put_headers(&mut frame, |out| {
            encoder.prefix(out);
            encoder.pseudo(out, Pseudo::Method, method.as_str().as_bytes());
            encoder.pseudo(
                out,
                Pseudo::Scheme,
                uri.scheme_str().unwrap_or("https").as_bytes(),
            );
            encoder.pseudo(out, Pseudo::Authority, authority.as_str().as_bytes());
            encoder.pseudo(out, Pseudo::Path, path.as_bytes());
            for (name, value) in headers {
                encoder.field(out, name, value.as_bytes(), value.is_sensitive());
            }
        });
        Ok(EncodedRequest { frame })
    }

    /// The HEADERS frame's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.frame
    }
}

/// A response's status and fields.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// The final status (informational responses are skipped).
    pub status: StatusCode,
    /// The response's fields.
    pub headers: HeaderMap,
}

/// The response to a request sent with [`Http3Client::send`]: [`read_head`] first, then
/// [`read_body`] until it gives 0.
///
/// [`read_head`]: ResponseStream::read_head
/// [`read_body`]: ResponseStream::read_body
pub struct ResponseStream {
    incoming: Incoming,
    decoder: Decoder,
    in_body: bool,
    /// The request's sending half, finished; kept so the stream is not reset before the
    /// response has been read.
    _send: SendStream,
}

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream")
            .field("in_body", &self.in_body)
            .finish()
    }
}

impl ResponseStream {
    /// The request stream's id (see [`Http3Client::unprocessed`]).
    pub fn id(&self) -> u64 {
        u64::from(self._send.id())
    }

    /// Reads the response's head, skipping 1xx responses. Fails on a stream that ends or
    /// is reset first, and on a malformed section (`InvalidData`).
    pub fn read_head(&mut self) -> io::Result<ResponseHead> {
        loop {
            let section = match self.incoming.next(MAX_RESPONSE_SECTION).map_err(fail)? {
                // Copied out: decoding needs the client's decoder too.
                Next::Headers(section) => self.incoming.section(section).to_vec(),
                Next::End => return Err(malformed("the stream ended before a response")),
                Next::Data | Next::Frame(..) => {
                    return Err(malformed("a frame before the response's HEADERS"))
                }
            };
            let head = self.decode(&section)?;
            if !head.status.is_informational() {
                self.in_body = true;
                return Ok(head);
            }
        }
    }

    /// Reads body bytes into `buf`; 0 at the end of the body (trailers, if any, are read
    /// and dropped). Call after [`ResponseStream::read_head`].
    pub fn read_body(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.next_body_bytes(|incoming| incoming.read_data(buf))
    }

    /// [`ResponseStream::read_body`] for a reader that only counts the body: drops up to
    /// `max` body bytes without copying them anywhere and returns how many; 0 at the end of
    /// the body.
    pub fn discard_body(&mut self, max: usize) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        self.next_body_bytes(|incoming| incoming.discard_data(max))
    }

    /// The next body bytes `take` gets from the current DATA frame, moving on to the next
    /// frame while it gets none; 0 at the end of the body.
    fn next_body_bytes(
        &mut self,
        mut take: impl FnMut(&mut Incoming) -> Result<usize, Fail>,
    ) -> io::Result<usize> {
        if !self.in_body {
            return Ok(0);
        }
        loop {
            let n = take(&mut self.incoming).map_err(fail)?;
            if n > 0 {
                return Ok(n);
            }
            match self.incoming.next(MAX_RESPONSE_SECTION).map_err(fail)? {
                Next::Data => continue,
                Next::Headers(_) | Next::End => {
                    self.in_body = false;
                    return Ok(0);
                }
                Next::Frame(..) => return Err(malformed("a frame a request stream cannot carry")),
            }
        }
    }

    /// The stream's receiving half.
    pub fn recv_mut(&mut self) -> &mut RecvStream {
        self.incoming.recv_mut()
    }

    fn decode(&mut self, section: &[u8]) -> io::Result<ResponseHead> {
        let mut status = None;
        let mut headers = HeaderMap::new();
        let mut bad = false;
        self.decoder
            .decode(section, |name, value: Value<'_>| match name {
                Name::Pseudo(Pseudo::Status) if status.is_none() => {
                    status = StatusCode::from_bytes(value.as_bytes()).ok();
                    bad |= status.is_none();
                }
                Name::Header(name) => match HeaderValue::from_bytes(value.as_bytes()) {
                    Ok(v) => {
                        headers.append::<HeaderName>(name.clone(), v);
                    }
                    Err(_) => bad = true,
                },
                _ => bad = true,
            })
            .map_err(|e| malformed(&format!("the response's field section: {e:?}")))?;
        match status {
            Some(status) if !bad => Ok(ResponseHead { status, headers }),
            _ => Err(malformed(
                "a response without a valid :status or with a bad field",
            )),
        }
    }
}

/// A reading failure as an `io::Error`.
fn fail(f: Fail) -> io::Error {
    match f {
        Fail::Io(e) => e,
        Fail::Protocol(e) => malformed(&format!("the server broke HTTP/3: {e:?}")),
    }
}

fn malformed(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("HTTP/3 response: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of an encoded request's HEADERS frame, as our decoder reads them back.
    fn fields(request: &EncodedRequest) -> Vec<(String, String)> {
        let bytes = request.as_bytes();
        let head = frame::parse_head(bytes, 1 << 16).unwrap().unwrap();
        assert_eq!(head.head_len + head.len as usize, bytes.len(), "one frame");
        let mut out = Vec::new();
        Decoder::new(u64::MAX)
            .decode(&bytes[head.head_len..], |name, value| {
                let name = match name {
                    Name::Pseudo(p) => p.as_str().unwrap().to_string(),
                    Name::Header(h) => h.as_str().to_string(),
                    Name::Invalid => panic!("an invalid name"),
                };
                out.push((name, String::from_utf8_lossy(value.as_bytes()).into_owned()));
            })
            .unwrap();
        out
    }

    #[test]
    fn a_request_reads_back_as_written() {
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_static("*/*"));
        headers.insert("x-trace", HeaderValue::from_static("abc"));
        let uri: Uri = "https://example.test:8443/a/b?c=d".parse().unwrap();
        let request = EncodedRequest::new(&Method::POST, &uri, &headers).unwrap();
        let got = fields(&request);
        let want = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "example.test:8443"),
            (":path", "/a/b?c=d"),
            ("accept", "*/*"),
            ("x-trace", "abc"),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn connection_specific_fields_and_relative_uris_are_refused() {
        let uri: Uri = "https://h/".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("connection", HeaderValue::from_static("close"));
        let e = EncodedRequest::new(&Method::GET, &uri, &headers).unwrap_err();
        assert!(e.to_string().contains("connection"), "{e}");
        let mut headers = HeaderMap::new();
        headers.insert("te", HeaderValue::from_static("trailers"));
        assert!(EncodedRequest::new(&Method::GET, &uri, &headers).is_ok());
        let relative: Uri = "/only/a/path".parse().unwrap();
        let e = EncodedRequest::new(&Method::GET, &relative, &HeaderMap::new()).unwrap_err();
        assert!(e.to_string().contains("no authority"), "{e}");
    }
}
