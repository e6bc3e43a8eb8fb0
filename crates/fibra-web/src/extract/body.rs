//! The body extractors (`Bytes`, `Vec<u8>`, `String`) and [`DefaultBodyLimit`], the layer
//! that sets how much of a body they (and `Json`, `Form`) read.

use std::io;

use bytes::Bytes;
use fibra_http::http::StatusCode;

use super::rejection::{BytesRejection, StringRejection};
use super::{FromRequest, Parts};
use crate::endpoint::Endpoint;
use crate::layer::Layer;

/// The largest body the body extractors read, as a layer: `Router::layer(DefaultBodyLimit::
/// max(n))` for every route so far, or on one method router. Without it the limit is 2 MiB
/// (as axum); bigger bodies get `413`. The innermost layer wins. A router serving a limit
/// above the server's own `Settings::max_body_bytes` raises the server's to it.
///
/// A handler taking the [`Request`](fibra_http::Request) reads its body itself and only the
/// server's limit applies.
#[derive(Debug, Clone, Copy)]
pub struct DefaultBodyLimit {
    limit: Option<usize>,
}

impl DefaultBodyLimit {
    /// At most `limit` bytes.
    pub fn max(limit: usize) -> Self {
        DefaultBodyLimit { limit: Some(limit) }
    }
    /// No limit of the extractors' own (the server's `max_body_bytes` still applies).
    pub fn disable() -> Self {
        DefaultBodyLimit { limit: None }
    }
}

impl Layer for DefaultBodyLimit {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let limit = self.limit;
        Endpoint::new(move |req, route, state| {
            route.set_body_limit(limit);
            inner.call(req, route, state)
        })
    }
    fn body_limit(&self) -> Option<Option<usize>> {
        Some(self.limit)
    }
}

/// Reads the body whole, within the route's limit.
pub(crate) fn read_body(req: &mut Parts<'_>) -> Result<Vec<u8>, BytesRejection> {
    let limit = req.route().body_limit().unwrap_or(usize::MAX);
    let too_big = || {
        BytesRejection::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Failed to buffer the request body: length limit exceeded",
        )
    };
    if req.body().remaining().is_some_and(|n| n > limit as u64) {
        return Err(too_big());
    }
    match req.body_mut().read_to_vec(limit) {
        Ok(v) => Ok(v),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(too_big()),
        Err(e) => Err(BytesRejection::new(
            StatusCode::BAD_REQUEST,
            format!("Failed to buffer the request body: {e}"),
        )),
    }
}

impl<S> FromRequest<S> for Bytes {
    type Rejection = BytesRejection;
    fn from_request(mut req: Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        read_body(&mut req).map(Bytes::from)
    }
}

impl<S> FromRequest<S> for Vec<u8> {
    type Rejection = BytesRejection;
    fn from_request(mut req: Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        read_body(&mut req)
    }
}

impl<S> FromRequest<S> for String {
    type Rejection = StringRejection;
    fn from_request(mut req: Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(&mut req)?;
        String::from_utf8(bytes).map_err(|e| {
            StringRejection::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "Request body didn't contain valid UTF-8: {}",
                    e.utf8_error()
                ),
            )
        })
    }
}
