//! The opening handshake (RFC 6455 §4.2): [`upgrade`] checks it, picks the subprotocol and
//! answers `101` (or `426`/`400`/`500`).

use http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Version};

use super::{Config, WebSocket};
use crate::request::Request;
use crate::response::{Response, ResponseBody};

/// Answers a WebSocket opening handshake: `101 Switching Protocols` with the
/// `Sec-WebSocket-Accept` the key calls for (and the subprotocol of `config`, if any), after
/// which `f` runs in the connection's fiber with the [`WebSocket`]. A request that is not a
/// valid handshake gets `426 Upgrade Required` (no `Upgrade: websocket`, or a version other
/// than 13, with `Sec-WebSocket-Version: 13`) or `400` (not a GET over HTTP/1.1, no
/// `Connection: upgrade`, a key that is not 16 bytes in base64); a subprotocol the client did
/// not offer, `500`.
pub fn upgrade(
    req: &Request,
    config: impl Into<Config>,
    f: impl FnOnce(WebSocket) + 'static,
) -> Response {
    let config = config.into();
    let key = match check_handshake(req.method(), req.version(), req.headers()) {
        Ok(key) => key,
        Err(resp) => return resp,
    };
    let protocol = match &config.protocol {
        None => None,
        Some(p) if protocols(req).any(|offered| offered == p) => {
            Some(HeaderValue::from_str(p).expect("an offered protocol is a valid header value"))
        }
        Some(_) => {
            return refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the WebSocket subprotocol chosen was not offered",
            )
        }
    };
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut resp = Response::new(ResponseBody::upgrade(move |io| {
        f(WebSocket::new(io, config))
    }));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(
        SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a valid header value"),
    );
    if let Some(p) = protocol {
        h.insert(SEC_WEBSOCKET_PROTOCOL, p);
    }
    resp
}

/// The subprotocols the client offers (`Sec-WebSocket-Protocol`, all its fields), in its
/// order of preference; pick one for [`Config::protocol`]. Values that are not tokens are
/// skipped.
pub fn protocols(req: &Request) -> impl Iterator<Item = &str> {
    req.headers()
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| is_token(t))
}

/// An RFC 9110 token.
fn is_token(s: &str) -> bool {
    const SPECIAL: &[u8] = b"!#$%&'*+-.^_`|~";
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || SPECIAL.contains(&b))
}

/// The `Sec-WebSocket-Key` of a valid opening handshake (RFC 6455 §4.2.1), or the error
/// response.
fn check_handshake(
    method: &Method,
    version: Version,
    headers: &HeaderMap,
) -> Result<String, Response> {
    if !has_token(headers, UPGRADE, "websocket") {
        let mut resp = refusal(StatusCode::UPGRADE_REQUIRED, "WebSocket upgrade required");
        resp.headers_mut()
            .insert(UPGRADE, HeaderValue::from_static("websocket"));
        resp.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("Upgrade"));
        return Err(resp);
    }
    if method != Method::GET || version != Version::HTTP_11 {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "a WebSocket handshake is a GET over HTTP/1.1",
        ));
    }
    if !has_token(headers, CONNECTION, "upgrade") {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "a WebSocket handshake needs Connection: Upgrade",
        ));
    }
    if headers.get(SEC_WEBSOCKET_VERSION).map(|v| v.as_bytes()) != Some(b"13") {
        let mut resp = refusal(
            StatusCode::UPGRADE_REQUIRED,
            "unsupported Sec-WebSocket-Version (13 is)",
        );
        resp.headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return Err(resp);
    }
    let mut keys = headers.get_all(SEC_WEBSOCKET_KEY).iter();
    match (keys.next(), keys.next()) {
        (Some(key), None) if is_key(key.as_bytes()) => {
            Ok(String::from_utf8_lossy(key.as_bytes()).into_owned())
        }
        _ => Err(refusal(
            StatusCode::BAD_REQUEST,
            "Sec-WebSocket-Key must be 16 bytes in base64",
        )),
    }
}

/// Whether a comma-separated header (any of its fields) has `token`, case-insensitively
/// (`Connection: keep-alive, Upgrade` has `upgrade`).
pub fn has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// 16 bytes in base64: 22 characters of the alphabet and `==`.
fn is_key(key: &[u8]) -> bool {
    key.len() == 24
        && key[22..] == *b"=="
        && key[..22]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn refusal(status: StatusCode, why: &'static str) -> Response {
    let mut resp = Response::new(why.into());
    *resp.status_mut() = status;
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    const GOOD: &[(&str, &str)] = &[
        ("upgrade", "websocket"),
        ("connection", "keep-alive, Upgrade"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];

    fn status(method: Method, version: Version, h: &[(&str, &str)]) -> Option<u16> {
        check_handshake(&method, version, &headers(h))
            .err()
            .map(|r| r.status().as_u16())
    }

    #[test]
    fn the_rfc_example_key_is_accepted() {
        let key = check_handshake(&Method::GET, Version::HTTP_11, &headers(GOOD)).unwrap();
        assert_eq!(
            tungstenite::handshake::derive_accept_key(key.as_bytes()),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn bad_handshakes_get_426_or_400() {
        let without = |name: &str| -> Vec<(&str, &str)> {
            GOOD.iter().copied().filter(|(k, _)| *k != name).collect()
        };
        let with = |name: &'static str, value: &'static str| -> Vec<(&'static str, &'static str)> {
            GOOD.iter()
                .copied()
                .map(|(k, v)| if k == name { (k, value) } else { (k, v) })
                .collect()
        };
        let (get, v11) = (Method::GET, Version::HTTP_11);
        assert_eq!(status(get.clone(), v11, &without("upgrade")), Some(426));
        assert_eq!(status(get.clone(), v11, &with("upgrade", "h2c")), Some(426));
        assert_eq!(
            status(get.clone(), v11, &with("sec-websocket-version", "8")),
            Some(426)
        );
        assert_eq!(
            status(get.clone(), v11, &without("sec-websocket-version")),
            Some(426)
        );
        assert_eq!(status(Method::POST, v11, GOOD), Some(400));
        assert_eq!(status(get.clone(), Version::HTTP_10, GOOD), Some(400));
        assert_eq!(status(get.clone(), v11, &without("connection")), Some(400));
        assert_eq!(
            status(get.clone(), v11, &without("sec-websocket-key")),
            Some(400)
        );
        assert_eq!(
            status(get.clone(), v11, &with("sec-websocket-key", "short")),
            Some(400)
        );
        assert_eq!(
            status(
                get.clone(),
                v11,
                &with("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ")
            ),
            Some(400)
        );
        let mut two = GOOD.to_vec();
        two.push(("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="));
        assert_eq!(status(get, v11, &two), Some(400));
    }
}
