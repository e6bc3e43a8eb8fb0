//! [`RequestIdLayer`]: gives every request an id — the client's `X-Request-Id` when it sent a
//! usable one, else a new one — that handlers read as `Extension<RequestId>` and that goes
//! back on the response as `X-Request-Id` (tower-http's `SetRequestId` and
//! `PropagateRequestId` in one layer).
//!
//! ```
//! use fibra_web::middleware::request_id::{RequestId, RequestIdLayer};
//! use fibra_web::routing::get;
//! use fibra_web::test::TestClient;
//! use fibra_web::{Extension, Router};
//!
//! fn show(Extension(id): Extension<RequestId>) -> String {
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
//! and a counter, in hex — unique within the process and, with high probability, across
//! processes. The request's header is set to the id kept or made, so the handler sees the
//! same value in the header and the extension. A response that already has the header (a
//! handler set one) keeps it. Put the layer with [`Router::layer`](crate::Router::layer)
//! (not `route_layer`) for `404`s, `405`s and rejections to carry the id too.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use fibra_http::http::header::{HeaderName, HeaderValue};

use super::Layer;
use crate::endpoint::Endpoint;

/// The header the id travels in: `x-request-id`.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest incoming id kept, in bytes.
pub const MAX_LEN: usize = 128;

/// A request's id, in the request's extensions (extract it with
/// [`Extension<RequestId>`](crate::Extension)).
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

/// A new id: the process's prefix and the next count.
fn make_id() -> HeaderValue {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| {
        // std's hasher keys are random per process; the clock and the pid add to them.
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(d.as_nanos());
        }
        h.finish()
    });
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    HeaderValue::try_from(format!("{prefix:016x}-{n:08x}")).expect("hex is a header value")
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
            req.extensions_mut().insert(RequestId(id.clone()));
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
