//! Header fields across the proxy: the request head sent upstream (hop-by-hop fields out,
//! `X-Forwarded-*` and `Forwarded` in) and the response head taken back (hop-by-hop fields,
//! framing, `Date` and `Server` out).
//!
//! Hop-by-hop fields (RFC 9110 §7.6.1) describe one connection and are never forwarded:
//! `Connection` and every field it names, `Keep-Alive`, `TE`, `Trailer`,
//! `Transfer-Encoding`, `Upgrade`, and `Proxy-*` (`Proxy-Connection`, `Proxy-Authorization`,
//! `Proxy-Authenticate`). The framing (`Content-Length` or chunked) is the proxy's own on each
//! side. `Expect` is not forwarded either: the proxy sends the body at once, and answers
//! `100 Continue` to its client itself when it starts reading the body.
//!
//! The request keeps the client's `Host` (as HAProxy, Caddy and Envoy do; nginx's default is
//! the upstream's address): virtual hosts and absolute redirects of the application then see
//! the name the client used. A client without `Host` (HTTP/1.0) gets the upstream's.
//!
//! Incoming `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host` and `Forwarded` are
//! dropped and set afresh unless the proxy trusts its clients to be proxies themselves
//! ([`crate::Proxy::trust_forwarded`]); then the client's address is appended to the lists
//! and the first proxy's proto and host are kept.
//!
//! Like nginx, the response's `Date` and `Server` are the proxy's own, not the upstream's.

use std::cell::RefCell;
use std::io::Write;
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};

use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};

use fibra_http::client::MAX_HEADERS;
use fibra_http::request::Request;

/// How the request body goes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyOut {
    /// No body, no framing field.
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// What the `X-Forwarded-*` and `Forwarded` fields say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Forwarding<'a> {
    /// The client's address.
    pub(crate) peer: Option<SocketAddr>,
    /// `http` or `https`: how the client reached the proxy.
    pub(crate) proto: &'a str,
    /// Keep and extend the client's own forwarding fields.
    pub(crate) trust: bool,
}

/// Whether a field is hop-by-hop (or one the proxy writes itself) and never copied as is.
fn is_connection_field(name: &HeaderName) -> bool {
    let n = name.as_str();
    name == header::CONNECTION
        || name == header::TE
        || name == header::TRAILER
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || name == header::CONTENT_LENGTH
        || n == "keep-alive"
        || n.starts_with("proxy-")
}

/// The field names a message's `Connection` fields list (lower case), if any.
fn connection_options(headers: &HeaderMap) -> Vec<String> {
    let mut names = Vec::new();
    for v in headers.get_all(header::CONNECTION) {
        for token in v.as_bytes().split(|&b| b == b',') {
            let t = token.trim_ascii();
            if !t.is_empty() {
                names.push(String::from_utf8_lossy(t).to_ascii_lowercase());
            }
        }
    }
    names
}

