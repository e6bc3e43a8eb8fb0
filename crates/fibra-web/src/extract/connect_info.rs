//! [`ConnectInfo`]: the peer's address.

use std::net::SocketAddr;

use fibra_http::http::StatusCode;

use super::rejection::ConnectInfoRejection;
use super::{FromRequestParts, Parts};

/// The client's address: the connection's peer (behind a balancer speaking the PROXY
/// protocol, the address the balancer reports). An extension of type `ConnectInfo<T>` (a test
/// client's, a middleware's) takes precedence, as axum's `MockConnectInfo`. `500` when neither
/// is known (a request made in process without an address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectInfo<T>(pub T);

impl<T> std::ops::Deref for ConnectInfo<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<S> FromRequestParts<S> for ConnectInfo<SocketAddr> {
    type Rejection = ConnectInfoRejection;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        if let Some(info) = parts.extensions().get::<ConnectInfo<SocketAddr>>() {
            return Ok(*info);
        }
        parts.peer_addr().map(ConnectInfo).ok_or_else(|| {
            ConnectInfoRejection::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The peer's address is not known",
            )
        })
    }
}
