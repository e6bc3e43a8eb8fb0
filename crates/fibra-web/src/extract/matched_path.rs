//! [`MatchedPath`]: the pattern of the route that matched (for metrics and logs, which should
//! not count `/users/1` and `/users/2` apart).

use std::sync::Arc;

use fibra_http::http::StatusCode;

use super::rejection::MatchedPathRejection;
use super::{FromRequestParts, Parts};

/// The matched route's pattern, e.g. `/users/{id}` (with a nested router's prefix). A
/// fallback has none: `500`, or `None` as `Option<MatchedPath>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedPath(Arc<str>);

impl MatchedPath {
    /// The pattern.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<S> FromRequestParts<S> for MatchedPath {
    type Rejection = MatchedPathRejection;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        match parts.route().pattern() {
            Some(p) => Ok(MatchedPath(p.clone())),
            None => Err(MatchedPathRejection::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "No matched path found",
            )),
        }
    }
}
