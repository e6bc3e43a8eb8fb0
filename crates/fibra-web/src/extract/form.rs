//! [`Form`]: a urlencoded form, from the body (or from the query of a `GET`/`HEAD`), in and
//! out as in axum.

use fibra_http::http::header::CONTENT_TYPE;
use fibra_http::http::{HeaderValue, StatusCode};
use fibra_http::{Response, ResponseBody};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::body::read_body;
use super::rejection::FormRejection;
use super::{FromRequest, Parts};
use crate::response::IntoResponse;

/// A `application/x-www-form-urlencoded` form as `T`. For `GET` and `HEAD` it is read from
/// the query (`400` when it does not deserialize); otherwise from the body, which must say
/// that media type (`415`) and deserialize (`422`), within the route's body limit (`413`).
/// As a response, `T` urlencoded.
#[derive(Debug, Clone, Copy, Default)]
pub struct Form<T>(pub T);

impl<T> std::ops::Deref for Form<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

fn is_form(req: &Parts<'_>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|essence| {
            essence
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

impl<S, T: DeserializeOwned> FromRequest<S> for Form<T> {
    type Rejection = FormRejection;
    fn from_request(mut req: Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        if req.is_get_or_head() {
            let query = req.uri().query().unwrap_or_default();
            return serde_urlencoded::from_str(query).map(Form).map_err(|e| {
                FormRejection::new(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to deserialize form: {e}"),
                )
            });
        }
        if !is_form(&req) {
            return Err(FormRejection::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Form requests must have `Content-Type: application/x-www-form-urlencoded`",
            ));
        }
        let bytes = read_body(&mut req)?;
        serde_urlencoded::from_bytes(&bytes).map(Form).map_err(|e| {
            FormRejection::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("Failed to deserialize form body: {e}"),
            )
        })
    }
}

impl<T: Serialize> IntoResponse for Form<T> {
    fn into_response(self) -> Response {
        match serde_urlencoded::to_string(&self.0) {
            Ok(body) => Response::new(ResponseBody::from(body).with_content_type(
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            )),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        }
    }
}
