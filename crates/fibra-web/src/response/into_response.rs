//! [`IntoResponse`] and [`IntoResponseParts`], with their implementations for the standard
//! types, statuses, header fields and tuples.

use std::borrow::Cow;
use std::convert::Infallible;

use bytes::Bytes;
use fibra_http::http::header::{HeaderName, HeaderValue};
use fibra_http::http::{HeaderMap, StatusCode};
use fibra_http::{Response, ResponseBody};

/// What a handler returns: anything that becomes a [`Response`].
pub trait IntoResponse {
    /// The response.
    fn into_response(self) -> Response;
}

/// What can go before the last element of a response tuple: header fields, extensions. A
/// part that cannot be applied (a header name that is not one) answers with its error
/// instead (a `500`).
pub trait IntoResponseParts {
    /// What answers instead when the part cannot be applied.
    type Error: IntoResponse;
    /// Adds the part to `res`.
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error>;
}

/// A header field of a response tuple that is not one (a bad name or value): answers `500`
/// with the reason.
#[derive(Debug, Clone)]
pub struct HeaderPartError(String);

impl std::fmt::Display for HeaderPartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HeaderPartError {}

impl IntoResponse for HeaderPartError {
    fn into_response(self) -> Response {
        (StatusCode::INTERNAL_SERVER_ERROR, self.0).into_response()
    }
}

/// `text/plain; charset=utf-8`, the media type of text responses.
pub(crate) const TEXT_PLAIN_UTF8: HeaderValue =
    HeaderValue::from_static("text/plain; charset=utf-8");
const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");

impl IntoResponse for Response {
    #[inline]
    fn into_response(self) -> Response {
        self
    }
}

impl IntoResponse for ResponseBody {
    fn into_response(self) -> Response {
        Response::new(self)
    }
}

impl IntoResponse for () {
    fn into_response(self) -> Response {
        Response::default()
    }
}

impl IntoResponse for Infallible {
    fn into_response(self) -> Response {
        match self {}
    }
}

impl IntoResponse for &'static str {
    #[inline]
    fn into_response(self) -> Response {
        Response::new(ResponseBody::from(self).with_content_type(TEXT_PLAIN_UTF8))
    }
}

impl IntoResponse for String {
    #[inline]
    fn into_response(self) -> Response {
        Response::new(ResponseBody::from(self).with_content_type(TEXT_PLAIN_UTF8))
    }
}

impl IntoResponse for Cow<'static, str> {
    fn into_response(self) -> Response {
        match self {
            Cow::Borrowed(s) => s.into_response(),
            Cow::Owned(s) => s.into_response(),
        }
    }
}

impl IntoResponse for &'static [u8] {
    fn into_response(self) -> Response {
        Response::new(ResponseBody::from(self).with_content_type(OCTET_STREAM))
    }
}

impl IntoResponse for Vec<u8> {
    fn into_response(self) -> Response {
        Response::new(ResponseBody::from(self).with_content_type(OCTET_STREAM))
    }
}

impl IntoResponse for Bytes {
    fn into_response(self) -> Response {
        Response::new(ResponseBody::from(self).with_content_type(OCTET_STREAM))
    }
}

impl IntoResponse for StatusCode {
    fn into_response(self) -> Response {
        let mut res = Response::default();
        *res.status_mut() = self;
        res
    }
}

impl IntoResponse for HeaderMap {
    fn into_response(self) -> Response {
        let mut res = Response::default();
        *res.headers_mut() = self;
        res
    }
}

impl<T: IntoResponse, E: IntoResponse> IntoResponse for Result<T, E> {
    #[inline]
    fn into_response(self) -> Response {
        match self {
            Ok(v) => v.into_response(),
            Err(e) => e.into_response(),
        }
    }
}

impl<T: IntoResponse> IntoResponse for (StatusCode, T) {
    fn into_response(self) -> Response {
        let mut res = self.1.into_response();
        *res.status_mut() = self.0;
        res
    }
}

impl IntoResponseParts for HeaderMap {
    type Error = Infallible;
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error> {
        res.headers_mut().extend(self);
        Ok(())
    }
}

impl<K, V, const N: usize> IntoResponseParts for [(K, V); N]
where
    K: TryInto<HeaderName>,
    K::Error: std::fmt::Display,
    V: TryInto<HeaderValue>,
    V::Error: std::fmt::Display,
{
    type Error = HeaderPartError;
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error> {
        for (k, v) in self {
            let k = k.try_into().map_err(|e| header_error(&e))?;
            let v = v.try_into().map_err(|e| header_error(&e))?;
            res.headers_mut().insert(k, v);
        }
        Ok(())
    }
}

fn header_error(e: &dyn std::fmt::Display) -> HeaderPartError {
    HeaderPartError(e.to_string())
}

macro_rules! tuples {
    ($($ty:ident),*) => {
        impl<R: IntoResponse, $($ty: IntoResponseParts,)*> IntoResponse for ($($ty,)* R,) {
            #[allow(non_snake_case)]
            fn into_response(self) -> Response {
                let ($($ty,)* r,) = self;
                let mut res = r.into_response();
                $(
                    if let Err(e) = $ty.into_response_parts(&mut res) {
                        return e.into_response();
                    }
                )*
                res
            }
        }

        impl<R: IntoResponse, $($ty: IntoResponseParts,)*> IntoResponse
            for (StatusCode, $($ty,)* R,)
        {
            #[allow(non_snake_case)]
            fn into_response(self) -> Response {
                let (status, $($ty,)* r,) = self;
                let mut res = ($($ty,)* r,).into_response();
                *res.status_mut() = status;
                res
            }
        }
    };
}

tuples!(T1);
tuples!(T1, T2);
tuples!(T1, T2, T3);
tuples!(T1, T2, T3, T4);
tuples!(T1, T2, T3, T4, T5);
tuples!(T1, T2, T3, T4, T5, T6);
tuples!(T1, T2, T3, T4, T5, T6, T7);
tuples!(T1, T2, T3, T4, T5, T6, T7, T8);
