//! [`Query`]: the query string, deserialized with `serde_urlencoded` (as axum).

use fibra_http::http::StatusCode;
use serde::de::DeserializeOwned;

use super::rejection::QueryRejection;
use super::{FromRequestParts, Parts};

/// The query string as `T` (a struct, a map, a list of pairs). A missing query is an empty
/// one: a `T` with required fields then answers `400`, as does a malformed value
/// (`Failed to deserialize query string: …`). `Option<Query<T>>` takes both as `None`.
///
/// ```
/// use fibra_web::extract::Query;
/// use fibra_web::routing::get;
/// use fibra_web::Router;
///
/// #[derive(serde::Deserialize)]
/// struct Page { n: u32, size: Option<u32> }
///
/// let app: Router = Router::new().route(
///     "/list",
///     get(|Query(p): Query<Page>| format!("{} {}", p.n, p.size.unwrap_or(20))),
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Query<T>(pub T);

impl<T> std::ops::Deref for Query<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned> Query<T> {
    /// The query of `uri` as `T` (what the extractor does).
    pub fn try_from_uri(uri: &fibra_http::http::Uri) -> Result<Self, QueryRejection> {
        serde_urlencoded::from_str(uri.query().unwrap_or_default())
            .map(Query)
            .map_err(|e| {
                QueryRejection::new(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to deserialize query string: {e}"),
                )
            })
    }
}

impl<S, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = QueryRejection;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Self::try_from_uri(parts.uri())
    }
}
