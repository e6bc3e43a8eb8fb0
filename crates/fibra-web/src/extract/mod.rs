//! Extractors: the typed arguments of a handler, each built from the request
//! ([`FromRequestParts`] from the head, [`FromRequest`] from the whole request, body
//! included), as in axum 0.8.
//!
//! | extractor | reads | rejection |
//! |---|---|---|
//! | [`Path<T>`] | path parameters (one value, a tuple, a struct, a map) | 400 naming the parameter |
//! | [`Query<T>`] | the query string | 400 |
//! | [`Json<T>`](crate::Json) | a JSON body | 415, 400 (syntax), 422 (shape), 413 |
//! | [`Form<T>`](crate::Form) | a urlencoded body (the query for `GET`/`HEAD`) | 415, 400, 422, 413 |
//! | [`State<S>`] | the router's state | — |
//! | [`Extension<T>`](crate::Extension) | a request extension | 500 when missing |
//! | [`ConnectInfo<SocketAddr>`] | the peer's address | 500 when unknown |
//! | [`MatchedPath`] | the route's pattern | 500 in a fallback |
//! | `HeaderMap`, `Method`, `Uri`, `Version` | the head | — |
//! | `Bytes`, `String`, `Vec<u8>` | the body (see [`DefaultBodyLimit`]) | 413, 400 (UTF-8) |
//! | [`cookie::CookieJar`], signed and private jars | the `Cookie` fields | — |
//! | [`fibra_http::Request`] | everything (last argument only) | — |
//! | `Option<T>`, `Result<T, T::Rejection>` | any of the above, never rejecting | — |
//!
//! Only the last argument may read the body: the body extractors implement [`FromRequest`]
//! only, and a handler's other arguments must implement [`FromRequestParts`], so a handler
//! taking two bodies does not compile.
//!
//! An extractor of one's own implements one of the two traits:
//!
//! ```
//! use fibra_web::extract::{FromRequestParts, Parts};
//! use fibra_web::http::StatusCode;
//!
//! struct ApiKey(String);
//!
//! impl<S> FromRequestParts<S> for ApiKey {
//!     type Rejection = (StatusCode, &'static str);
//!     fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
//!         match parts.headers().get("x-api-key").and_then(|v| v.to_str().ok()) {
//!             Some(key) => Ok(ApiKey(key.to_owned())),
//!             None => Err((StatusCode::UNAUTHORIZED, "missing x-api-key")),
//!         }
//!     }
//! }
//! ```

pub(crate) mod body;
mod connect_info;
pub mod cookie;
mod extension;
mod form;
mod json;
mod matched_path;
mod parts;
pub mod path;
mod query;
pub mod rejection;
mod state;
pub mod ws;

pub use body::DefaultBodyLimit;
pub use connect_info::ConnectInfo;
pub use extension::Extension;
pub use form::Form;
pub use matched_path::MatchedPath;
pub use parts::Parts;
pub use path::Path;
pub use query::Query;
pub use state::{FromRef, State};

pub use json::Json;

use fibra_http::http::{HeaderMap, Method, Uri, Version};
use fibra_http::Request;

use crate::response::IntoResponse;

/// An extractor that reads only the request's head (and the router's match): any argument of
/// a handler may be one. See the module docs.
pub trait FromRequestParts<S>: Sized {
    /// What answers the request when extraction fails.
    type Rejection: IntoResponse;
    /// Builds the value from the head.
    fn from_request_parts(parts: &mut Parts<'_>, state: &S) -> Result<Self, Self::Rejection>;
}

/// An extractor that may take the whole request, body included: only a handler's last
/// argument may be one. Every [`FromRequestParts`] is one too (through the marker `M`, as in
/// axum: [`ViaParts`] for those, [`ViaRequest`], the default, for the others).
pub trait FromRequest<S, M = ViaRequest>: Sized {
    /// What answers the request when extraction fails.
    type Rejection: IntoResponse;
    /// Builds the value from the request.
    fn from_request(req: Parts<'_>, state: &S) -> Result<Self, Self::Rejection>;
}

/// The marker of [`FromRequest`] implementations that take the body.
#[derive(Debug, Clone, Copy)]
pub enum ViaRequest {}

/// The marker of the [`FromRequest`] implementation every [`FromRequestParts`] has.
#[derive(Debug, Clone, Copy)]
pub enum ViaParts {}

impl<S, T: FromRequestParts<S>> FromRequest<S, ViaParts> for T {
    type Rejection = T::Rejection;
    #[inline]
    fn from_request(mut req: Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        T::from_request_parts(&mut req, state)
    }
}

impl<S> FromRequest<S> for Request {
    type Rejection = std::convert::Infallible;
    #[inline]
    fn from_request(req: Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(req.into_request())
    }
}

impl<S> FromRequestParts<S> for HeaderMap {
    type Rejection = std::convert::Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.headers().clone())
    }
}

impl<S> FromRequestParts<S> for Method {
    type Rejection = std::convert::Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.method().clone())
    }
}

impl<S> FromRequestParts<S> for Uri {
    type Rejection = std::convert::Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.uri().clone())
    }
}

impl<S> FromRequestParts<S> for Version {
    type Rejection = std::convert::Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.version())
    }
}

impl<S, T: FromRequestParts<S>> FromRequestParts<S> for Option<T> {
    type Rejection = std::convert::Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        Ok(T::from_request_parts(parts, state).ok())
    }
}

impl<S, T: FromRequestParts<S>> FromRequestParts<S>
    for Result<T, <T as FromRequestParts<S>>::Rejection>
{
    type Rejection = std::convert::Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        Ok(T::from_request_parts(parts, state))
    }
}

impl<S, T: FromRequest<S, ViaRequest>> FromRequest<S, ViaRequest> for Option<T> {
    type Rejection = std::convert::Infallible;
    fn from_request(req: Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        Ok(T::from_request(req, state).ok())
    }
}

impl<S, T: FromRequest<S, ViaRequest>> FromRequest<S, ViaRequest>
    for Result<T, <T as FromRequest<S, ViaRequest>>::Rejection>
{
    type Rejection = std::convert::Infallible;
    fn from_request(req: Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        Ok(T::from_request(req, state))
    }
}