/// Appends the request head for the upstream: the request line with `target`, the client's
/// end-to-end fields, the forwarding fields and the body's framing.
pub(crate) fn put_request_head(
    out: &mut Vec<u8>,
    req: &Request,
    target: &str,
    default_host: &str,
    body: BodyOut,
    fwd: &Forwarding<'_>,
    upgrade: Option<&HeaderValue>,
) {
    let headers = req.headers();
    out.extend_from_slice(req.method().as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    // An absolute-form target names the host (RFC 9112 §3.2.2); else `Host`.
    let host = match req.uri().authority() {
        Some(a) => a.as_str().as_bytes(),
        None => headers
            .get(header::HOST)
            .map_or(default_host.as_bytes(), |h| h.as_bytes()),
    };
    out.extend_from_slice(host);
    out.extend_from_slice(b"\r\n");
    let named = if headers.contains_key(header::CONNECTION) {
        connection_options(headers)
    } else {
        Vec::new()
    };
    let (mut xff, mut fwd_list, mut xfp, mut xfh) = (None, None, None, None);
    for (name, value) in headers {
        if name == header::HOST || name == header::EXPECT || is_connection_field(name) {
            continue;
        }
        let n = name.as_str();
        if !named.is_empty() && named.iter().any(|c| c == n) {
            continue;
        }
        match n {
            "x-forwarded-for" => {
                xff = Some(join(xff, value));
                continue;
            }
            "forwarded" => {
                fwd_list = Some(join(fwd_list, value));
                continue;
            }
            "x-forwarded-proto" => {
                xfp.get_or_insert(value);
                continue;
            }
            "x-forwarded-host" => {
                xfh.get_or_insert(value);
                continue;
            }
            _ => {}
        }
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    put_forwarding(out, fwd, host, xff, fwd_list, xfp, xfh);
    if let Some(protocol) = upgrade {
        out.extend_from_slice(b"Upgrade: ");
        out.extend_from_slice(protocol.as_bytes());
        out.extend_from_slice(b"\r\nConnection: upgrade\r\n");
    }
    match body {
        BodyOut::None => {}
        BodyOut::Length(n) => {
            let _ = write!(out, "Content-Length: {n}\r\n");
        }
        BodyOut::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// The protocol a request asks to switch to, to be passed on: its `Upgrade` field, if the
/// request is HTTP/1.1 and its `Connection` field names `upgrade` (RFC 9110 §7.8). The
/// proxy then forwards `Upgrade` and `Connection: upgrade`, as nginx does when configured
/// with `proxy_set_header Upgrade $http_upgrade` for WebSockets.
pub(crate) fn upgrade_request(req: &Request) -> Option<&HeaderValue> {
    if req.version() != http::Version::HTTP_11 {
        return None;
    }
    let protocol = req.headers().get(header::UPGRADE)?;
    connection_options(req.headers())
        .iter()
        .any(|o| o == "upgrade")
        .then_some(protocol)
}

/// Joins repeated list fields with `, ` (RFC 9110 §5.3).
fn join(prior: Option<Vec<u8>>, value: &HeaderValue) -> Vec<u8> {
    match prior {
        None => value.as_bytes().to_vec(),
        Some(mut v) => {
            v.extend_from_slice(b", ");
            v.extend_from_slice(value.as_bytes());
            v
        }
    }
}

/// Writes `X-Forwarded-For`, `-Proto`, `-Host` and `Forwarded`; the client's own values
/// (`xff`, …) are kept only when trusted.
fn put_forwarding(
    out: &mut Vec<u8>,
    fwd: &Forwarding<'_>,
    host: &[u8],
    xff: Option<Vec<u8>>,
    forwarded: Option<Vec<u8>>,
    xfp: Option<&HeaderValue>,
    xfh: Option<&HeaderValue>,
) {
    let ip = fwd.peer.map(|p| p.ip());
    out.extend_from_slice(b"X-Forwarded-For: ");
    if let (true, Some(prior)) = (fwd.trust, &xff) {
        out.extend_from_slice(prior);
        out.extend_from_slice(b", ");
    }
    match ip {
        Some(IpAddr::V4(ip)) => put_ipv4(out, ip),
        Some(ip) => {
            let _ = write!(out, "{ip}");
        }
        None => out.extend_from_slice(b"unknown"),
    }
    out.extend_from_slice(b"\r\nX-Forwarded-Proto: ");
    match (fwd.trust, xfp) {
        (true, Some(v)) => out.extend_from_slice(v.as_bytes()),
        _ => out.extend_from_slice(fwd.proto.as_bytes()),
    }
    out.extend_from_slice(b"\r\nX-Forwarded-Host: ");
    match (fwd.trust, xfh) {
        (true, Some(v)) => out.extend_from_slice(v.as_bytes()),
        _ => out.extend_from_slice(host),
    }
    out.extend_from_slice(b"\r\nForwarded: ");
    if let (true, Some(prior)) = (fwd.trust, &forwarded) {
        out.extend_from_slice(prior);
        out.extend_from_slice(b", ");
    }
    // RFC 7239 §4, §6: an IPv6 address is bracketed and quoted; a host with a port (its `:`
    // is not a token character) is quoted.
    match ip {
        Some(IpAddr::V4(ip)) => {
            out.extend_from_slice(b"for=");
            put_ipv4(out, ip);
        }
        Some(IpAddr::V6(ip)) => {
            let _ = write!(out, "for=\"[{ip}]\"");
        }
        None => out.extend_from_slice(b"for=unknown"),
    }
    out.extend_from_slice(b";host=");
    if host.iter().all(|&b| is_tchar(b)) && !host.is_empty() {
        out.extend_from_slice(host);
    } else {
        out.push(b'"');
        for &b in host {
            if b == b'"' || b == b'\\' {
                out.push(b'\\');
            }
            out.push(b);
        }
        out.push(b'"');
    }
    out.extend_from_slice(b";proto=");
    out.extend_from_slice(fwd.proto.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends `ip` in dotted decimal: what `write!(out, "{ip}")` does, without the formatting
/// machinery (which was about 1% of the proxy's CPU, twice a request).
fn put_ipv4(out: &mut Vec<u8>, ip: std::net::Ipv4Addr) {
    for (i, b) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        if b >= 100 {
            out.push(b'0' + b / 100);
        }
        if b >= 10 {
            out.push(b'0' + b / 10 % 10);
        }
        out.push(b'0' + b % 10);
    }
}

/// A token character (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The parts of an upstream response head the proxy's own response is made of.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    pub(crate) status: StatusCode,
    /// End-to-end fields other than `Content-Type` (empty map: none, nothing allocated).
    pub(crate) headers: HeaderMap,
    /// `Content-Type`, carried with the body (no map needed for the common response).
    pub(crate) content_type: Option<HeaderValue>,
    /// The upstream's `Content-Length`, for the answer to `HEAD`.
    pub(crate) content_length: Option<u64>,
    /// The upstream's `Upgrade` field (kept only for a `101`).
    pub(crate) upgrade: Option<HeaderValue>,
}

thread_local! {
    /// The last `Content-Type` value made on this worker: the next equal one is a clone of it
    /// (a reference count) instead of a new allocation.
    static LAST_TYPE: RefCell<Option<HeaderValue>> = const { RefCell::new(None) };
}

fn content_type(v: &[u8]) -> Option<HeaderValue> {
    LAST_TYPE.with_borrow_mut(|last| {
        if let Some(t) = last {
            if t.as_bytes() == v {
                return Some(t.clone());
            }
        }
        let t = HeaderValue::from_bytes(v).ok()?;
        *last = Some(t.clone());
        Some(t)
    })
}

/// Takes apart a complete final response head (as [`fibra_http::client::ResponseParser`] found
/// it). `Err` names what is wrong with a field the parser does not look at.
pub(crate) fn response_head(head: &[u8]) -> Result<ResponseHead, &'static str> {
    let mut slots = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut []);
    match fibra_http::client::parser_config().parse_response_with_uninit_headers(
        &mut parsed,
        head,
        &mut slots,
    ) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("invalid response head"),
    }
    let status = parsed
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or("invalid status code")?;
    let mut out = ResponseHead {
        status,
        headers: HeaderMap::new(),
        content_type: None,
        content_length: None,
        upgrade: None,
    };
    let mut named: Vec<&[u8]> = Vec::new();
    for h in parsed.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            named.extend(
                h.value
                    .split(|&b| b == b',')
                    .map(<[u8]>::trim_ascii)
                    .filter(|t| !t.is_empty()),
            );
        }
    }
    for h in parsed.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| "invalid field name")?;
        if name == header::CONTENT_LENGTH {
            // Checked by the parser; kept for `HEAD`, and for a 304 as the server sends it.
            let n = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.split(',').next())
                .and_then(|v| v.trim().parse().ok());
            out.content_length = out.content_length.or(n);
            if status != StatusCode::NOT_MODIFIED {
                continue;
            }
        }
        if name == header::UPGRADE && status == StatusCode::SWITCHING_PROTOCOLS {
            out.upgrade = HeaderValue::from_bytes(h.value).ok();
            continue;
        }
        if is_connection_field(&name) && name != header::CONTENT_LENGTH
            || name == header::DATE
            || name == header::SERVER
            || named
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name.as_str().as_bytes()))
        {
            continue;
        }
        if name == header::CONTENT_TYPE
            && out.content_type.is_none()
            && !out.headers.contains_key(&name)
        {
            out.content_type = Some(content_type(h.value).ok_or("invalid Content-Type")?);
            continue;
        }
        let value = HeaderValue::from_bytes(h.value).map_err(|_| "invalid field value")?;
        if name == header::CONTENT_TYPE {
            // A second one: both go in the map, in order.
            if let Some(first) = out.content_type.take() {
                out.headers.append(header::CONTENT_TYPE, first);
            }
        }
        out.headers.append(name, value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fibra_http::body::Body;

    fn head_of(req: http::Request<Body>, fwd: Forwarding<'_>, body: BodyOut) -> String {
        let req = Request::from(req);
        let mut out = Vec::new();
        put_request_head(&mut out, &req, "/t?q", "up:9", body, &fwd, None);
        String::from_utf8(out).unwrap()
    }

    const PEER: Forwarding<'static> = Forwarding {
        peer: Some(SocketAddr::V4(std::net::SocketAddrV4::new(
            std::net::Ipv4Addr::new(192, 0, 2, 7),
            5555,
        ))),
        proto: "http",
        trust: false,
    };

    #[test]
    fn ipv4_addresses_are_written_as_display_writes_them() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "192.0.2.7",
            "10.20.100.255",
            "255.9.99.100",
        ] {
            let mut out = Vec::new();
            put_ipv4(&mut out, ip.parse().unwrap());
            assert_eq!(out, ip.as_bytes());
        }
    }

    #[test]
    fn request_head_drops_hop_by_hop_and_adds_forwarding() {
        let req = http::Request::post("/api/t?q")
            .header("host", "example.com:8080")
            .header("connection", "keep-alive, X-Secret")
            .header("x-secret", "1")
            .header("keep-alive", "timeout=5")
            .header("te", "trailers")
            .header("trailer", "x-t")
            .header("transfer-encoding", "chunked")
            .header("upgrade", "websocket")
            .header("proxy-authorization", "Basic eA==")
            .header("proxy-connection", "keep-alive")
            .header("expect", "100-continue")
            .header("content-length", "5")
            .header("x-forwarded-for", "6.6.6.6")
            .header("forwarded", "for=6.6.6.6")
            .header("accept", "*/*")
            .header("accept", "text/html")
            .body(Body::empty())
            .unwrap();
        let head = head_of(req, PEER, BodyOut::Chunked);
        assert_eq!(
            head,
            "POST /t?q HTTP/1.1\r\nHost: example.com:8080\r\naccept: */*\r\naccept: text/html\r\n\
             X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n\
             X-Forwarded-Host: example.com:8080\r\n\
             Forwarded: for=192.0.2.7;host=\"example.com:8080\";proto=http\r\n\
             Transfer-Encoding: chunked\r\n\r\n"
        );
    }

    #[test]
    fn trusted_forwarding_fields_are_extended() {
        let req = http::Request::get("/")
            .header("x-forwarded-for", "203.0.113.1")
            .header("x-forwarded-for", "203.0.113.2")
            .header("x-forwarded-proto", "https")
            .header("x-forwarded-host", "outer.example")
            .header("forwarded", "for=203.0.113.1")
            .body(Body::empty())
            .unwrap();
        let fwd = Forwarding {
            peer: Some("[2001:db8::1]:80".parse().unwrap()),
            trust: true,
            ..PEER
        };
        let head = head_of(req, fwd, BodyOut::Length(0));
        assert!(
            head.starts_with("GET /t?q HTTP/1.1\r\nHost: up:9\r\n"),
            "{head}"
        );
        assert!(head.contains("X-Forwarded-For: 203.0.113.1, 203.0.113.2, 2001:db8::1\r\n"));
        assert!(head.contains("X-Forwarded-Proto: https\r\n"));
        assert!(head.contains("X-Forwarded-Host: outer.example\r\n"));
        assert!(head.contains(
            "Forwarded: for=203.0.113.1, for=\"[2001:db8::1]\";host=\"up:9\";proto=http\r\n"
        ));
        assert!(head.ends_with("Content-Length: 0\r\n\r\n"));
    }

    #[test]
    fn response_head_keeps_end_to_end_fields() {
        let head = b"HTTP/1.1 201 Created\r\nDate: x\r\nServer: up\r\nContent-Type: text/plain\r\n\
            Content-Length: 5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: t=1\r\n\
            Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nProxy-Authenticate: x\r\nTrailer: x\r\n\
            Upgrade: h2c\r\nLocation: /x\r\n\r\n";
        let r = response_head(head).unwrap();
        assert_eq!(r.status, StatusCode::CREATED);
        assert_eq!(r.content_type.unwrap(), "text/plain");
        assert_eq!(r.content_length, Some(5));
        let names: Vec<_> = r
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("set-cookie", "a=1"),
                ("set-cookie", "b=2"),
                ("location", "/x")
            ]
        );
        let r =
            response_head(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\nETag: \"e\"\r\n\r\n")
                .unwrap();
        assert_eq!(r.headers["content-length"], "7");
        assert_eq!(r.headers["etag"], "\"e\"");
        let two =
            response_head(b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nContent-Type: c/d\r\n\r\n")
                .unwrap();
        assert!(two.content_type.is_none());
        assert_eq!(two.headers.get_all("content-type").iter().count(), 2);
    }
}
