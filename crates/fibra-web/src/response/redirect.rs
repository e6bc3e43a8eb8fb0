//! [`Redirect`]: a response sending the client elsewhere.

use fibra_http::http::header::LOCATION;
use fibra_http::http::{HeaderValue, StatusCode};
use fibra_http::Response;

use super::IntoResponse;

/// A redirect: `to` (303 See Other: the client follows with a `GET`), `temporary` (307) and
/// `permanent` (308) keep the method and body. A `uri` that is not a valid header value
/// answers `500`.
#[derive(Debug, Clone)]
pub struct Redirect {
    status: StatusCode,
    location: String,
}

impl Redirect {
    /// `303 See Other` to `uri`.
    pub fn to(uri: &str) -> Self {
        Self::with(StatusCode::SEE_OTHER, uri)
    }
    /// `307 Temporary Redirect` to `uri`.
    pub fn temporary(uri: &str) -> Self {
        Self::with(StatusCode::TEMPORARY_REDIRECT, uri)
    }
    /// `308 Permanent Redirect` to `uri`.
    pub fn permanent(uri: &str) -> Self {
        Self::with(StatusCode::PERMANENT_REDIRECT, uri)
    }
    fn with(status: StatusCode, uri: &str) -> Self {
        Redirect {
            status,
            location: uri.to_owned(),
        }
    }
    /// The status it answers with.
    pub fn status_code(&self) -> StatusCode {
        self.status
    }
    /// Where it sends the client.
    pub fn location(&self) -> &str {
        &self.location
    }
}

impl IntoResponse for Redirect {
    fn into_response(self) -> Response {
        match HeaderValue::try_from(self.location) {
            Ok(location) => {
                let mut res = self.status.into_response();
                res.headers_mut().insert(LOCATION, location);
                res
            }
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        }
    }
}
