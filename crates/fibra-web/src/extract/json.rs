//! [`Json`]: a JSON body in (an extractor) and out (a response), one type for both as in axum.

use fibra_http::http::header::CONTENT_TYPE;
use fibra_http::http::{HeaderMap, HeaderValue, StatusCode};
use fibra_http::{Response, ResponseBody};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::body::read_body;
use super::rejection::JsonRejection;
use super::{FromRequest, Parts};
use crate::response::IntoResponse;

/// JSON: as an extractor (the last argument), the body deserialized into `T`; as a response,
/// `T` serialized with `Content-Type: application/json`.
///
/// The extractor wants `Content-Type: application/json` (or `application/*+json`): otherwise
/// `415`. A syntax error answers `400`, a value of the wrong shape `422` with serde's message,
/// a body over the route's limit `413` (see
/// [`DefaultBodyLimit`](crate::extract::DefaultBodyLimit)).
///
/// ```
/// use fibra_web::routing::post;
/// use fibra_web::{Json, Router};
///
/// #[derive(serde::Deserialize, serde::Serialize)]
/// struct Todo { title: String, done: bool }
///
/// let app: Router = Router::new().route("/todos", post(|Json(t): Json<Todo>| Json(t)));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T> std::ops::Deref for Json<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Whether the request says its body is JSON.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct.split(';').next().unwrap_or("").trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (sub.eq_ignore_ascii_case("json")
            || sub.len() > 5 && sub[sub.len() - 5..].eq_ignore_ascii_case("+json"))
}

impl<T: DeserializeOwned> Json<T> {
    /// `bytes` as `T`, with the extractor's rejections (400 for syntax, 422 for shape).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, JsonRejection> {
        serde_json::from_slice(bytes).map(Json).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Data => JsonRejection::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("Failed to deserialize the JSON body into the target type: {e}"),
                ),
                Category::Syntax | Category::Eof => JsonRejection::new(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to parse the request body as JSON: {e}"),
                ),
                Category::Io => JsonRejection::new(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to buffer the request body: {e}"),
                ),
            }
        })
    }
}

impl<S, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = JsonRejection;
    fn from_request(mut req: Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(JsonRejection::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Expected request with `Content-Type: application/json`",
            ));
        }
        let bytes = read_body(&mut req)?;
        Self::from_bytes(&bytes)
    }
}

/// `application/json`, the media type of JSON responses.
pub(crate) const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut buf = Vec::with_capacity(128);
        match serde_json::to_writer(&mut buf, &self.0) {
            Ok(()) => Response::new(ResponseBody::from(buf).with_content_type(APPLICATION_JSON)),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        }
    }
}
