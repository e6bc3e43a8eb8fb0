//! [`Html`]: a body sent as `text/html; charset=utf-8`.

use fibra_http::http::HeaderValue;
use fibra_http::{Response, ResponseBody};

use super::IntoResponse;

/// An HTML body (`text/html; charset=utf-8`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Html<T>(pub T);

impl<T: Into<ResponseBody>> IntoResponse for Html<T> {
    fn into_response(self) -> Response {
        Response::new(
            self.0
                .into()
                .with_content_type(HeaderValue::from_static("text/html; charset=utf-8")),
        )
    }
}
