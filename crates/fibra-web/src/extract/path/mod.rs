//! [`Path`]: the route's path parameters, percent-decoded and deserialized with serde — one
//! value (`Path<u32>`), a tuple in pattern order, a struct or a map by name.
//!
//! ```
//! use fibra_web::extract::Path;
//! use fibra_web::routing::get;
//! use fibra_web::Router;
//!
//! #[derive(serde::Deserialize)]
//! struct Params {
//!     user: String,
//!     post: u64,
//! }
//!
//! let app: Router = Router::new()
//!     .route("/users/{id}", get(|Path(id): Path<u32>| format!("user {id}")))
//!     .route("/pairs/{a}/{b}", get(|Path((a, b)): Path<(String, i64)>| format!("{a} {b}")))
//!     .route("/users/{user}/posts/{post}", get(|Path(p): Path<Params>| format!("{} {}", p.user, p.post)));
//! ```

mod de;

use std::borrow::Cow;

use fibra_http::http::StatusCode;
use serde::de::DeserializeOwned;

use super::rejection::PathRejection;
use super::{FromRequestParts, Parts};
pub use de::PathError;

/// The path parameters as `T`: see the module docs. A parameter that does not parse answers
/// `400` naming it (`Invalid URL: Cannot parse `id` with value `abc` to a `u32``); a `T` that
/// does not fit the route (two values for one, a route without parameters) answers `500`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Path<T>(pub T);

impl<T> std::ops::Deref for Path<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<S, T: DeserializeOwned> FromRequestParts<S> for Path<T> {
    type Rejection = PathRejection;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        let route = parts.route();
        if route.pattern().is_none() {
            return Err(PathRejection::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "No paths parameters found for matched route",
            ));
        }
        let mut params = Vec::with_capacity(route.param_count());
        for (key, raw) in route.params() {
            match percent_encoding::percent_decode_str(raw).decode_utf8() {
                Ok(Cow::Borrowed(v)) => params.push((key, Cow::Borrowed(v))),
                Ok(Cow::Owned(v)) => params.push((key, Cow::Owned(v))),
                Err(_) => {
                    return Err(rejection(PathError::InvalidUtf8InPathParam {
                        key: key.to_owned(),
                    }))
                }
            }
        }
        T::deserialize(de::PathDeserializer::new(&params))
            .map(Path)
            .map_err(rejection)
    }
}

fn rejection(e: PathError) -> PathRejection {
    match e {
        PathError::WrongNumberOfParameters { .. } | PathError::UnsupportedType { .. } => {
            PathRejection::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
        _ => PathRejection::new(StatusCode::BAD_REQUEST, format!("Invalid URL: {e}")),
    }
}
