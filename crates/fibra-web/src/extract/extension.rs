//! [`Extension`]: a value from the request's extensions (put there by a middleware or a
//! layer), and, as a layer, one that puts a value there.

use fibra_http::http::StatusCode;
use fibra_http::Response;

use super::rejection::ExtensionRejection;
use super::{FromRequestParts, Parts};
use crate::endpoint::Endpoint;
use crate::layer::Layer;
use crate::response::{IntoResponse, IntoResponseParts};

/// As an extractor, a clone of the request's extension of type `T` (`500` when there is
/// none). As a layer (`Router::layer(Extension(v))`), puts a clone of `v` into every
/// request's extensions. As a response part, puts it into the response's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extension<T>(pub T);

impl<T> std::ops::Deref for Extension<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<S, T: Clone + Send + Sync + 'static> FromRequestParts<S> for Extension<T> {
    type Rejection = ExtensionRejection;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        match parts.extensions().get::<T>() {
            Some(v) => Ok(Extension(v.clone())),
            None => Err(ExtensionRejection::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "Missing request extension: Extension of type `{}` was not found. \
                     Perhaps you forgot to add it? See `fibra_web::Extension`.",
                    std::any::type_name::<T>()
                ),
            )),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Layer for Extension<T> {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let value = self.0.clone();
        Endpoint::new(move |mut req, route, state| {
            req.extensions_mut().insert(value.clone());
            inner.call(req, route, state)
        })
    }
}

impl<T: Clone + Send + Sync + 'static> IntoResponseParts for Extension<T> {
    type Error = std::convert::Infallible;
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error> {
        res.extensions_mut().insert(self.0);
        Ok(())
    }
}

impl<T: Clone + Send + Sync + 'static> IntoResponse for Extension<T> {
    fn into_response(self) -> Response {
        let mut res = Response::default();
        res.extensions_mut().insert(self.0);
        res
    }
}
