//! [`RequestIdLayer`]: gives every request an id — the client's `X-Request-Id` when it sent a
//! usable one, else a new one — that handlers read as [`RequestId`] and that goes
//! back on the response as `X-Request-Id` (tower-http's `SetRequestId` and
//! `PropagateRequestId` in one layer).
//!
//! ```
//! use fibra_web::middleware::request_id::{RequestId, RequestIdLayer};
//! use fibra_web::routing::get;
//! use fibra_web::test::TestClient;
//! use fibra_web::Router;
//!
//! fn show(id: RequestId) -> String {
//!     format!("request {id}")
//! }
//!
//! let app: Router = Router::new().route("/", get(show)).layer(RequestIdLayer::new());
//! let client = TestClient::new(app);
//! let res = client.get("/").header("x-request-id", "abc-123").send();
//! assert_eq!(res.header("x-request-id"), Some("abc-123"));
//! assert_eq!(res.text(), "request abc-123");
//! ```
//!
//! An incoming id is kept when it is 1 to [`MAX_LEN`] bytes of letters, digits and
//! `-_.:+/=@` (enough for UUIDs, hex, base64 and the usual tracing formats); anything else
//! (too long, spaces, quotes, control bytes) is replaced, so that an id is always safe to log.
//! A made id is `PPPPPPPPPPPPPPPP-CCCCCCCC`: a random 64-bit prefix chosen once per process
//! and a count, in hex (at least 8 digits; each thread counts on its own, with its number in
//! the count's top bits, so workers on many cores share no counter) — unique within the
//! process and, with high probability, across processes. The request's header is set to the
//! id kept or made (as tower-http's `SetRequestId`; a proxied request carries it upstream),
//! and the [`RequestId`] extractor reads it from there. A response that already has the
//! header (a handler set one) keeps it. Put the layer with [`Router::layer`](crate::Router::layer)
//! (not `route_layer`) for `404`s, `405`s and rejections to carry the id too.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use fibra_http::http::header::{HeaderName, HeaderValue};

use fibra_http::http::StatusCode;

use super::Layer;
use crate::endpoint::Endpoint;
use crate::extract::{FromRequestParts, Parts};

/// The header the id travels in: `x-request-id`.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest incoming id kept, in bytes.
pub const MAX_LEN: usize = 128;

/// A request's id: an extractor (see its `FromRequestParts`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(HeaderValue);

impl RequestId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Only ids of visible ASCII are made or kept.
        self.0.to_str().unwrap_or_default()
    }
    /// The id as a header value.
    pub fn header_value(&self) -> &HeaderValue {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The layer: see the module docs.
#[derive(Debug, Clone, Default)]
pub struct RequestIdLayer {
    _private: (),
}

impl RequestIdLayer {
    /// The layer, with the header `X-Request-Id`.
    pub fn new() -> Self {
        RequestIdLayer::default()
    }
}

/// Whether `v` is an id worth keeping (see the module docs).
fn usable(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_LEN
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"-_.:+/=@".contains(&c))
}

/// A new id: the process's prefix and this thread's next count, in hex, without formatting
/// machinery (one allocation: the header value's bytes).
fn make_id() -> HeaderValue {
    static PREFIX: OnceLock<[u8; 17]> = OnceLock::new();
    static THREADS: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        /// This thread's number (in the top 24 bits) and count.
        static NEXT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    }
    let prefix = PREFIX.get_or_init(|| {
        // std's hasher keys are random per process; the clock and the pid add to them.
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(d.as_nanos());
        }
        let mut out = [b'-'; 17];
        put_hex(&mut out[..16], h.finish());
        out
    });
    let n = NEXT.with(|next| {
        let n = next
            .get()
            .unwrap_or_else(|| THREADS.fetch_add(1, Ordering::Relaxed) << 40);
        next.set(Some(n + 1));
        n
    });
    let digits = (64 - n.leading_zeros()).div_ceil(4).max(8) as usize;
    let mut buf = [0u8; 17 + 16];
    buf[..17].copy_from_slice(prefix);
    put_hex(&mut buf[17..17 + digits], n);
    HeaderValue::from_bytes(&buf[..17 + digits]).expect("hex is a header value")
}

/// Writes `n`'s lowest `out.len()` hex digits into `out`, most significant first.
fn put_hex(out: &mut [u8], mut n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in out.iter_mut().rev() {
        *b = DIGITS[(n & 0xf) as usize];
        n >>= 4;
    }
}

/// The request's id, as the layer kept or made it (read from the request's `X-Request-Id`,
/// which the layer sets). Without the layer, whatever the client sent; `500` when nothing.
impl<S> FromRequestParts<S> for RequestId {
    type Rejection = (StatusCode, &'static str);
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        match parts.headers().get(X_REQUEST_ID) {
            Some(v) => Ok(RequestId(v.clone())),
            None => Err((
                StatusCode::INTERNAL_SERVER_ERROR,
                "no request id: is RequestIdLayer on this route?",
            )),
        }
    }
}

impl Layer for RequestIdLayer {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        Endpoint::new(move |mut req, route, state| {
            let id = match req.headers().get(X_REQUEST_ID) {
                Some(v) if usable(v) => v.clone(),
                _ => {
                    let v = make_id();
                    req.headers_mut().insert(X_REQUEST_ID, v.clone());
                    v
                }
            };
            let mut res = inner.call(req, route, state);
            res.headers_mut().entry(X_REQUEST_ID).or_insert(id);
            res
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usable_ids() {
        for ok in [
            "a",
            "abc-123",
            "3f2a1b9c-0000-4000-8000-00000000abcd",
            "x/y+z==",
        ] {
            assert!(usable(&HeaderValue::from_static(ok)), "{ok}");
        }
        let long = "a".repeat(MAX_LEN + 1);
        for bad in ["", "a b", "a\"b", "a\tb", long.as_str()] {
            assert!(!usable(&HeaderValue::from_str(bad).unwrap()), "{bad:?}");
        }
    }

    #[test]
    fn made_ids_differ_and_are_usable() {
        let (a, b) = (make_id(), make_id());
        assert_ne!(a, b);
        assert!(usable(&a) && usable(&b));
        assert_eq!(
            a.as_bytes()[..17],
            b.as_bytes()[..17],
            "one prefix per process"
        );
    }
}
